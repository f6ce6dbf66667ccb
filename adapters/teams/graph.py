"""Microsoft Graph as the Teams adapter reads it: the app's own (app-only) token for each tenant,
and two reads of a person, their presence and their mailbox's automatic replies
(``adapters.teams.away`` decides what they mean; docs/teams.md, "Who is away").

Tokens: client credentials for ``https://graph.microsoft.com/.default`` (a national cloud's
Graph: its own origin) at the identity platform's token endpoint of the person's tenant
(``teams.login_url``; the app's id and TEAMS_APP_PASSWORD, as for its Bot Framework tokens),
kept until shortly before they expire; a managed identity asks the Agents SDK's token provider
(msal) instead, in its own tenant. A token's ``roles`` claim, where it carries one, says which
application permissions the tenant granted: a 403 is a permission the tenant has not
consented only when the token lacks it.

Reads: ``GET {graph_url}/users/{id}/presence`` and ``.../mailboxSettings/automaticRepliesSetting``,
at most ``teams.graph_concurrency`` at once in this process, each within ``READ_SECONDS``. A 429
(or a 503 or 504 with a Retry-After) is waited out when its Retry-After fits in
``RETRY_BUDGET_SECONDS``; either way that read is not asked again in this tenant until the wait
has passed. A final 4xx is ``GraphRefused`` (its status and Graph's error code, never the
body); what could not be read in time is a ``ChannelError`` (the person is then not known to be
away). No answer body is logged or kept: an out-of-office message is read by nobody here.
"""

from __future__ import annotations

import asyncio
import math
import random as _random
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

import aiohttp
import jwt
import structlog
from yarl import URL

from adapters import pacing
from adapters.errors import AdapterError
from bot.channel import ChannelError
from bot.clock import Clock
from bot.metrics import REGISTRY
from bot.retry import RetryPolicy

log = structlog.get_logger("clarify.teams")

GRAPH_RESOURCE = "https://graph.microsoft.com"
READ_SECONDS = 5.0  # one Graph read, or one token request, whole
RETRY_BUDGET_SECONDS = 10.0  # waits for Retry-After within one read, in all
STARTUP_CHECK_SECONDS = 30.0  # a start-up check of every served tenant's token, whole
TOKEN_MARGIN = timedelta(minutes=5)  # a token is asked for again this long before it expires
# answers asked again after a backoff (Retry-After obeyed): throttling, a request timeout, and
# every 5xx (``retried``)
RETRIED = frozenset({408, 425, 429})
GUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# a Graph error code of at most this many characters is said in logs; longer ones are cut
CODE_LIMIT = 60
# the words of Graph's error messages that tell its refusals apart (the message itself is never
# kept): a licence missing, a policy or block, a user Teams does not know
MESSAGE_WORDS = ("licen", "policy", "blocked", "not enabled", "disabled",
                 "not allowed to manage")
SUCCESS = frozenset(range(200, 300))


class GraphRefused(AdapterError):
    """Graph's (or its token endpoint's) final 4xx (never another status: a 3xx, a 5xx, a 429
    are ``ChannelError``, no news about the person): ``what`` was asked (``token``,
    ``presence``, ``auto_replies``), ``status`` and ``code`` (Graph's ``error.code``, the token
    endpoint's ``error`` word), never the body; ``roles``: the permissions the token used
    carries (None: it does not say)."""

    def __init__(self, what: str, status: int, code: str | None,
                 roles: frozenset[str] | None = None, said: frozenset[str] = frozenset()
                 ) -> None:
        super().__init__(f"graph_{what}_{status}" + (f": {code}" if code else ""))
        self.what = what
        self.status = status
        self.code = code
        self.roles = roles
        self.said = said  # which of ``MESSAGE_WORDS`` Graph's message holds (never the message)


@dataclass(frozen=True, slots=True)
class Token:
    """An app-only Graph token and the application permissions its ``roles`` claim names
    (None: the token says none that can be read; it is then only sent, never trusted)."""

    value: str = field(repr=False)
    roles: frozenset[str] | None


def roles_of(token: str) -> frozenset[str] | None:
    """The ``roles`` claim of an app-only token, read without checking it (the bot asked the
    identity platform for it over https; only Graph checks it). None when the token is no JWT
    or has no such list (Microsoft keeps the right to make its tokens opaque)."""
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return None
    found = claims.get("roles") if isinstance(claims, dict) else None
    if not isinstance(found, list):
        return None
    return frozenset(role for role in found if isinstance(role, str))


