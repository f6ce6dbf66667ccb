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
SKYPE_KID = "local-key-skype"  # endorsed for another channel only
BARE_KID = "local-key-bare"  # published without endorsements

KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
SKYPE_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
BARE_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _jwk(key: Any, kid: str, endorsements: list[str] | None) -> dict[str, Any]:
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    entry = {**public, "kid": kid, "use": "sig", "alg": "RS256"}
    return entry if endorsements is None else {**entry, "endorsements": endorsements}


def jwks() -> dict[str, Any]:
    """The key set as Bot Framework publishes it: each key with the channels it is endorsed
    for (``endorsements``); one key endorsed for another channel, one without endorsements."""
    return {"keys": [_jwk(KEY, KID, ["msteams", "webchat"]),
                     _jwk(SKYPE_KEY, SKYPE_KID, ["skype"]),
                     _jwk(BARE_KEY, BARE_KID, None)]}


def claims(**changes: Any) -> dict[str, Any]:
    """A Bot Framework channel token's claims for this bot; ``None`` removes a claim."""
    now = int(time.time())
    body = {"iss": BOT_FRAMEWORK, "aud": APP_ID, "exp": now + 600, "nbf": now - 60,
            "serviceurl": SERVICE_URL, **changes}
    return {k: v for k, v in body.items() if v is not None}


def sign(body: dict[str, Any], *, kid: str | None = KID, key: Any = KEY) -> str:
    headers = {"kid": kid} if kid is not None else {}
    return jwt.encode(body, key, algorithm="RS256", headers=headers)


