"""Bot Framework tokens on ``/api/messages``: the Agents SDK's validator with what it leaves open
closed (docs/teams.md, "Tokens").

The SDK's ``JwtTokenValidator`` checks the signature (keys picked by the token's issuer), the
audience and the expiry. Here, around it: a token without ``kid``, not RS256, or without ``exp``
is refused before it is asked; issuer checking is switched on with the issuers the configured
tenants imply (Bot Framework's, each tenant's Entra v1 and v2, and Microsoft's own first-party
tenants the SDK always trusts); an Entra token of a served tenant acts only in that tenant; a
Bot Framework token's signing key must be endorsed for the activity's channel (the key set's
``endorsements``, which the SDK never reads); the ``serviceurl`` claim must name the activity's
serviceUrl; and whatever the SDK raises on a bad token is a 401, never a 500. Where the keys
come from is injectable (``KeyDirectory``) so tests sign with local keys served on 127.0.0.1;
validation itself is never switched off.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jwt
import structlog
from jwt import PyJWK
from microsoft_agents.hosting.core import AgentAuthConfiguration, AuthTypes, ClaimsIdentity
from microsoft_agents.hosting.core.authorization._entra_issuers import (
    WELL_KNOWN_PUBLIC_TENANT_IDS,
    entra_issuer_info,
)
from microsoft_agents.hosting.core.authorization.jwt import JwtTokenValidator
from microsoft_agents.hosting.core.authorization.jwt.jwt_token_validator import (
    _JwkClientManager,
)
from yarl import URL

from adapters.errors import AdapterError
from bot.settings import TeamsSettings

log = structlog.get_logger("clarify.teams")
BOT_FRAMEWORK_ISSUER = "https://api.botframework.com"
ENTRA_V1 = "https://sts.windows.net/{}/"
ENTRA_V2 = "https://login.microsoftonline.com/{}/v2.0"
# the token multi-tenant apps are given (AAD v1 "botframework.com" tenant)
MULTI_TENANT_AUTHORITY_TENANT = "botframework.com"


class Unauthorized(AdapterError):
    """A request whose token is missing or not one the bot accepts; ``reason`` is a word."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def connection(settings: TeamsSettings, secret: str | None = None) -> AgentAuthConfiguration:
    """The SDK's connection for the bot's app: how it gets tokens (msal, with ``secret``, the
    app's client secret TEAMS_APP_PASSWORD, where its type has one) and which inbound tokens
    it accepts (issuer validation on)."""
    if settings.app_id is None:  # anonymous: a local run, nothing to get or check
        return AgentAuthConfiguration(anonymous_allowed=True)
    auth_type = {"single-tenant": AuthTypes.client_secret,
                 "multi-tenant": AuthTypes.client_secret,
                 "managed-identity": AuthTypes.user_managed_identity}[settings.app_type]
    tenant = MULTI_TENANT_AUTHORITY_TENANT if settings.app_type == "multi-tenant" \
        else settings.app_tenant_id
    return AgentAuthConfiguration(
        auth_type, client_id=settings.app_id, tenant_id=tenant,
        client_secret=secret if auth_type == AuthTypes.client_secret else None,
        connection_name="SERVICE_CONNECTION", issuers=issuers(settings),
        validate_issuer=True, anonymous_allowed=False)


def issuers(settings: TeamsSettings) -> list[str]:
    """Bot Framework's issuer and the Entra v1 and v2 issuers of each served tenant (and of the
    app's own tenant, where a single-tenant app's tokens come from)."""
    tenants = [t.aad_tenant_id.lower() for t in settings.tenants]
    if settings.app_tenant_id and settings.app_tenant_id.lower() not in tenants:
        tenants.append(settings.app_tenant_id.lower())
    return [BOT_FRAMEWORK_ISSUER, *(form.format(t) for t in tenants
                                    for form in (ENTRA_V1, ENTRA_V2))]


class KeyDirectory(_JwkClientManager):
    """Where signing keys are fetched: the SDK's Microsoft endpoints, or (``redirect``) other
    ones that publish keys the same way (tests: a JWKS on 127.0.0.1)."""

    def __init__(self, redirect: Callable[[str], str] | None = None) -> None:
        super().__init__()
        self._redirect = redirect or (lambda uri: uri)

    def _get_jwk_client(self, jwks_uri: str) -> Any:
        return super()._get_jwk_client(self._redirect(jwks_uri))


@dataclass
class _Watched:
    """One validation's key look-up: the SDK's, with the key it picked kept (its JWKS entry
    carries the ``endorsements`` the SDK never reads)."""

    keys: KeyDirectory
    key: PyJWK | None = None

    async def get_signing_key(self, jwks_uri: str, header: dict[str, Any]) -> PyJWK:
        self.key = await self.keys.get_signing_key(jwks_uri, header)
        return self.key


@dataclass(frozen=True)
class Verified:
    """A token that passed: its claims, and the channels its signing key is endorsed for (None
    when the key set gave the key no ``endorsements``)."""

    identity: ClaimsIdentity
    endorsements: frozenset[str] | None = None

    @property
    def claims(self) -> dict[str, Any]:
        return self.identity.claims


def _endorsements(key: PyJWK | None) -> frozenset[str] | None:
    found = getattr(key, "_jwk_data", {}).get("endorsements") if key is not None else None
    if not isinstance(found, list):
        return None
    return frozenset(e for e in found if isinstance(e, str))


# How long a token verified whole is taken again without its signature checked anew (at most
# until its expiry, with the validator's leeway): the Bot Connector sends one token for about
# an hour, so a burst of invokes costs one verification a minute, not one each
VERIFIED_SECONDS = 60.0
VERIFIED_KEPT = 256  # tokens remembered at most (the oldest forgotten first)
EXPIRY_LEEWAY_SECONDS = 300.0  # the SDK validator's leeway on ``exp``