def graph_resource(graph_url: str) -> str:
    """The resource a token for ``graph_url`` is asked for: its https origin (a national
    cloud's Graph, ``https://graph.microsoft.us``), Microsoft's global Graph for anything
    else (a local fake over http)."""
    url = URL(graph_url)
    if url.scheme == "https" and url.host:
        return str(url.origin())
    return GRAPH_RESOURCE


class GraphTokens(Protocol):
    """Where the app's Graph tokens come from, one tenant at a time."""

    async def token(self, aad_tenant_id: str, *, fresh: bool = False) -> Token: ...


class TokenProvider(Protocol):
    """The Agents SDK's ``AccessTokenProviderBase``, as a managed identity's tokens come."""

    async def get_access_token(self, resource_url: str, scopes: list[str],
                               force_refresh: bool = False) -> str: ...


@dataclass
class ClientCredentials:
    """Client credentials at ``{login_url}/{tenant}/oauth2/v2.0/token`` (the app's id and
    secret; a single-tenant app's people are in its own tenant, a multi-tenant app's in each
    consenting tenant). Tokens are kept per tenant until ``TOKEN_MARGIN`` before they expire;
    one request per tenant at a time."""

    session: aiohttp.ClientSession
    login_url: str
    app_id: str
    secret: str = field(repr=False)
    clock: Clock
    resource: str = GRAPH_RESOURCE  # ``graph_resource(teams.graph_url)``
    timeout_seconds: float = READ_SECONDS
    _kept: dict[str, tuple[Token, datetime]] = field(default_factory=dict, repr=False)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict, repr=False)

    async def token(self, aad_tenant_id: str, *, fresh: bool = False) -> Token:
        tenant = aad_tenant_id.lower()
        if not GUID.match(tenant):
            raise GraphRefused("token", 400, "not_a_tenant_id")
        lock = self._locks.setdefault(tenant, asyncio.Lock())
        async with lock:
            kept = self._kept.get(tenant)
            if kept is not None and not fresh and self.clock.now() < kept[1]:
                return kept[0]
            token, lifetime = await self._ask(tenant)
            self._kept[tenant] = (token, self.clock.now() + lifetime - TOKEN_MARGIN)
            return token

    async def _ask(self, tenant: str) -> tuple[Token, timedelta]:
        url = URL(self.login_url.rstrip("/")) / tenant / "oauth2" / "v2.0" / "token"
        form = {"client_id": self.app_id, "client_secret": self.secret,
                "scope": f"{self.resource}/.default", "grant_type": "client_credentials"}
        try:
            async with self.session.post(
                    url, data=form, allow_redirects=False,
                    timeout=aiohttp.ClientTimeout(total=self.timeout_seconds)) as response:
                body = await _json(response)
                status = response.status
        except TimeoutError:
            raise ChannelError("graph_token_timeout", certain=True, retryable=True) from None
        except aiohttp.ClientError as exc:
            raise ChannelError(f"graph_token_{type(exc).__name__}", certain=True,
                               retryable=True) from None
        if retried(status) or status < 400 and status != 200:  # a redirect: no refusal either
            raise ChannelError(f"graph_token_{status}", certain=True, retryable=True)
        value = body.get("access_token") if status == 200 else None
        if not isinstance(value, str) or not value:
            # the OAuth error word (invalid_client, unauthorized_client ...) and the AADSTS
            # numbers, never the description (it may quote the request)
            raise GraphRefused("token", status, _token_error(body))
        expires = body.get("expires_in")
        try:
            seconds = float(expires) if expires is not None else 3600.0
        except (TypeError, ValueError):
            seconds = 3600.0
        if not math.isfinite(seconds) or seconds <= 0:
            seconds = 3600.0
        return Token(value, roles_of(value)), timedelta(seconds=min(seconds, 86400.0))


@dataclass
class ProviderTokens:
    """A managed identity's Graph tokens, from the SDK's token provider (msal keeps them):
    the identity's own tenant only."""

    provider: TokenProvider
    resource: str = GRAPH_RESOURCE  # ``graph_resource(teams.graph_url)``
    timeout_seconds: float = READ_SECONDS

    async def token(self, aad_tenant_id: str, *, fresh: bool = False) -> Token:
        try:
            value = await asyncio.wait_for(
                self.provider.get_access_token(self.resource, [f"{self.resource}/.default"],
                                               force_refresh=fresh), self.timeout_seconds)
        except TimeoutError:
            raise ChannelError("graph_token_timeout", certain=True, retryable=True) from None
        except Exception as exc:  # msal's errors carry no common root, nor a value to quote
            raise GraphRefused("token", 0, type(exc).__name__) from None
        return Token(value, roles_of(value))


