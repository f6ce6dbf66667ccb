"""The Bot Connector as the Teams channel calls it: the Agents SDK's ``ConnectorClient`` over one
shared aiohttp session, inside Teams' rate limits, with its transient faults retried.

Every call first checks the service URL against the connector hosts the bot may send its token to
(never another host: a stored or forged reference cannot move the token), then takes a token from
two buckets the store shares across replicas: the app's per-tenant bucket and the conversation's own
(bulk sends leave a reserve of each to interactive work, so a click's card update goes first:
``adapters.pacing``). 429, 412, 502 and 504 are retried with exponential backoff and jitter, at
least as long as Retry-After asks (a 429 also blocks the bucket for every replica), until the retry
budget is spent (``Limits.retry``, a ``bot.retry.RetryPolicy``). The SDK's client sets the bot's
token on the session it is given; it is given a view of the shared session scoped to one service
URL, so the token travels only in that view's requests, and redirects are never followed.
"""

from __future__ import annotations

import asyncio
import random as _random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp
import structlog
from microsoft_agents.hosting.core.connector import ConnectorClient
from microsoft_agents.hosting.core.connector.conversations_base import ConversationsBase
from multidict import CIMultiDict
from yarl import URL

from adapters import pacing
from adapters.errors import AdapterError
from adapters.pacing import Lane
from bot.channel import ChannelError, CredentialsRejected
from bot.clock import Clock
from bot.metrics import REGISTRY
from bot.retry import RetryPolicy
from bot.settings import TeamsSettings
from bot.store.base import RateBuckets

log = structlog.get_logger("clarify.teams")

# Microsoft's connector hosts (service URLs of Teams, GCC, GCC High and DoD; the Bot Framework's
# own channels): a service URL on any other host never gets the bot's token
CONNECTOR_HOSTS = ("smba.trafficmanager.net", "botframework.com", "teams.microsoft.com",
                   "teams.microsoft.us")
TOKEN_RESOURCE = "https://api.botframework.com"
TOKEN_SCOPE = "https://api.botframework.com/.default"
TOKEN_SETTING = "TEAMS_APP_PASSWORD"
RETRIED = frozenset({412, 429, 502, 504})  # Microsoft's transient answers
MAYBE_DONE = frozenset({502, 504})  # the gateway gave up: the connector may have acted


class TokenProvider(Protocol):
    """The SDK's ``AccessTokenProviderBase`` as the channel uses it (``MsalAuth`` in production,
    the anonymous provider for local runs without an app id: an empty token, no header)."""

    async def get_access_token(self, resource_url: str, scopes: list[str],
                               force_refresh: bool = False) -> str: ...


@dataclass(frozen=True, slots=True)
class ConnectorHosts:
    """Where the bot's token may go: https on a Microsoft connector host or a subdomain of one;
    ``local`` names exact origins (``http://127.0.0.1:PORT``) of a local connector, the Agents
    Playground or a test's, and is empty in production."""

    hosts: tuple[str, ...] = CONNECTOR_HOSTS
    local: tuple[str, ...] = ()

    def allows(self, service_url: str) -> bool:
        try:
            url = URL(service_url)
        except (TypeError, ValueError):
            return False
        if url.user is not None or url.password is not None or not url.host:
            return False
        if url.scheme in ("http", "https") and str(url.origin()) in self._origins():
            return True
        host = url.host.casefold().rstrip(".")
        return url.scheme == "https" and url.explicit_port in (None, 443) and any(
            host == h or host.endswith("." + h) for h in self.hosts)

    def _origins(self) -> set[str]:
        return {str(URL(origin).origin()) for origin in self.local}


@dataclass(frozen=True, slots=True)
class Limits:
    """Teams' published per-bot limits: per conversation 7 in 1 s, 8 in 2 s, 60 in 30 s and
    1800 an hour, so a burst of 7 refilled at 0.5 a second; per app and tenant about 30 a second
    (``tenant_rate``). Bulk sends leave ``interactive_reserve`` tokens of each bucket to clicks
    (``adapters.pacing``). Retries end when their waits would pass the budget."""

    conversation_rate: float = 0.5
    conversation_burst: int = 7
    tenant_rate: float = 30.0
    tenant_burst: int | None = None  # None: one second's worth of the tenant rate
    interactive_reserve: int = 2
    paced: bool = True
    attempts: int = 6
    backoff_seconds: float = 1.0
    backoff_cap_seconds: float = 30.0
    retry_budget_seconds: float = 60.0

    @property
    def retry(self) -> RetryPolicy:
        """``attempts`` tries, ``backoff_seconds`` doubling to ``backoff_cap_seconds``, half
        of each wait random, never sooner than a Retry-After (in full: the budget ends it)."""
        return RetryPolicy(max_attempts=self.attempts, base=self.backoff_seconds,
                           cap=self.backoff_cap_seconds, retry_after_cap=float("inf"),
                           jitter=0.5)

    @classmethod
    def of(cls, settings: TeamsSettings) -> Limits:
        """The buckets ``[teams.rates]`` and ``teams.tenant_sends_per_second`` configure."""
        rates = settings.rates
        return cls(conversation_rate=rates.conversation_per_second,
                   conversation_burst=rates.conversation_burst,
                   tenant_rate=settings.tenant_sends_per_second,
                   tenant_burst=rates.tenant_burst,
                   interactive_reserve=rates.interactive_reserve, paced=rates.paced)


