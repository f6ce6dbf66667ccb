"""Slack's Web API, called inside its rate limits: the buckets, the retries and what a refusal
means, under the channel (``adapters.slack.channel``) and its Slack-only extras.

Every Web API call first takes a token from a bucket the store shares across replicas (per
workspace and method following Slack's tiers, and per DM for chat.postMessage; sized by
``[slack.rates]``); bulk delivery leaves a reserve of each bucket to clicks, so a person who
clicks never waits behind thousands of cards. A 429 blocks that bucket for Retry-After for every
replica, then the call is retried. 5xx and connection failures are retried with backoff
(``SLACK_RETRY``, a ``bot.retry.RetryPolicy``). A refusal is a ``ChannelError`` saying whether
it will hold for the person's later questions (``LASTING_ERRORS``, ``bot.engine.lasting``); a
refused token pauses delivery (``CredentialsRejected``), or, as a distributed app, only its
installation (``adapters.slack.tokens``).
"""

from __future__ import annotations

import asyncio
import math
import random as _random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import structlog
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters import pacing
from adapters.errors import AdapterError
from adapters.pacing import Lane
from adapters.slack.tokens import REVOKED_ERRORS, Installations, Workspace
from bot.channel import ChannelError, CredentialsRejected, SlackReach
from bot.clock import Clock
from bot.metrics import REGISTRY
from bot.reach.causes import BLOCKED_OR_UNINSTALLED, DEACTIVATED
from bot.retry import RetryPolicy
from bot.settings import SlackRates
from bot.store.base import RateBuckets

log = structlog.get_logger("clarify.slack")
TOKEN_SETTING = "SLACK_BOT_TOKEN"
# Web API errors that mean the bot token itself is refused, whatever the method: fixing the
# setting is the only cure, so they pause delivery instead of failing one person's card
CREDENTIAL_ERRORS = frozenset({"invalid_auth", "not_authed", "token_revoked", "token_expired",
                               "account_inactive", "not_allowed_token_type"})
# Web API errors that refuse a person in a way that holds for their later questions too (no DM
# can be opened with them, a deactivated account): the engine tries Slack last for them
LASTING_ERRORS = ("channel_not_found", "cannot_dm_bot", "user_disabled", "account_inactive",
                  "user_not_found", "not_in_channel")
# Web API errors that refuse a person, by the reach report's cause group (``ChannelError.cause``,
# ``bot.reach.causes``): the report groups them by this code, not by the error's words.
# (``account_inactive`` is the bot token's account: credentials, or, distributed, an
# uninstalled workspace, ``adapters.slack.tokens``; never one person's refusal)
REFUSAL_CAUSES: dict[str, str] = {
    "cannot_dm_bot": BLOCKED_OR_UNINSTALLED,
    "channel_not_found": BLOCKED_OR_UNINSTALLED,  # no DM with them: removed, or never opened
    "user_disabled": DEACTIVATED,
    "user_not_found": DEACTIVATED,
}
# every retried Web API call: 4 tries, 1 s doubling (to 30 s at most), half of each wait random;
# a 429's Retry-After is waited in full (docs/reliability.md, "Retries")
SLACK_RETRY = RetryPolicy(max_attempts=4, base=1.0, cap=30.0, retry_after_cap=float("inf"),
                          jitter=0.5)


@dataclass(frozen=True, slots=True)
class Limit:
    rate_per_second: float
    burst: int


DM = ":dm"  # the per-conversation bucket of chat.postMessage


FORM_METHODS = frozenset({"users.info", "dnd.info", "users.list", "dnd.teamInfo"})
TIER2_PER_MINUTE = 20  # Slack's Tier 2 (users.list, dnd.teamInfo): 20 a minute


