"""The Slack channel: DMs with Block Kit cards through slack_sdk, inside Slack's rate limits.

Every Web API call first takes a token from a bucket the store shares across replicas (per
workspace and method following Slack's tiers, and per DM for chat.postMessage; sized by
``[slack.rates]``); bulk delivery leaves a reserve of each bucket to clicks, so a person who
clicks never waits behind thousands of cards. Cards are posted to the user id, so no
``conversations.open`` precedes them. A 429 blocks that bucket for Retry-After for every
replica, then the call is retried. 5xx and connection failures are retried with backoff
(``SLACK_RETRY``, a ``bot.retry.RetryPolicy``);
a post whose outcome is unknown is looked up by its message metadata before it is retried, so a
card is never posted twice.

As a distributed app (``installations`` set, ``adapters.slack.tokens``) every call takes the
token of the installation serving the workspace it concerns, and its buckets are that
installation's; a message reference names its installation (``D…:ts@T…``) so that a card is
updated with the token it was sent with. A token Slack refuses pauses that installation only.
"""

from __future__ import annotations

import asyncio
import math
import random as _random
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import structlog
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from adapters import pacing
from adapters.errors import AdapterError
from adapters.pacing import Lane
from adapters.slack.render import render
from adapters.slack.tokens import REVOKED_ERRORS, Installations, Workspace
from bot.channel import (
    Address,
    ChannelError,
    CredentialsRejected,
    Message,
    Profile,
    SlackReach,
)
from bot.clock import Clock
from bot.metrics import REGISTRY
from bot.retry import RetryPolicy
from bot.settings import SlackRates
from bot.store.base import DeliveryKey, Store
from cards import text as card_text
from cards.actions import ActionCodec
from cards.views import OutcomeView, QuestionView, ReminderView, Viewer, with_locale

log = structlog.get_logger("clarify.slack")
METADATA_EVENT = "clarify_card"
HISTORY_LIMIT = 100
DM_IDS_KEPT = 10_000  # DM channel ids remembered, most recently used first
RESPONSE_HOOKS = "https://hooks.slack.com/"  # where a click's response_url points
TOKEN_SETTING = "SLACK_BOT_TOKEN"
# Web API errors that mean the bot token itself is refused, whatever the method: fixing the
# setting is the only cure, so they pause delivery instead of failing one person's card
CREDENTIAL_ERRORS = frozenset({"invalid_auth", "not_authed", "token_revoked", "token_expired",
                               "account_inactive", "not_allowed_token_type"})
# every retried Web API call: 4 tries, 1 s doubling (to 30 s at most), half of each wait random;
# a 429's Retry-After is waited in full (docs/reliability.md, "Retries")
SLACK_RETRY = RetryPolicy(max_attempts=4, base=1.0, cap=30.0, retry_after_cap=float("inf"),
                          jitter=0.5)


@dataclass(frozen=True, slots=True)
class Limit:
    rate_per_second: float
    burst: int


DM = ":dm"  # the per-conversation bucket of chat.postMessage


FORM_METHODS = frozenset({"users.info"})
# how long a profile lookup (users.info) waits for its bucket before the card goes without it
PROFILE_PATIENCE_SECONDS = 0.5


