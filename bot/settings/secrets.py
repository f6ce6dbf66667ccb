"""The secrets model: tokens and keys read from their own environment variables (names in
``SECRET_ENV``), from a file each names (``<NAME>_FILE``) or from a secrets folder (a file named
like the variable in ``CLARIFY_BOT_SECRETS_DIR``), held as ``SecretStr`` so they never appear in
repr or errors.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, PrivateAttr, SecretStr

from bot.settings.errors import Problem, SettingsError
from bot.settings.fields import _allowed, _Table

SECRET_ENV: dict[str, str] = {
    "core_token": "CLARIFY_BOT_CORE_TOKEN",
    "slack_bot_token": "SLACK_BOT_TOKEN",
    "slack_signing_secret": "SLACK_SIGNING_SECRET",
    "slack_app_token": "SLACK_APP_TOKEN",
    "teams_app_password": "TEAMS_APP_PASSWORD",
    "redis_password": "REDIS_PASSWORD",
    "redis_sentinel_password": "REDIS_SENTINEL_PASSWORD",  # the sentinels' own requirepass
    "action_signing_key": "CLARIFY_BOT_ACTION_SIGNING_KEY",
    # the key of the pseudonyms in logs, key names and ids the core keeps (bot.pseudonym);
    # derived from the action signing key when unset
    "pseudonym_key": "CLARIFY_BOT_PSEUDONYM_KEY",
    "api_key": "CLARIFY_BOT_API_KEY",  # the operator's key for `clarify-bot clarify`, never serve
    # Slack as a distributed app ([slack.oauth]): the app's client secret, the key that signs
    # install links, and the installation store's database (its URL carries the password)
    "slack_client_secret": "SLACK_CLIENT_SECRET",
    "install_link_key": "CLARIFY_BOT_INSTALL_LINK_KEY",
    "database_url": "CLARIFY_BOT_DATABASE_URL",
    # the keys that seal installations' tokens in that database (AES-256-GCM): one or more
    # base64 keys of 32 bytes, comma-separated, the newest first (adapters.slack.sealing)
    "slack_token_key": "CLARIFY_BOT_SLACK_TOKEN_KEY",
}

_UNSET = ("not set (set the variable, <NAME>_FILE with a file's path, or a file of that name in "
          "CLARIFY_BOT_SECRETS_DIR)")


def _prefixed(prefix: str) -> Any:
    def check(value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().startswith(prefix):
            raise ValueError(prefix)
        return value

    return AfterValidator(check)


def _long(value: SecretStr | None) -> SecretStr | None:
    if value is not None and len(value.get_secret_value()) < 32:
        raise ValueError("short")
    return value


def _postgres(value: SecretStr | None) -> SecretStr | None:
    if value is not None:
        parts = urlsplit(value.get_secret_value())
        if parts.scheme not in ("postgresql", "postgres", "postgresql+asyncpg") \
                or not parts.hostname or not parts.path.strip("/"):
            raise ValueError("not postgresql")
    return value


TOKEN_KEY_BYTES = 32
_KEY_SEPARATOR = re.compile(r"[,\s]+")


def token_keys(value: str) -> list[bytes]:
    """The token keys ``CLARIFY_BOT_SLACK_TOKEN_KEY`` holds, newest first: base64 keys of 32
    bytes (``openssl rand -base64 32``), separated by commas or white space. ValueError, never
    quoting a key, when one is not such a key or a key is given twice."""
    keys: list[bytes] = []
    for position, text in enumerate(p for p in _KEY_SEPARATOR.split(value) if p):
        try:
            key = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"key {position + 1} is not base64") from None
        if len(key) != TOKEN_KEY_BYTES:
            raise ValueError(f"key {position + 1} is {len(key)} bytes, not {TOKEN_KEY_BYTES}")
        if key in keys:
            raise ValueError(f"key {position + 1} is given twice")
        keys.append(key)
    if not keys:
        raise ValueError("no key")
    return keys


def _token_keys(value: SecretStr | None) -> SecretStr | None:
    if value is not None:
        token_keys(value.get_secret_value())
    return value


class Secrets(_Table):
    """Read from the environment, files or a secrets folder (``bot.settings.loader``); an empty
    variable means unset. ``origin`` says where each one came from, never what it is."""

    core_token: SecretStr | None = None
    slack_bot_token: Annotated[SecretStr | None, _prefixed("xoxb-")] = _allowed(
        None, "a bot token starting with xoxb-")
    slack_signing_secret: SecretStr | None = None
    slack_app_token: Annotated[SecretStr | None, _prefixed("xapp-")] = _allowed(
        None, "an app-level token starting with xapp-")
    teams_app_password: SecretStr | None = None
    redis_password: SecretStr | None = None
    redis_sentinel_password: SecretStr | None = None
    action_signing_key: Annotated[SecretStr | None, AfterValidator(_long)] = _allowed(
        None, "at least 32 characters")
    api_key: SecretStr | None = None
    pseudonym_key: Annotated[SecretStr | None, AfterValidator(_long)] = _allowed(
        None, "at least 32 characters")
    slack_client_secret: SecretStr | None = None
    install_link_key: Annotated[SecretStr | None, AfterValidator(_long)] = _allowed(
        None, "at least 32 characters")
    database_url: Annotated[SecretStr | None, AfterValidator(_postgres)] = _allowed(
        None, "a postgresql:// URL (postgresql://user:password@host:5432/database)")
    slack_token_key: Annotated[SecretStr | None, AfterValidator(_token_keys)] = _allowed(
        None, "one or more base64 keys of 32 bytes (`openssl rand -base64 32`), newest first, "
              "separated by commas")
    _origins: dict[str, str] = PrivateAttr(default_factory=dict)

    def require(self, name: str) -> str:
        """The secret's value, or a SettingsError naming its environment variable."""
        value = self.value(name)
        if value is None:
            raise SettingsError([Problem(SECRET_ENV[name], None, _UNSET)])
        return value

    def origin(self, name: str) -> str | None:
        """Where the secret was read from: its variable, ``<NAME>_FILE`` or the secrets folder's
        file (a name or a path, never the value); None when it is unset."""
        return self._origins.get(name) if getattr(self, name) is not None else None

    def value(self, name: str) -> str | None:
        """The secret's value, or None when it is unset."""
        value: SecretStr | None = getattr(self, name)
        return None if value is None else value.get_secret_value()