class ConnectorRefused(AdapterError):
    """The connector answered with a final 4xx (or a redirect): ``code`` is its error code or
    sub-code when the body names one (never the body itself)."""

    def __init__(self, status: int, code: str | None) -> None:
        super().__init__(f"connector_{status}")
        self.status = status
        self.code = code


# error codes whose presence in a 403 means the person blocked the bot or removed the app
BLOCKED_CODES = ("MessageWritesBlocked", "ConversationBlockedByUser")
KNOWN_CODES = (*BLOCKED_CODES, "BotNotInConversationRoster", "ConversationNotFound",
               "BotDisabledByAdmin", "NotEnoughPermissions", "BotNotRegistered")


@dataclass
class Connector:
    session: aiohttp.ClientSession
    tokens: TokenProvider
    store: RateBuckets
    clock: Clock
    hosts: ConnectorHosts = field(default_factory=ConnectorHosts)
    limits: Limits = field(default_factory=Limits)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    random: Callable[[], float] = _random.random  # the retries' jitter draws (tests: 1.0)

    async def call[T](self, what: str, service_url: str, *, tenant: str,
                      conversation: str | None,
                      op: Callable[[ConversationsBase], Awaitable[T]], resend_safe: bool,
                      lane: Lane = Lane.INTERACTIVE) -> T:
        """Run ``op`` on a connector client for ``service_url``. ``resend_safe`` says running it
        twice does no harm (an update, opening a 1:1 conversation); a send is not, so a request
        that broke mid-way is not repeated and its ChannelError is not ``certain``. ``lane``:
        bulk delivery leaves each bucket's interactive reserve to clicks.

        Raises ConnectorRefused (a final answer the caller interprets), CredentialsRejected, or
        ChannelError when retries end."""
        if not self.hosts.allows(service_url):
            log.error("teams.service_url_refused", what=what)
            raise ChannelError("service URL not on an allowed connector host", certain=True,
                               retryable=False)
        waited, maybe_done, refreshed, reason = 0.0, False, False, "unavailable"
        for attempt in range(1, self.limits.attempts + 1):
            await self._take(tenant, conversation, lane)
            try:
                return await op(await self._conversations(service_url, force=refreshed))
            except aiohttp.ClientResponseError as exc:
                if exc.status == 401 and not refreshed:
                    refreshed = True  # a token that expired in flight: once more, fresh
                    continue
                if exc.status == 401:
                    log.error("teams.credentials_rejected", setting=TOKEN_SETTING)
                    raise CredentialsRejected("connector_401", setting=TOKEN_SETTING) from None
                if exc.status not in RETRIED:
                    raise _refused(what, exc) from None
                maybe_done = maybe_done or exc.status in MAYBE_DONE
                delay = self._backoff(attempt, pacing.retry_after(exc.headers, self.clock.now()))
                log.info("teams.retry", what=what, status=exc.status, delay=round(delay, 2))
                reason = f"connector_{exc.status}"
                if exc.status == 429:
                    # every replica waits it out: the next take from the bucket does, here too
                    REGISTRY.inc("clarify_rate_limited_total", platform="teams", method=what)
                    delay = await self._blocked(tenant, conversation, delay)
                    if not self._spent(attempt, waited, delay):
                        waited += delay
                        continue
            except aiohttp.ClientConnectorError:
                delay, reason = self._backoff(attempt, None), "connect_failed"  # nothing sent
            except (aiohttp.ClientError, TimeoutError) as exc:
                if not resend_safe:  # it may have been sent: never risk a second card
                    raise ChannelError(type(exc).__name__, certain=False,
                                       retryable=False) from None
                delay, reason = self._backoff(attempt, None), type(exc).__name__
            if self._spent(attempt, waited, delay):
                break
            waited += delay
            await self.sleep(delay)
        log.warning("teams.gave_up", what=what, reason=reason, waited=round(waited, 1))
        certain = resend_safe or not maybe_done
        raise ChannelError(reason, certain=certain, retryable=certain)

    async def token(self, *, force: bool = False) -> str:
        """The bot's connector token; CredentialsRejected when the identity platform gives
        none (wrong secret or certificate, or unreachable: delivery pauses until it does)."""
        try:
            return await self.tokens.get_access_token(TOKEN_RESOURCE, [TOKEN_SCOPE],
                                                      force_refresh=force)
        except Exception as exc:  # MSAL's errors carry no common root
            log.error("teams.token_unavailable", error=type(exc).__name__, setting=TOKEN_SETTING)
            raise CredentialsRejected("no connector token", setting=TOKEN_SETTING) from None

    async def _conversations(self, service_url: str, *, force: bool) -> ConversationsBase:
        token = await self.token(force=force)
        scoped = ServiceSession(self.session, service_url)
        return ConnectorClient(service_url, token, session=scoped).conversations  # type: ignore[arg-type]

    def _spent(self, attempt: int, waited: float, delay: float) -> bool:
        """No attempt left, or waiting ``delay`` more would pass the retry budget."""
        return self.limits.retry.last(attempt) or \
            waited + delay > self.limits.retry_budget_seconds

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        return self.limits.retry.delay(attempt, retry_after=retry_after, draw=self.random())

    def _buckets(self, tenant: str, conversation: str | None
                 ) -> list[tuple[str, float, int, bool]]:
        """(bucket, rate, burst, reserved for clicks): the conversation's first (one send at a
        time per conversation, no tenant token held meanwhile), then the tenant's, of which
        bulk leaves the interactive reserve."""
        limits = self.limits
        burst = limits.tenant_burst or max(1, int(limits.tenant_rate))
        found = [(f"teams:{tenant.lower()}:tenant", limits.tenant_rate, burst, True)]
        if conversation is not None:
            found.insert(0, (f"teams:conversation:{conversation}", limits.conversation_rate,
                             limits.conversation_burst, False))
        return found

    async def _take(self, tenant: str, conversation: str | None, lane: Lane) -> None:
        if not self.limits.paced:
            return
        for bucket, rate, burst, reserved in self._buckets(tenant, conversation):
            reserve = self.limits.interactive_reserve if reserved and lane is Lane.BULK else 0
            waited = await pacing.take(self.store, self.clock, self.sleep, bucket,
                                       rate_per_second=rate, burst=burst, reserve=reserve)
            if waited:  # never None: no patience here
                REGISTRY.observe("clarify_rate_limit_wait_seconds", waited, platform="teams")

    async def _blocked(self, tenant: str, conversation: str | None, seconds: float) -> float:
        """A 429 blocks the narrowest bucket it concerns for every replica; returns how long
        the next take from it waits (the block, then the bucket's own pace)."""
        bucket, rate, burst, _ = self._buckets(tenant, conversation)[0]
        await self.store.rate_block(bucket, seconds=seconds, rate_per_second=rate, burst=burst,
                                    now=self.clock.now())
        return seconds + 1 / rate


