"""The Slack channel: DMs with Block Kit cards through slack_sdk, inside Slack's rate limits.

Every Web API call goes through ``adapters.slack.webapi`` (the shared buckets, a 429's Retry-
After, retries with backoff, what a refusal means); whether a person is away (their status, Do
Not Disturb) is read by ``adapters.slack.away``. Cards are posted to the user id, so no
``conversations.open`` precedes them; a post whose outcome is unknown is looked up by its
message metadata before it is retried, so a card is never posted twice.

As a distributed app (``installations`` set, ``adapters.slack.tokens``) every call takes the
token of the installation serving the workspace it concerns, and its buckets are that
installation's; a message reference names its installation (``D…:ts@T…``) so that a card is
updated with the token it was sent with. A token Slack refuses pauses that installation only.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import structlog
from slack_sdk.errors import SlackApiError
from slack_sdk.webhook.async_client import AsyncWebhookClient

from adapters.pacing import Lane
from adapters.slack.away import PATIENCE_SECONDS
from adapters.slack.people import SlackPeople
from adapters.slack.render import render
from adapters.slack.tokens import Workspace
from adapters.slack.webapi import Ambiguous, raise_if_credentials
from bot.channel import (
    Address,
    ChannelError,
    CredentialsRejected,
    Message,
    Profile,
    SlackReach,
)
from bot.core.models import Channel as ContractChannel
from bot.core.models import IdentityKind
from bot.store.base import DeliveryKey
from cards import text as card_text
from cards.actions import ActionCodec
from cards.views import OutcomeView, QuestionView, ReminderView, Viewer, with_locale

log = structlog.get_logger("clarify.slack")
METADATA_EVENT = "clarify_card"
HISTORY_LIMIT = 100
DM_IDS_KEPT = 10_000  # DM channel ids remembered, most recently used first
RESPONSE_HOOKS = "https://hooks.slack.com/"  # where a click's response_url points
# how long a profile lookup (users.info) waits for its bucket before the card goes without it
PROFILE_PATIENCE_SECONDS = PATIENCE_SECONDS


@dataclass(kw_only=True)
class SlackChannel(SlackPeople):
    codec: ActionCodec
    platform: str = "slack"
    can_find: bool = True  # conversations.history, by the metadata each card carries
    idempotent: bool = False
    # the core contract's words for Slack: its people are addressed by their Slack user ids,
    # its answers and delivery reports say "slack"
    identity_kind: IdentityKind = IdentityKind.SLACK
    contract_channel: ContractChannel = ContractChannel.SLACK
    # each person's DM channel id, for the rare look-up after an unclear post: the most recently
    # used ``DM_IDS_KEPT`` (a forgotten one costs one conversations.open when next needed)
    _dms: OrderedDict[str, str] = field(default_factory=OrderedDict)
    _locales: OrderedDict[str, str | None] = field(default_factory=OrderedDict)
    _dm_users: dict[str, str] = field(default_factory=dict)  # DM channel id -> user (of _dms)

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
            except Ambiguous as exc:
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
        """The person's time zone and locale as Slack keeps them: from the workspace's
        directory (``adapters.slack.people``), else ``users.info`` with ``include_locale``
        (then kept in the directory). Without a directory the engine keeps the answer a day
        (``bot.engine.zones``). A user Slack does not know is an empty profile; Slack
        unreachable is a ChannelError."""
        workspace = _workspace(address)
        listed = await self.profile_of(address.user_id, workspace)
        if listed is not None:
            return listed
        try:
            # bulk: a click's update keeps the bucket's reserve; and never queued behind a
            # burst of other people's lookups: a card has a fallback (bot.engine.zones)
            return await self._users_info(address.user_id, workspace, lane=Lane.BULK,
                                          patience=PROFILE_PATIENCE_SECONDS, keep=True)
        except ChannelError as exc:
            if exc.reason in ("user_not_found", "users_not_found"):
                return Profile()
            raise

    async def _users_info(self, user_id: str, workspace: Workspace, *,
                          lane: Lane = Lane.INTERACTIVE, patience: float | None = None,
                          keep: bool = False) -> Profile:
        """``users.info`` with ``include_locale``: the user's time zone and locale (the answer
        an away lookup of the last minute read, ``adapters.slack.away``); with ``keep``, kept
        in the workspace's directory for every replica."""
        user = await self.user_record(user_id, workspace, lane=lane, patience=patience)
        if keep:
            await self.keep_member(user, workspace)
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
            raise_if_credentials(error)
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
        listed = await self.profile_of(user, workspace)
        locale = (listed or await self._users_info(user, workspace)).locale
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

def _workspace(address: Address) -> SlackReach:
    return address.reach if isinstance(address.reach, SlackReach) else SlackReach()