def limits(rates: SlackRates) -> dict[str, Limit]:
    """The buckets per workspace and method that the published tiers imply."""
    tier3 = Limit(rates.tier3_per_minute / 60, max(1, rates.tier3_per_minute // 5))
    tier4 = Limit(rates.tier4_per_minute / 60, max(1, rates.tier4_per_minute // 5))
    tier2 = Limit(TIER2_PER_MINUTE / 60, max(1, TIER2_PER_MINUTE // 5))
    return {
        "chat.postMessage": Limit(rates.post_per_second, rates.post_burst),
        "chat.postMessage" + DM: Limit(rates.post_per_dm_per_second, rates.post_per_dm_burst),
        "chat.update": tier3,
        "conversations.open": tier3,
        "conversations.history": tier3,
        "views.open": tier4,
        "chat.postEphemeral": tier4,
        "views.publish": tier4,  # the App Home
        "users.info": tier4,  # a person's zone and locale, kept a day (bot.engine.zones)
        "dnd.info": tier3,  # whether a person is away (adapters.slack.away)
        "users.list": tier2,  # a workspace's people in bulk (adapters.slack.people)
        "dnd.teamInfo": tier2,  # their Do Not Disturb, 50 a call (adapters.slack.people)
    }


LIMITS = limits(SlackRates())  # the shipped defaults


@dataclass(kw_only=True)
class WebApi:
    """Calls of Slack's Web API inside its rate limits (the channel is one)."""

    client: AsyncWebClient
    store: RateBuckets  # the buckets every replica takes from
    clock: Clock
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    retry: RetryPolicy = SLACK_RETRY
    random: Callable[[], float] = _random.random  # the retries' jitter draws (tests: 1.0)
    rates: SlackRates = field(default_factory=SlackRates)
    installations: Installations | None = None  # a distributed app: a token per installation
    _limits: dict[str, Limit] = field(init=False)

    def __post_init__(self) -> None:
        self._limits = limits(self.rates)

    async def _call_retrying(self, method: str, workspace: Workspace, args: dict[str, Any],
                             *, lane: Lane = Lane.INTERACTIVE,
                             patience: float | None = None) -> Any:
        attempt = 1
        while True:
            try:
                return await self._call(method, workspace, args, lane=lane, patience=patience)
            except Ambiguous as exc:
                if self.retry.last(attempt):
                    raise ChannelError(exc.reason, certain=False, retryable=True) from None
                await self.sleep(self.retry.delay(attempt, draw=self.random()))
                attempt += 1

    async def _call(self, method: str, where: Workspace, args: dict[str, Any], *,
                    dm: str | None = None, lane: Lane = Lane.INTERACTIVE,
                    patience: float | None = None) -> Any:
        """One Web API call inside the rate limits; 429s are waited out here. Bulk delivery
        leaves each bucket's reserve to clicks (``Lane``). ``patience``: a ChannelError
        (``paced``, nothing sent) when the bucket has no token within that many seconds."""
        workspace = self._bucket(where)
        attempt = 0
        while not self.retry.last(attempt):
            attempt += 1
            if dm is not None:  # one conversation at a time: no workspace token held meanwhile
                await self._take(method + DM, workspace, suffix=dm)
            if not await self._take(method, workspace, lane=lane, patience=patience):
                raise ChannelError("paced", certain=True, retryable=True)
            try:
                client = self.client if self.installations is None \
                    else (await self.installations.client(where))[0]
                # a read method takes form arguments (Slack refuses JSON bodies for them)
                if method in FORM_METHODS:
                    return await client.api_call(method, data=args)
                return await client.api_call(method, json=args)
            except SlackApiError as exc:
                status = exc.response.status_code
                error = str(exc.response.get("error", "unknown"))
                if status == 429:
                    await self._blocked(method, workspace, exc, attempt)
                    continue
                if status >= 500:
                    raise Ambiguous(f"slack_{status}") from None
                if self.installations is not None \
                        and (error in CREDENTIAL_ERRORS or error in REVOKED_ERRORS) \
                        and (installed := self.installations.resolve(where)) is not None:
                    # paused (CredentialsRejected), or, for a token gone for good, removed
                    # and the person unreachable (NotReachable, with the cause)
                    raise await self.installations.refused(installed.key, error) from None
                raise_if_credentials(error)
                log.warning("slack.call_refused", method=method, error=error)
                raise ChannelError(error, certain=True, retryable=False,
                                   lasting=error.startswith(LASTING_ERRORS),
                                   cause=REFUSAL_CAUSES.get(error)) from None
            except aiohttp.ClientConnectorError:
                # no connection was made, so nothing was sent: wait and try again
                if not self.retry.last(attempt):
                    await self.sleep(self.retry.delay(attempt, draw=self.random()))
                continue
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise Ambiguous(type(exc).__name__) from None
        raise ChannelError("unavailable", certain=True, retryable=True)

    def _bucket(self, where: Workspace) -> str | None:
        """The workspace a call's rate buckets belong to: its installation's key when the app
        is distributed, else the org or the workspace."""
        if self.installations is not None and (found := self.installations.resolve(where)):
            return found.key
        if isinstance(where, SlackReach):
            return where.enterprise_id or where.team_id
        return where

    async def _take(self, method: str, workspace: str | None, *, suffix: str = "",
                    lane: Lane = Lane.INTERACTIVE, patience: float | None = None) -> bool:
        """A token of the method's bucket, waited for; False when ``patience`` ran out first."""
        limit = self._limits.get(method)
        if limit is None or not self.rates.paced:
            return True
        bucket = f"slack:{workspace or '-'}:{method}{':' + suffix if suffix else ''}"
        waited = await pacing.take(
            self.store, self.clock, self.sleep, bucket, rate_per_second=limit.rate_per_second,
            burst=limit.burst,
            reserve=self.rates.interactive_reserve if lane is Lane.BULK else 0,
            patience=patience)
        if waited is None:
            return False
        if waited > 0:
            REGISTRY.observe("clarify_rate_limit_wait_seconds", waited, platform="slack")
        return True

    async def _blocked(self, method: str, workspace: str | None, exc: SlackApiError,
                       attempt: int) -> None:
        """A 429: the bucket is blocked for Retry-After for every replica (its next take
        waits); a call outside the buckets waits here, the Retry-After at least."""
        retry_after = _retry_after(exc)
        REGISTRY.inc("clarify_rate_limited_total", platform="slack", method=method)
        log.info("slack.rate_limited", method=method, retry_after=retry_after)
        limit = self._limits.get(method, Limit(1.0, 1))
        await self.store.rate_block(f"slack:{workspace or '-'}:{method}", seconds=retry_after,
                                    rate_per_second=limit.rate_per_second, burst=limit.burst,
                                    now=self.clock.now())
        if (method not in self._limits or not self.rates.paced) \
                and not self.retry.last(attempt):
            await self.sleep(self.retry.delay(attempt, retry_after=retry_after,
                                              draw=self.random()))


class Ambiguous(AdapterError):
    """The call may or may not have taken effect (5xx, connection trouble)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _retry_after(exc: SlackApiError) -> float:
    """The 429's Retry-After in seconds, at least 1; 1 when it is missing or no finite number
    (a wait of ``inf`` would never end and block the bucket for good)."""
    headers = {k.lower(): v for k, v in (exc.response.headers or {}).items()}
    raw = headers.get("retry-after")
    value = raw[0] if isinstance(raw, list) else raw
    try:
        seconds = float(value) if value is not None else 1.0
    except (TypeError, ValueError):
        return 1.0
    return max(seconds, 1.0) if math.isfinite(seconds) else 1.0


def raise_if_credentials(error: str) -> None:
    if error in CREDENTIAL_ERRORS:
        log.error("slack.credentials_rejected", error=error, setting=TOKEN_SETTING)
        raise CredentialsRejected(error, setting=TOKEN_SETTING)