@dataclass
class Graph:
    """The two reads, paced: at most ``concurrency`` in flight, a 429's Retry-After obeyed (and
    that read not asked again in the tenant until it has passed)."""

    session: aiohttp.ClientSession
    tokens: GraphTokens
    clock: Clock
    base_url: str = "https://graph.microsoft.com/v1.0"
    concurrency: int = 4
    timeout_seconds: float = READ_SECONDS
    budget_seconds: float = RETRY_BUDGET_SECONDS
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    random: Callable[[], float] = _random.random  # the backoff's jitter (tests: 1.0)
    retry: RetryPolicy = RetryPolicy(max_attempts=3, base=0.5, cap=4.0,
                                     retry_after_cap=float("inf"), jitter=0.5)
    _gate: asyncio.Semaphore | None = field(default=None, repr=False)
    # (tenant, what) -> when Graph's last 429 for it has passed
    _throttled: dict[tuple[str, str], datetime] = field(default_factory=dict, repr=False)

    async def presence(self, aad_tenant_id: str, user_id: str, *, fresh: bool = False
                       ) -> dict[str, Any]:
        return await self.read(aad_tenant_id, user_id, "presence", "presence", fresh=fresh)

    async def auto_replies(self, aad_tenant_id: str, user_id: str, *, fresh: bool = False
                           ) -> dict[str, Any]:
        return await self.read(aad_tenant_id, user_id, "auto_replies",
                               "mailboxSettings/automaticRepliesSetting", fresh=fresh)

    async def read(self, aad_tenant_id: str, user_id: str, what: str, path: str, *,
                   fresh: bool = False) -> dict[str, Any]:
        """One read of ``users/{user_id}/{path}``: its JSON object; GraphRefused on a final
        4xx; ChannelError when it cannot be had now."""
        _, body = await self.call(aad_tenant_id, user_id, what, path, fresh=fresh)
        if not isinstance(body, dict):
            raise ChannelError(f"graph_{what}_unreadable", certain=True, retryable=False)
        return body

    async def call(self, aad_tenant_id: str, user_id: str, what: str, path: str, *,
                   fresh: bool = False, body: dict[str, Any] | None = None,
                   ok: frozenset[int] = SUCCESS) -> tuple[int, Any]:
        """One request to ``users/{user_id}/{path}`` (a GET, or a POST of ``body``): its status
        (one of ``ok``: any 2xx unless told) and JSON body; GraphRefused on another final 4xx;
        ChannelError when it cannot be had now (every 5xx, throttling, no answer, and what is
        neither a 2xx nor a 4xx: a proxy's redirect says nothing about the person)."""
        if not GUID.match(user_id):  # an Entra object id, and never anything else in the path
            raise ChannelError("not an Entra object id", certain=True, retryable=False)
        tenant = aad_tenant_id.lower()
        url = URL(self.base_url.rstrip("/") + f"/users/{user_id.lower()}/{path}")
        waited, refreshed, reason = 0.0, fresh, "unavailable"
        for attempt in range(1, (self.retry.max_attempts or 1) + 1):
            self._not_throttled(tenant, what)
            token = await self.tokens.token(tenant, fresh=refreshed)
            try:
                status, headers, answer = await self._send(url, token, body)
            except TimeoutError:
                raise ChannelError(f"graph_{what}_timeout", certain=True,
                                   retryable=True) from None
            except aiohttp.ClientError as exc:
                delay, reason = self._backoff(attempt, None), type(exc).__name__
            else:
                if status in ok:
                    return status, answer
                if status == 401 and not refreshed:
                    refreshed = True  # a token that expired in flight: once more, fresh
                    continue
                if not retried(status):
                    if 400 <= status < 500:
                        raise GraphRefused(what, status, _graph_error(answer), token.roles,
                                           said=_said(answer))
                    log.warning("teams.graph_unexpected", what=what, status=status)
                    raise ChannelError(f"graph_{what}_{status}", certain=True, retryable=True)
                retry_after = pacing.retry_after(headers, self.clock.now())
                delay, reason = self._backoff(attempt, retry_after), f"graph_{what}_{status}"
                if retry_after is not None:
                    self._throttled[(tenant, what)] = self.clock.now() + timedelta(
                        seconds=retry_after)
                if status == 429:
                    REGISTRY.inc("clarify_rate_limited_total", platform="teams",
                                 method=f"graph_{what}")
                log.info("teams.graph_retry", what=what, status=status, delay=round(delay, 2))
            if self.retry.last(attempt) or waited + delay > self.budget_seconds:
                break
            waited += delay
            await self.sleep(delay)
        log.warning("teams.graph_gave_up", what=what, reason=reason, waited=round(waited, 1))
        raise ChannelError(reason, certain=True, retryable=True)

    async def _send(self, url: URL, token: Token, body: dict[str, Any] | None
                    ) -> tuple[int, Any, Any]:
        if self._gate is None:
            self._gate = asyncio.Semaphore(self.concurrency)
        async with self._gate, self.session.request(
                "GET" if body is None else "POST", url, json=body,
                headers={"Authorization": f"Bearer {token.value}",
                         "Accept": "application/json"},
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=self.timeout_seconds)) as response:
            return response.status, response.headers, await _json(response)

    def throttled_until(self, aad_tenant_id: str, what: str) -> datetime | None:
        """Until when Graph asked that ``what`` not be asked again in the tenant (its last
        Retry-After), or None."""
        until = self._throttled.get((aad_tenant_id.lower(), what))
        return until if until is not None and self.clock.now() < until else None

    def _not_throttled(self, tenant: str, what: str) -> None:
        until = self._throttled.get((tenant, what))
        if until is None:
            return
        if self.clock.now() < until:
            raise ChannelError(f"graph_{what}_throttled", certain=True, retryable=True)
        del self._throttled[(tenant, what)]

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        return self.retry.delay(attempt, retry_after=retry_after, draw=self.random())


