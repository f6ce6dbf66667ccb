"""Pseudonyms: a keyed hash (HMAC-SHA256) of an identifier, stable for one key.

What the bot writes where it cannot erase it later (log lines, metric labels, a card's opaque
references on the platform's servers, the core's delivery ids) names a person or a chat user only
by a pseudonym: ``u_`` and 16 hex digits of HMAC-SHA256 under the deployment's pseudonym key
(``CLARIFY_BOT_PSEUDONYM_KEY``, else derived from the action signing key; docs/operations.md,
"Erasure"). The same identifier gives the same pseudonym in every process and after a restart,
so lines about one person can still be followed; without the key nobody can tell whose it is
(a plain hash of a guessable id could be reversed by trying ids), and an erasure does not have
to rewrite logs. Changing the key changes every pseudonym from then on.

The key is the process's: ``configure`` sets it once at assembly (``clarify_bot``); until then
a fixed development key is used (tests, the demo).
"""

from __future__ import annotations

import hashlib
import hmac

_DEV_KEY = b"clarify-bot development pseudonym key (not for production)"
_DERIVE = b"clarify-bot pseudonyms v1"
_key: bytes = _DEV_KEY
configured = False

# log fields whose value is a chat identifier or a person id: replaced by their pseudonym in
# every log line (bot.logs)
LOG_FIELDS = frozenset({
    "chat_user", "user", "user_id", "slack_user", "slack_user_id", "aad_object_id",
    "aad_id", "teams_user", "teams_user_id", "person", "person_id", "responder", "steward",
    "steward_id", "recipient", "from_id", "display_name",
})


def derive(secret: bytes) -> bytes:
    """A pseudonym key derived from another secret (the action signing key), so that a
    deployment that sets no pseudonym key of its own still has a private, stable one."""
    return hmac.new(secret, _DERIVE, hashlib.sha256).digest()


def configure_from(secrets: object) -> bool:
    """The process's key from the settings' secrets: ``pseudonym_key``, else one derived from
    ``action_signing_key``; True when either was set (otherwise the development key stays)."""
    value = getattr(secrets, "value", None)
    if value is None:
        return False
    own, action = value("pseudonym_key"), value("action_signing_key")
    if own:
        configure(own.encode())
    elif action:
        configure(derive(action.encode()))
    else:
        return False
    return True


def configure(key: bytes) -> None:
    global _key, configured
    if len(key) < 16:
        raise ValueError("the pseudonym key must have at least 16 bytes")
    _key = key
    configured = True


def digest(value: str, *, purpose: str = "id") -> str:
    """The full keyed hash of ``value`` for one ``purpose`` (hex)."""
    return hmac.new(_key, f"{purpose}\x00{value}".encode(), hashlib.sha256).hexdigest()


def pseudonym(value: object) -> str:
    """``u_`` and 16 hex digits: the identifier's pseudonym in logs and labels."""
    return "u_" + digest(str(value))[:16]


def is_pseudonym(value: object) -> bool:
    text = str(value)
    return len(text) == 18 and text.startswith("u_") and all(
        c in "0123456789abcdef" for c in text[2:])
