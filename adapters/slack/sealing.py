"""Installations' tokens sealed at rest: AES-256-GCM under ``CLARIFY_BOT_SLACK_TOKEN_KEY``.

slack_sdk's SQLAlchemy store writes tokens as given; the bot gives it sealed ones
(``adapters.slack.installations.SealedInstallationStore``) and opens them as it reads. A sealed
value is ``clarify-sealed:v1:<key id>:<base64url(nonce ‖ ciphertext ‖ tag)>``: the key id (the
first 8 hex digits of a hash of the key, never the key) says which of the configured keys opens
it, so keys rotate without downtime: several keys are configured (the newest first), reads accept
any of them, writes use the first, and ``clarify-bot slack rotate-token-key`` re-seals every
row with the first. The column a value sits in is its associated data: a sealed refresh token
copied into the bot-token column does not open.

A value without the prefix is a token from before sealing (schema version 2 and earlier): it is
read as it is, so a database being migrated keeps serving, and ``needs_sealing`` tells
``clarify-bot db upgrade`` and ``rotate-token-key`` to seal it. No error here quotes a value.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from adapters.errors import AdapterError
from bot.settings.secrets import SECRET_ENV, token_keys

PREFIX = "clarify-sealed:v1:"
KEY_SETTING = SECRET_ENV["slack_token_key"]
NONCE_BYTES = 12
# the token columns of slack_sdk's tables, each sealed with its name as associated data
TOKEN_COLUMNS: dict[str, tuple[str, ...]] = {
    "slack_installations": ("bot_token", "bot_refresh_token", "user_token",
                            "user_refresh_token"),
    "slack_bots": ("bot_token", "bot_refresh_token"),
}


class TokenKeyError(AdapterError):
    """A sealed token none of the configured keys opens: named by key id, never by value."""


def key_id(key: bytes) -> str:
    """A key's public name in sealed values: 8 hex digits of a hash, not the key."""
    return hashlib.sha256(b"clarify-slack-token-key|" + key).hexdigest()[:8]


def is_sealed(value: str | None) -> bool:
    return value is not None and value.startswith(PREFIX)


class Sealer:
    """Seals with the first key, opens with any (by the key id in the sealed value)."""

    def __init__(self, keys: Sequence[bytes]) -> None:
        if not keys:
            raise ValueError("a sealer needs a key")
        self._keys = {key_id(k): AESGCM(k) for k in keys}
        self.current = key_id(keys[0])
        self.ids = tuple(self._keys)

    @classmethod
    def from_setting(cls, value: str) -> Sealer:
        """From ``CLARIFY_BOT_SLACK_TOKEN_KEY``'s value (``bot.settings.secrets.token_keys``)."""
        return cls(token_keys(value))

    def seal(self, value: str | None, *, column: str) -> str | None:
        """``value`` sealed with the first key (None stays None; a sealed value is opened and
        sealed again, so nothing is ever sealed twice)."""
        if value is None:
            return None
        plain = self.open(value, column=column)
        assert plain is not None
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._keys[self.current].encrypt(nonce, plain.encode(), column.encode())
        body = base64.urlsafe_b64encode(nonce + sealed).decode().rstrip("=")
        return f"{PREFIX}{self.current}:{body}"

    def open(self, value: str | None, *, column: str) -> str | None:
        """The token a sealed value holds; a value from before sealing as it is."""
        if value is None or not is_sealed(value):
            return value
        kid, _, body = value[len(PREFIX):].partition(":")
        aead = self._keys.get(kid)
        if aead is None:
            raise TokenKeyError(
                f"a Slack token in the installation database is sealed with key id {kid}, which "
                f"is not among {KEY_SETTING}'s keys ({', '.join(self.ids)}): add that key back "
                "(after the new one) until `clarify-bot slack rotate-token-key` has re-sealed "
                "every token")
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
            return aead.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], column.encode()).decode()
        except (InvalidTag, ValueError):
            raise TokenKeyError(
                f"a Slack token in the installation database (column {column}) does not open "
                f"with key id {kid} of {KEY_SETTING}: the key is not the one it was sealed "
                "with, or the row was altered") from None

    def needs_sealing(self, value: str | None) -> bool:
        """True for a token in plain text or sealed with another key than the first."""
        if value is None:
            return False
        return not value.startswith(f"{PREFIX}{self.current}:")