def retried(status: int) -> bool:
    """Whether Graph's answer is asked again after a backoff: throttled, timed out, any 5xx."""
    return status in RETRIED or 500 <= status < 600


async def in_time(check: Awaitable[None], *, failed: str,
                  seconds: float = STARTUP_CHECK_SECONDS) -> None:
    """A start-up check (over ``served_tokens``) given ``seconds``; one still going then is
    logged as ``failed`` and left (the first real call says the rest)."""
    try:
        await asyncio.wait_for(check, seconds)
    except TimeoutError:
        log.warning(failed, error="TimeoutError")


async def served_tokens(tokens: GraphTokens, tenants: Iterable[tuple[str, str]], *,
                        failed: str) -> AsyncIterator[tuple[str, Token | GraphRefused]]:
    """Each served tenant's Graph token, asked once (a start-up check): (the tenant's Entra id,
    lowered; its token, or the identity platform's refusal). ``tenants``: (Entra id, tenant
    key) pairs; one that cannot be asked now is logged as ``failed`` and left out."""
    for aad_tenant_id, key in tenants:
        tenant = aad_tenant_id.lower()
        try:
            yield tenant, await tokens.token(tenant)
        except GraphRefused as exc:
            yield tenant, exc
        except Exception as exc:  # noqa: BLE001 (unreachable now: the first real call will say)
            log.warning(failed, tenant=key, error=type(exc).__name__)


async def _json(response: aiohttp.ClientResponse) -> Any:
    """The body as JSON, or None (not JSON, not complete): never kept beyond its reading."""
    try:
        return await response.json(content_type=None)
    except (ValueError, aiohttp.ClientError, UnicodeDecodeError):
        return None


def _graph_error(body: Any) -> str | None:
    """Graph's ``error.code`` (``Forbidden``, ``ErrorAccessDenied``,
    ``Authorization_RequestDenied``, ``MailboxNotEnabledForRESTAPI`` ...), never its message."""
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code[:CODE_LIMIT] if isinstance(code, str) and code else None


def _said(body: Any) -> frozenset[str]:
    """Which of ``MESSAGE_WORDS`` Graph's error message (or its inner error's) holds: all that
    is ever taken from a message, to tell one refusal from another."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return frozenset()
    inner = error.get("innerError") or error.get("innererror")
    texts = [error.get("message"), inner.get("message") if isinstance(inner, dict) else None]
    said = " ".join(t for t in texts if isinstance(t, str))[:2000].lower()
    return frozenset(word for word in MESSAGE_WORDS if word in said)


def _token_error(body: Any) -> str | None:
    if not isinstance(body, dict):
        return None
    word = body.get("error")
    codes = body.get("error_codes")
    numbers = [str(c) for c in codes if isinstance(c, int)][:3] if isinstance(codes, list) \
        else []
    said = (word[:CODE_LIMIT] if isinstance(word, str) and word else "") + \
        "".join(f" AADSTS{n}" for n in numbers)
    return said.strip() or None