class ServiceSession:
    """One service URL's view of the shared session, as ``ConnectorClient`` uses a session:
    its relative paths are joined to the service URL, ``headers`` (where the client puts the
    bot's token) go with this view's requests only, and redirects are not followed."""

    def __init__(self, shared: aiohttp.ClientSession, service_url: str) -> None:
        self._shared = shared
        self._base_url = URL(service_url if service_url.endswith("/") else service_url + "/")
        self.headers: CIMultiDict[str] = CIMultiDict()

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        headers = CIMultiDict(self.headers)
        headers.update(kwargs.pop("headers", None) or {})
        kwargs.pop("allow_redirects", None)
        target = URL(url)
        if target.is_absolute():  # the client only ever asks for paths
            raise ValueError("an absolute URL through a service session")
        return self._shared.request(method, self._base_url.join(target), headers=headers,
                                    allow_redirects=False, **kwargs)

    def get(self, url: str, **kwargs: Any) -> Any:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> Any:
        return self.request("POST", url, **kwargs)

    def put(self, url: str, **kwargs: Any) -> Any:
        return self.request("PUT", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> Any:
        return self.request("DELETE", url, **kwargs)

    async def close(self) -> None:
        """The shared session belongs to whoever opened it."""


def _refused(what: str, exc: aiohttp.ClientResponseError) -> ConnectorRefused:
    body = exc.message or ""
    code = next((c for c in KNOWN_CODES if c in body), None)
    log.warning("teams.refused", what=what, status=exc.status, code=code)
    return ConnectorRefused(exc.status, code)

