"""Install links: an operator binds an installation to a tenant before anyone clicks.

``clarify-bot slack install-link --tenant acme`` prints ``<public_url>/slack/install?link=…``.
The link's value is ``payload.signature``: the payload (base64url JSON) names the tenant, when
the link expires and a random link id; the signature is HMAC-SHA256 over the payload with
``CLARIFY_BOT_INSTALL_LINK_KEY``. Nothing about a link is stored until it is used: the install
path checks the signature (compared in constant time) and the expiry on the bot's clock, and
only then issues an OAuth state bound to that tenant and link. A link installs one workspace
(or one org): used again for the same one it reinstalls it (new scopes, a new token); used for
another, it is refused (``adapters.slack.oauth``).

``InstallRefused`` is every refusal of an install, from the link's check here to the
installation's binding (``adapters.slack.installations``) and Bolt's redirect: one code for the
audit and the person's page.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlencode

from slack_bolt.error import BoltError

from adapters.errors import AdapterError
from bot.settings.fields import _TENANT as TENANT_PATTERN

LINK_PARAM = "link"
_TENANT = re.compile(TENANT_PATTERN)


@dataclass(frozen=True, slots=True)
class Link:
    tenant: str
    link_id: str
    expires_at: datetime


class InstallRefused(AdapterError, BoltError):
    """An install the bot will not keep; ``reason`` is the audit's code: a link ``missing``,
    ``malformed``, with a ``bad_signature`` or ``expired``; an ``invalid_state``; one of the
    binding's (``adapters.slack.binding.REASONS``: ``workspace_of_another_tenant``,
    ``org_of_another_tenant``, ``org_has_workspaces_of_another_tenant``,
    ``link_already_used``). A ``BoltError`` too, so that
    Bolt's OAuth flow hands one raised while storing an installation to its failure
    callback."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class LinkSigner:
    key: bytes

    def _sign(self, payload: str) -> str:
        return _b64(hmac.new(self.key, payload.encode(), hashlib.sha256).digest())

    def issue(self, tenant: str, *, now: datetime, valid: timedelta) -> tuple[str, Link]:
        if not _TENANT.fullmatch(tenant):
            raise ValueError("not a tenant id (1-200 of A-Z a-z 0-9 . _ : @ -)")
        link = Link(tenant=tenant, link_id=secrets.token_hex(12), expires_at=now + valid)
        payload = _b64(json.dumps({"t": tenant, "n": link.link_id,
                                   "x": int(link.expires_at.timestamp())},
                                  separators=(",", ":")).encode())
        return f"{payload}.{self._sign(payload)}", link

    def verify(self, value: str | None, *, now: datetime) -> Link:
        if not value:
            raise InstallRefused("missing")
        payload, dot, signature = value.partition(".")
        if not dot or len(value) > 2048:
            raise InstallRefused("malformed")
        if not hmac.compare_digest(self._sign(payload), signature):
            raise InstallRefused("bad_signature")
        try:
            fields = json.loads(_unb64(payload))
            tenant, link_id, expires = str(fields["t"]), str(fields["n"]), int(fields["x"])
        except (ValueError, KeyError, TypeError):
            raise InstallRefused("malformed") from None
        expires_at = datetime.fromtimestamp(expires, now.tzinfo)
        if now >= expires_at:
            raise InstallRefused("expired")
        return Link(tenant=tenant, link_id=link_id, expires_at=expires_at)


def install_url(install_url: str, value: str) -> str:
    return f"{install_url}?{urlencode({LINK_PARAM: value})}"
