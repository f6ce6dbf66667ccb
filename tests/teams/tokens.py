"""A local signing key for Bot Framework tokens in tests (one module, imported by name, so the
key that signs and the key the JWKS serves are the same object)."""

from __future__ import annotations

import json
import time
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

APP_ID = "11111111-2222-4333-8444-555555555555"
SERVICE_URL = "https://smba.trafficmanager.net/amer/"
BOT_FRAMEWORK = "https://api.botframework.com"
KID = "local-key-1"

KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def jwks() -> dict[str, Any]:
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(KEY.public_key()))
    return {"keys": [{**public, "kid": KID, "use": "sig", "alg": "RS256"}]}


def claims(**changes: Any) -> dict[str, Any]:
    """A Bot Framework channel token's claims for this bot; ``None`` removes a claim."""
    now = int(time.time())
    body = {"iss": BOT_FRAMEWORK, "aud": APP_ID, "exp": now + 600, "nbf": now - 60,
            "serviceurl": SERVICE_URL, **changes}
    return {k: v for k, v in body.items() if v is not None}


def sign(body: dict[str, Any], *, kid: str | None = KID, key: Any = KEY) -> str:
    headers = {"kid": kid} if kid is not None else {}
    return jwt.encode(body, key, algorithm="RS256", headers=headers)


