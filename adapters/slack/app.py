"""Slack callbacks on slack-bolt's AsyncApp: verify, acknowledge first, then answer.

HTTP mode serves ``POST /slack/events``: an address that caused too many refusals is refused
unread (429, ``bot.abuse_limits``); the whole body is read (over 64 KiB: 413, judged on the
declared length first, then while reading), the signature is verified once, with slack_sdk's
``SignatureVerifier`` (401; bolt's own check is off because this one runs before bolt sees the
request), identity fields are checked for Slack's shapes (400, audited), and a workspace mapped to
no tenant is a 403 with ``TENANT_SCOPE_MISMATCH`` in the audit (as a distributed app, after its
installations are confirmed against the database); a callback Bolt would authorize from a
workspace no installation serves is acknowledged and dropped, quietly and counted
(``adapters.slack.unserved``); a person over their rate (429)
or, but for an answer click, a process at its cap of tasks (503) is refused before anything is
recorded (docs/reliability.md, "Abuse limits"). Everything else goes to bolt,
whose listeners call ``ack()`` first and hand the slow work (the core) to a task, so Slack always
gets its answer well inside 3 seconds. Socket Mode feeds the same listeners through bolt's
socket-mode handler (the connection is authenticated by the app-level token).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_bolt.oauth.async_oauth_flow import AsyncOAuthFlow
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.signature import SignatureVerifier

from adapters.abuse_limits import client_address, limited
from adapters.slack import (
    declines,
    digests,
    forms,
    home,
    listening,
    payloads,
    steward,
    unserved,
)
from adapters.slack.channel import SlackChannel
from adapters.slack.edge import (
    TIMESTAMP_HEADER,
    EpochClock,
    Read,
    Refusal,
    click_log_ids,
    form_or_json,
    log_ids,
    read_callback,
    refusal_response,
    signed_text,
    user_key,
)
from adapters.slack.kit import Kit
from bot.abuse_limits import Limit, Limits, Throttled
from bot.answering.answers import AnswerService, NotDurable
from bot.audit import Audit, AuditEvent, occurrence_of
from bot.clock import Clock
from bot.core.models import ReasonCode
from bot.engine.lasting import LastingRefusals
from bot.interaction.interactions import Interactions
from bot.metrics import REGISTRY
from bot.store.errors import OutboxFull
from cards import slack as blocks
from cards.actions import ActionCodec, ActionKind

log = structlog.get_logger("clarify.slack")
EVENTS_PATH = "/slack/events"
_ANSWER_ACTION = re.compile(r"^clarify\.answer\.\d+$")
# Slack sends a body at once; one not complete by then can no longer be acknowledged in time
BODY_SECONDS = 10.0
RETRY_HEADER = "X-Slack-Retry-Num"


@dataclass
class SlackAdapter:
    """The edge (verify, screen, limit, acknowledge) in front of the listeners; what the
    listeners share is the ``kit`` (``adapters.slack.kit``)."""

    kit: Kit
    audit: Audit
    verifier: SignatureVerifier
    limits: Limits
    body_seconds: float = BODY_SECONDS

    # ---------------------------------------------------------------- HTTP mode

    async def handle_http(self, request: web.Request) -> web.Response:
        started = time.perf_counter()
        try:
            return await self._handle_http(request)
        finally:
            REGISTRY.observe("clarify_ack_seconds", time.perf_counter() - started,
                             platform="slack")

    async def _handle_http(self, request: web.Request) -> web.Response:
        structlog.contextvars.clear_contextvars()  # nothing of an earlier request kept alive
        address = client_address(request, self.limits.proxy_hops)
        if (by_ip := self.limits.ip_refused("slack", address)) is not None:
            return limited(by_ip)  # refused unread: this address sent too much junk
        text = await signed_text(request, self.verifier, seconds=self.body_seconds)
        if isinstance(text, web.Response):
            self.limits.ip_failed(address)
            return text
        try:
            body = form_or_json(text, request.content_type)
        except payloads.MalformedPayload as exc:
            refused = await self._refused(Refusal(400, "malformed_payload", exc.field),
                                          occurrence=occurrence_of("slack", text))
            return refusal_response(refused.status, refused.reason, field_name=refused.field)
        read = await self._screen(body)
        if isinstance(read, Refusal):
            return refusal_response(read.status, read.reason, field_name=read.field)
        answer = _is_answer_read(read)
        # Slack's retry of an answer click goes on: accepting it again is idempotent
        if over := await self._limited(read, answer=answer,
                                       retry=answer and RETRY_HEADER in request.headers):
            return limited(over)
        if read.click is not None and answer:
            # the one callback that comes in bursts, read and checked once above: made durable
            # and acknowledged here; bolt would only route it (docs/slack.md, "Answer clicks")
            structlog.contextvars.bind_contextvars(**click_log_ids(read.click))
            try:
                await self._accept_click(read.click, request.headers.get(TIMESTAMP_HEADER))
            except NotDurable as exc:
                full = exc.cause == OutboxFull.__name__
                busy = refusal_response(503, "outbox_full" if full else "answer_not_durable",
                                      field_name=exc.cause)
                busy.headers["Retry-After"] = str(exc.retry_after)
                return busy
            return web.Response(status=200)
        try:  # bolt reads ids from any body shape; types the bot does not parse reach it as sent
            bolt_request = AsyncBoltRequest(body=text, query=request.query_string,
                                            headers=dict(request.headers),
                                            context={listening.READ_KEY: read})
        except (TypeError, KeyError, AttributeError, ValueError):
            return refusal_response(400, "malformed_payload")
        installations = self.kit.channel.installations
        if installations is not None and not await unserved.served(installations, bolt_request):
            unserved.skipped(body)  # a quiet line and a count, not Bolt's authorize error
            return web.Response(status=200)
        answered = await self.kit.app.async_dispatch(bolt_request)
        if answered.status == 404:  # nothing listens (a closed view, an event): acknowledged
            return web.Response(status=200)
        return await to_aiohttp_response(answered)

    async def _limited(self, read: Read, *, answer: bool, retry: bool = False
                       ) -> Throttled | None:
        """A verified person's callback: their bucket (a retry skips it), then, unless it is
        an answer click (which starts no task), the cap on outstanding tasks. A callback of
        nobody's (an event, a closed view) reaches no listener that starts work."""
        if read.who is None:
            return None
        if not retry and (refused := await self.limits.user_refused("slack", user_key(read.who))):
            return refused
        return None if answer else self.limits.busy("slack", len(self.kit.tasks))

    async def _screen(self, body: dict[str, Any]) -> Read | Refusal:
        """The edge's checks on a verified callback's body (identity shapes, tenant): what was
        read, to go on with, else the refusal, audited."""
        try:
            read = read_callback(body, self.kit.codec)
        except payloads.ScopeMismatch:
            return await self._refused(Refusal(403, "workspace_not_served"),
                                       occurrence=_occurrence(body))
        except payloads.MalformedPayload as exc:
            return await self._refused(Refusal(400, "malformed_payload", exc.field),
                                       occurrence=_occurrence(body))
        if read.who is not None and self.kit.tenant(read.who) is None \
                and not await self._confirmed(read.who):
            return await self._refused(Refusal(403, "workspace_not_served"),
                                       occurrence=_occurrence(body))
        return read

    async def _confirmed(self, who: payloads.Who) -> bool:
        """A distributed app's view of its installations may be older than an install another
        process just made: before a callback is refused as unserved, the installations of its
        workspace are confirmed against the database, and the tenant asked again."""
        installations = self.kit.channel.installations
        if installations is None or not await installations.confirm(
                team_id=who.team_id, enterprise_id=who.enterprise_id):
            return False
        return self.kit.tenant(who) is not None

    async def _refused(self, refusal: Refusal, *, occurrence: str) -> Refusal:
        out_of_scope = refusal.status == 403
        extra = {"status": str(refusal.status),
                 **({"field": refusal.field} if refusal.field else {})}
        await self.audit.emit(AuditEvent(
            type="callback_refused", at=self.kit.clock.now(), clarification_id="-",
            reason_code=ReasonCode.TENANT_SCOPE_MISMATCH if out_of_scope else None,
            channel="slack", extra=extra, occurrence=occurrence,
            message="A callback came from a Slack workspace mapped to no tenant. Refused."
            if out_of_scope else "A signed callback was not a well-formed Slack interaction. "
            "Refused.",
        ), to_core=False)
        return refusal

    async def _edge(self, req: AsyncBoltRequest, body: dict[str, Any],
                    next: Callable[[], Awaitable[BoltResponse]]) -> BoltResponse:
        """Bolt middleware, HTTP and Socket Mode: Socket Mode callbacks get the checks HTTP ones
        had in ``handle_http`` (a refused one is acknowledged, so Slack does not resend it, and
        reaches no listener); every log line of the callback's work, in the listeners and the
        tasks they start, carries the callback's ids."""
        if req.mode == "socket_mode":
            read = await self._screen(body)
            if isinstance(read, Refusal):
                log.info("slack.request_refused", status=read.status, reason=read.reason,
                         field=read.field, mode="socket")
                return BoltResponse(status=200, body="")
            if refused := await self._limited(read, answer=_is_answer_read(read)):
                log.info("slack.request_refused", status=429, reason=refused.limit.value,
                         mode="socket")  # not acknowledged: Slack tells the person, as in HTTP
                return BoltResponse(status=503 if refused.limit is Limit.TASKS else 429, body="")
            req.context[listening.READ_KEY] = read
        # bound, not scoped: bolt runs the listeners after its middleware chain has returned;
        # each callback starts from a clean context (handle_http clears it for HTTP mode too)
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(**log_ids(body, self.kit.codec))
        return await next()

    def routes(self) -> list[web.RouteDef]:
        return [web.post(EVENTS_PATH, self.handle_http)]

    # ---------------------------------------------------------------- listeners

    def register(self) -> None:
        """The edge's middleware and the answer click here; every other listener in its
        handler module, given the kit."""
        app = self.kit.app
        app.use(self._edge)
        app.action(_ANSWER_ACTION)(self.on_answer)
        app.action(blocks.OPEN_DOCUMENT_ACTION)(listening.ack_only)
        for handlers in (digests, forms, declines, steward, home):
            handlers.register(self.kit)

    async def on_answer(self, ack: Any, context: Any, request: AsyncBoltRequest) -> None:
        click = listening.read(context).click
        if click is not None and _is_answer(click):
            await self._accept_click(click, listening.signed_stamp(request))
        await ack()

    async def _accept_click(self, click: payloads.Click, signed_stamp: str | None) -> None:
        """Durable (and ordered) before Slack hears "ok": one local store call."""
        assert click.ref.clarification_id is not None
        acted = click.action_ts or (signed_stamp if signed_stamp and signed_stamp.isdigit()
                                    else None)
        cb = self.kit.callback(click.who, click.ref.clarification_id, click.ref.card_ref,
                               click.message_ref, answer_index=click.ref.candidate,
                               acted_at=payloads.micros(acted) if acted else 0)
        await self.kit.take(cb)

    async def drain(self) -> None:
        """Wait for the work still running after its acknowledgement (tests, shutdown)."""
        await self.kit.tasks.drain()