@dataclass
class TokenGate:
    """Checks a request's bearer token once; the claims, or ``Unauthorized``. A token that
    passed every check is remembered, by its whole text, for ``VERIFIED_SECONDS`` (never past
    its ``exp`` and the leeway): the same token again is the same verified claims. Only a token
    that passed is remembered; any other text, a byte changed, is verified from the start."""

    settings: TeamsSettings
    config: AgentAuthConfiguration
    keys: KeyDirectory
    now: Callable[[], float] = time.time  # the validator's own clock (PyJWT reads time.time)
    _verified: dict[str, tuple[float, Verified]] = field(default_factory=dict, init=False)

    @classmethod
    def build(cls, settings: TeamsSettings, *, keys: KeyDirectory | None = None) -> TokenGate:
        return cls(settings=settings, config=connection(settings), keys=keys or KeyDirectory())

    @property
    def anonymous(self) -> bool:
        return self.settings.app_id is None and self.settings.anonymous

    async def claims(self, headers: list[str]) -> Verified:
        """The verified claims of the one Authorization header (anonymous runs: none needed)."""
        if self.anonymous:
            return Verified(ClaimsIdentity())  # no claims: the SDK takes it as anonymous
        if len(headers) != 1:
            raise Unauthorized("no_token" if not headers else "several_tokens")
        scheme, _, token = headers[0].partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or " " in token:
            raise Unauthorized("malformed_header")
        if (known := self._known(token)) is not None:
            return known
        verified = await self._verify(token)
        self._remember(token, verified)
        return verified

    def _known(self, token: str) -> Verified | None:
        """The claims of this very token, verified within ``VERIFIED_SECONDS`` and not expired."""
        found = self._verified.get(token)
        if found is None:
            return None
        if self.now() >= found[0]:
            del self._verified[token]
            return None
        return found[1]

    def _remember(self, token: str, verified: Verified) -> None:
        until = min(self.now() + VERIFIED_SECONDS,
                    float(verified.claims["exp"]) + EXPIRY_LEEWAY_SECONDS)
        self._verified.pop(token, None)
        self._verified[token] = (until, verified)
        while len(self._verified) > VERIFIED_KEPT:
            del self._verified[next(iter(self._verified))]

    async def _verify(self, token: str) -> Verified:
        """Every check of the token itself: its shape, then the SDK's validation."""
        self._screen(token)
        validator = JwtTokenValidator(self.config)
        watched = _Watched(self.keys)  # where keys come from; checks unchanged
        validator._jwk_client_manager = watched  # type: ignore[assignment]
        try:
            identity = await validator.validate_token(token)
        except Exception as exc:  # the SDK raises more than PyJWTError and ValueError
            log.info("teams.token_refused", error=type(exc).__name__)
            raise Unauthorized("invalid_token") from None
        if not isinstance(identity.claims.get("exp"), int | float):
            raise Unauthorized("no_expiry")
        return Verified(identity, _endorsements(watched.key))

    def _screen(self, token: str) -> None:
        """What the SDK would crash on or wave through, refused before it is asked."""
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except Exception:
            raise Unauthorized("invalid_token") from None
        if not isinstance(header.get("kid"), str) or not header["kid"]:
            raise Unauthorized("no_key_id")
        if header.get("alg") != "RS256":
            raise Unauthorized("bad_algorithm")
        if not isinstance(unverified.get("exp"), int | float):
            raise Unauthorized("no_expiry")

    def check_activity(self, verified: Verified, *, service_url: str | None,
                       aad_tenant_id: str, channel_id: str | None) -> None:
        """The token and the activity belong together: a Bot Framework token's signing key is
        endorsed for the activity's channel, its ``serviceurl`` claim names the activity's
        serviceUrl (Bot Framework tokens must carry one), and an Entra token of a served
        tenant acts in that tenant only."""
        if self.anonymous:
            if service_url is None or not _loopback(service_url):
                raise Unauthorized("service_url_not_local")
            return
        claims = verified.claims
        bot_framework = claims.get("iss") == BOT_FRAMEWORK_ISSUER
        if bot_framework and not endorsed(verified.endorsements, channel_id):
            raise Unauthorized("channel_not_endorsed")
        claimed = claims.get("serviceurl")
        if claimed is None and bot_framework:
            raise Unauthorized("no_service_url_claim")
        if claimed is not None and (service_url is None or not _same_url(claimed, service_url)):
            raise Unauthorized("service_url_mismatch")
        info = entra_issuer_info(claims.get("iss"))
        if info is not None and info.tenant not in WELL_KNOWN_PUBLIC_TENANT_IDS \
                and info.tenant != aad_tenant_id.lower():
            raise Unauthorized("tenant_mismatch")


def endorsed(endorsements: frozenset[str] | None, channel_id: str | None) -> bool:
    """Bot Framework's endorsement rule: the key that signed a channel's token must list that
    channel. A key with no endorsements, or an activity naming no channel, is not endorsed
    (Bot Framework's own validators let an activity without a channel through; every Teams
    activity names one, and one that does not is refused before this as malformed)."""
    return bool(channel_id) and endorsements is not None and channel_id in endorsements


def _same_url(claimed: object, service_url: str) -> bool:
    """Bot Framework compares the two whole, without case; a trailing slash is not a difference."""
    if not isinstance(claimed, str):
        return False
    return claimed.rstrip("/").casefold() == service_url.rstrip("/").casefold()


def _loopback(service_url: str) -> bool:
    """The Agents Playground's connector, on this machine (anonymous runs reach nothing else)."""
    try:
        host = URL(service_url).host or ""
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