def limits(rates: SlackRates) -> dict[str, Limit]:
    """The buckets per workspace and method that the published tiers imply."""
    tier3 = Limit(rates.tier3_per_minute / 60, max(1, rates.tier3_per_minute // 5))
    tier4 = Limit(rates.tier4_per_minute / 60, max(1, rates.tier4_per_minute // 5))
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
    }


LIMITS = limits(SlackRates())  # the shipped defaults


@dataclass
class SlackChannel:
    client: AsyncWebClient
    codec: ActionCodec
    store: Store
    clock: Clock
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    retry: RetryPolicy = SLACK_RETRY
    random: Callable[[], float] = _random.random  # the retries' jitter draws (tests: 1.0)
    platform: str = "slack"
    can_find: bool = True  # conversations.history, by the metadata each card carries
    idempotent: bool = False
    rates: SlackRates = field(default_factory=SlackRates)
    # each person's DM channel id, for the rare look-up after an unclear post: the most recently
    # used ``DM_IDS_KEPT`` (a forgotten one costs one conversations.open when next needed)
    _dms: OrderedDict[str, str] = field(default_factory=OrderedDict)
    _locales: OrderedDict[str, str | None] = field(default_factory=OrderedDict)
    _dm_users: dict[str, str] = field(default_factory=dict)  # DM channel id -> user (of _dms)
    _limits: dict[str, Limit] = field(init=False)
    installations: Installations | None = None  # a distributed app: a token per installation

    def __post_init__(self) -> None:
        self._limits = limits(self.rates)

    # ---------------------------------------------------------------- Channel

    async def send(self, address: Address, message: Message, *, key: DeliveryKey) -> str:
        """Post to the user id: Slack delivers it in the app's DM with them, so no
        ``conversations.open`` per card (the DM's id comes back with the post and is kept for
        the rare look-up after an unclear outcome)."""
        user = address.user_id
        body = render(message, codec=self.codec)
        args = {"channel": user, "text": body["text"], "blocks": body["blocks"],
                "unfurl_links": False, "unfurl_media": False,
                "metadata": {"event_type": METADATA_EVENT,
                             "event_payload": {"delivery": key.token()}}}
        if isinstance(message, ReminderView):
            # a reminder's nudge goes in the card's thread, broadcast to the DM: an update in
            # place notifies nobody, a thread reply alone only who follows the thread; shown
            # in the DM, it notifies the person and is found in its history after a crash
            near, _, _ = message.near.partition("@")
            dm, _, ts = near.partition(":")
            if dm and ts:
                args.update(channel=dm, thread_ts=ts, reply_broadcast=True)
        workspace = _workspace(address)
        attempt = 1
        while True:
            try:
                response = await self._call("chat.postMessage", workspace, args, dm=user,
                                            lane=Lane.BULK)
                self._remember_dm(user, response["channel"])
                return self.own_ref(f"{response['channel']}:{response['ts']}", workspace)
            except _Ambiguous as exc:
                # the post may have landed: look before posting again
                try:
                    found = await self._lookup(await self.dm(address), workspace, key)
                except ChannelError as refused:
                    refused.certain = False  # whatever the look-up met, the post may be there
                    raise
                if found is not None:
                    return found
                if self.retry.last(attempt):
                    raise ChannelError(exc.reason, certain=False, retryable=True) from None
                await self.sleep(self.retry.delay(attempt, draw=self.random()))
                attempt += 1

    async def update(self, ref: str, view: OutcomeView | QuestionView) -> None:
        ref, _, where = ref.partition("@")
        dm, _, ts = ref.partition(":")
        if not dm or not ts:
            raise ChannelError("not a Slack message reference", certain=True, retryable=False)
        body = render(with_locale(view, await self._reader_locale(dm, where or None)),
                      codec=self.codec)
        await self._call_retrying("chat.update", where or None,
                                  {"channel": dm, "ts": ts, "text": body["text"],
                                   "blocks": body["blocks"]})

    async def note(self, near: str, user_id: str, view: OutcomeView | None) -> None:
        """An ephemeral message in the conversation of ``near``: only ``user_id`` sees it."""
        near, _, where = near.partition("@")
        dm, _, _ = near.partition(":")
        if not dm:
            raise ChannelError("not a Slack message reference", certain=True, retryable=False)
        if view is None:
            body: dict[str, Any] = {"text": card_text.catalog_of(Viewer()).text(
                "answer.not_available"), "blocks": []}
        else:
            locale = await self._reader_locale(dm, where or None)
            body = render(with_locale(view, locale), codec=self.codec)
        await self.ephemeral(dm, user_id, body, workspace=where or None)

    async def find(self, address: Address, key: DeliveryKey) -> str | None:
        dm = await self.dm(address)
        found = await self._lookup(dm, _workspace(address), key)
        return found

    async def profile(self, address: Address) -> Profile | None:
        """The person's time zone and locale as Slack keeps them (``users.info`` with
        ``include_locale``; issue 26). The engine keeps the answer a day (``bot.engine.zones``).
        A user Slack does not know is an empty profile; Slack unreachable is a ChannelError."""
        try:
            # bulk: a click's update keeps the bucket's reserve; and never queued behind a
            # burst of other people's lookups: a card has a fallback (bot.engine.zones)
            return await self._users_info(address.user_id, _workspace(address),
                                          lane=Lane.BULK, patience=PROFILE_PATIENCE_SECONDS)
        except ChannelError as exc:
            if exc.reason in ("user_not_found", "users_not_found"):
                return Profile()
            raise

    async def _users_info(self, user_id: str, workspace: Workspace, *,
                          lane: Lane = Lane.INTERACTIVE, patience: float | None = None
                          ) -> Profile:
        """``users.info`` with ``include_locale``: the user's time zone and locale."""
        found = await self._call_retrying("users.info", workspace,
                                          {"user": user_id, "include_locale": "true"},
                                          lane=lane, patience=patience)
        user = found.get("user")  # a SlackResponse reads like a mapping
        if not isinstance(user, Mapping):
            return Profile()
        tz, locale = user.get("tz"), user.get("locale")
        return Profile(time_zone=tz if isinstance(tz, str) and tz else None,
                       locale=locale if isinstance(locale, str) and locale else None)

    async def check_credentials(self) -> None:
        """``auth.test``, once: returns when Slack accepts the bot token; CredentialsRejected when
        it refuses it, ChannelError when Slack cannot be asked now. A distributed app has no one
        token: its paused installations are checked instead (each resumes when accepted), and
        one refused never fails the whole check."""
        if self.installations is not None:
            await self.installations.check_paused()
            return
        try:
            await self.client.api_call("auth.test")
        except SlackApiError as exc:
            error = str(exc.response.get("error", "unknown"))
            _raise_if_credentials(error)
            raise ChannelError(error, certain=True, retryable=True) from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ChannelError(type(exc).__name__, certain=True, retryable=True) from None

    # ---------------------------------------------------------------- Slack-only extras

    def own_ref(self, ref: str, workspace: Workspace) -> str:
        """A message reference as this channel keeps it: with its installation's key when the
        app is distributed, so an update uses the token it was sent with."""
        if self.installations is None or "@" in ref:
            return ref
        installed = self.installations.resolve(workspace)
        return ref if installed is None else f"{ref}@{installed.key}"

    async def open_modal(self, trigger_id: str, view: dict[str, Any], *,
                         workspace: Workspace) -> None:
        await self._call_retrying("views.open", workspace, {"trigger_id": trigger_id,
                                                            "view": view})

    async def publish_home(self, user_id: str, view: dict[str, Any], *,
                           workspace: Workspace) -> None:
        """The person's App Home tab (``views.publish`` replaces what it showed)."""
        await self._call_retrying("views.publish", workspace, {"user_id": user_id, "view": view})

    async def respond(self, response_url: str, text: str) -> None:
        """A reply to a click that only the clicker sees, in place (the click's response_url;
        Slack shows it even where ``chat.postEphemeral`` cannot reach them). Only Slack's own
        hooks host, or the Web API's origin (``slack.api_url``), is ever posted to."""
        if not response_url.startswith(self._respond_origins()):
            raise ChannelError("response_url_not_slack", certain=True, retryable=False)
        try:
            sent = await AsyncWebhookClient(response_url, timeout=5).send(
                text=text, response_type="ephemeral", replace_original=False)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ChannelError(type(exc).__name__, certain=False, retryable=True) from None
        if sent.status_code != 200:
            raise ChannelError(f"response_url_{sent.status_code}", certain=True,
                               retryable=False)

    def _respond_origins(self) -> tuple[str, ...]:
        api = urlsplit(self.client.base_url)
        return (RESPONSE_HOOKS, f"{api.scheme}://{api.netloc}/")

    async def ephemeral(self, channel: str, user: str, body: dict[str, Any], *,
                        workspace: Workspace = None) -> None:
        await self._call_retrying("chat.postEphemeral", workspace,
                                  {"channel": channel, "user": user, "text": body["text"],
                                   "blocks": body.get("blocks", [])})

    async def replace(self, channel: str, ts: str, body: dict[str, Any], *,
                      workspace: Workspace) -> None:
        """Show ``body`` in place of a message the bot sent (a digest's next page): an
        interactive ``chat.update``, never a new post queued behind bulk delivery."""
        await self._call_retrying("chat.update", workspace,
                                  {"channel": channel, "ts": ts, "text": body["text"],
                                   "blocks": body["blocks"]})

    # ---------------------------------------------------------------- helpers

    async def _user_locale(self, user: str, workspace: Workspace) -> str | None:
        """``user``'s Slack locale (``users.info`` with ``include_locale``), kept in this
        process (most recently used first) for the cards updated in place."""
        if user in self._locales:
            self._locales.move_to_end(user)
            return self._locales[user]
        locale = (await self._users_info(user, workspace)).locale
        self._locales[user] = locale
        while len(self._locales) > DM_IDS_KEPT:
            self._locales.popitem(last=False)
        return locale

    async def _reader_locale(self, dm: str, workspace: Workspace) -> str | None:
        """The Slack locale of the person whose DM ``dm`` is (a card updated in place is shown
        in it too); None when it cannot be told now: the view's own locale is kept."""
        try:
            user = self._dm_users.get(dm)
            if user is None:
                info = await self._call_retrying("conversations.info", workspace,
                                                 {"channel": dm})
                user = (info.get("channel") or {}).get("user")
                if not isinstance(user, str) or not user:
                    return None
                self._remember_dm(user, dm)
            return await self._user_locale(user, workspace)
        except CredentialsRejected:
            raise
        except ChannelError:
            return None

    async def dm(self, address: Address) -> str:
        cached = self._dms.get(address.user_id)
        if cached is not None:
            self._dms.move_to_end(address.user_id)
            return cached
        response = await self._call_retrying("conversations.open", _workspace(address),
                                             {"users": address.user_id})
        channel = response["channel"]["id"]
        self._remember_dm(address.user_id, channel)
        return channel

    def _remember_dm(self, user: str, channel: str) -> None:
        self._dms[user] = channel
        self._dms.move_to_end(user)
        self._dm_users[channel] = user
        while len(self._dms) > DM_IDS_KEPT:
            _, gone = self._dms.popitem(last=False)
            self._dm_users.pop(gone, None)

    async def _lookup(self, dm: str, workspace: Workspace, key: DeliveryKey) -> str | None:
        try:
            response = await self._call_retrying(
                "conversations.history", workspace,
                {"channel": dm, "limit": HISTORY_LIMIT, "include_all_metadata": True})
        except CredentialsRejected:
            raise
        except ChannelError as exc:
            raise ChannelError("history unavailable", certain=False, retryable=True) from exc
        for message in response.get("messages", []):
            payload = (message.get("metadata") or {}).get("event_payload") or {}
            if payload.get("delivery") == key.token():
                return self.own_ref(f"{dm}:{message['ts']}", workspace)
        return None

    async def _call_retrying(self, method: str, workspace: Workspace, args: dict[str, Any],
                             *, lane: Lane = Lane.INTERACTIVE,
                             patience: float | None = None) -> Any:
        attempt = 1
        while True:
            try:
                return await self._call(method, workspace, args, lane=lane, patience=patience)
            except _Ambiguous as exc:
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
                    raise _Ambiguous(f"slack_{status}") from None
                if self.installations is not None \
                        and (error in CREDENTIAL_ERRORS or error in REVOKED_ERRORS) \
                        and (installed := self.installations.resolve(where)) is not None:
                    # paused (CredentialsRejected), or, for a token gone for good, removed
                    # and the person unreachable (NotReachable, with the cause)
                    raise await self.installations.refused(installed.key, error) from None
                _raise_if_credentials(error)
                log.warning("slack.call_refused", method=method, error=error)
                raise ChannelError(error, certain=True, retryable=False) from None
            except aiohttp.ClientConnectorError:
                # no connection was made, so nothing was sent: wait and try again
                if not self.retry.last(attempt):
                    await self.sleep(self.retry.delay(attempt, draw=self.random()))
                continue
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise _Ambiguous(type(exc).__name__) from None
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


class _Ambiguous(AdapterError):
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


def _raise_if_credentials(error: str) -> None:
    if error in CREDENTIAL_ERRORS:
        log.error("slack.credentials_rejected", error=error, setting=TOKEN_SETTING)
        raise CredentialsRejected(error, setting=TOKEN_SETTING)


def _workspace(address: Address) -> SlackReach:
    return address.reach if isinstance(address.reach, SlackReach) else SlackReach()