def _occurrence(body: dict[str, Any]) -> str:
    """A refused callback's occurrence: a resent one (Slack's retry, a replay) is the same,
    another one not (worked out only for a refusal, never for a callback let through)."""
    return occurrence_of("slack", json.dumps(body, sort_keys=True, default=str))


def _is_answer(click: payloads.Click) -> bool:
    return click.ref.kind is ActionKind.ANSWER and click.ref.clarification_id is not None \
        and _ANSWER_ACTION.fullmatch(click.action_id) is not None


def _is_answer_read(read: Read) -> bool:
    return read.click is not None and _is_answer(read.click)


class _ClientGiven(logging.Filter):
    """bolt reads SLACK_BOT_TOKEN from the environment when no token is passed, then warns at
    every start that the client given wins over it: the client carries that very token, so
    the warning says nothing an operator can act on."""

    said = warning_client_prioritized_and_token_skipped()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != self.said


_BOLT_APP_LOGGER = logging.getLogger(f"slack_bolt.{AsyncApp.__name__}")
if not any(isinstance(f, _ClientGiven) for f in _BOLT_APP_LOGGER.filters):
    _BOLT_APP_LOGGER.addFilter(_ClientGiven())


def build_slack_adapter(
    *, signing_secret: str, client: Any, answers: AnswerService, interactions: Interactions,
    channel: SlackChannel, codec: ActionCodec, audit: Audit, clock: Clock,
    refusals: LastingRefusals, signature_clock: Clock | None = None, limits: Limits | None = None,
    flow: AsyncOAuthFlow | None = None,
) -> SlackAdapter:
    """The bolt app with the bot's listeners; ``signature_clock`` defaults to ``clock``;
    ``limits`` none unless given (``mount`` gives the settings'). With ``flow`` (a distributed
    app, ``adapters.slack.oauth``) bolt authorizes each callback with its installation's token
    and the client carries none."""
    # the client carries the bot token (bolt reads it from there)
    # bolt's own signature check is off: handle_http verifies every HTTP request once, before
    # bolt sees it, and Socket Mode requests are not signed. process_before_response: every
    # listener acknowledges within a local store call and hands slow work to the outbox or a
    # task, so bolt need not poll (every 10 ms) for the ack. Named here: without a name bolt
    # reads the whole call stack (inspect.stack(), source lines included) for its caller's file
    app = AsyncApp(name="clarify-bot", signing_secret=signing_secret, client=client,
                   request_verification_enabled=False, process_before_response=True,
                   raise_error_for_unhandled_request=False, oauth_flow=flow)
    verifier = SignatureVerifier(signing_secret, clock=EpochClock(signature_clock or clock))
    kit = Kit(app=app, answers=answers, interactions=interactions, channel=channel, codec=codec,
              clock=clock, refusals=refusals)
    adapter = SlackAdapter(kit=kit, audit=audit, verifier=verifier,
                           limits=limits or Limits.off(clock))
    adapter.register()
    return adapter
