"""Teams activities on ``POST /api/messages``, through the Microsoft 365 Agents SDK.

Every request is checked before any handler runs, in this order: an address that caused too many
refusals is refused unread (429, ``bot.abuse_limits``); the body is read whole (over
``MAX_BODY``: 413; not complete within ``BODY_SECONDS``: 408); the bearer token is verified
(``adapters.teams.auth``: 401, whatever the token's fault); the body is parsed once as an
activity (400); a Bot Framework token's key is endorsed for the activity's channel, the
token's ``serviceurl`` claim and the activity's serviceUrl agree, and that
URL is a Microsoft connector host (the outbound host validator: the bot's token never goes
anywhere else) (401); the activity's AAD tenant is one the settings serve (403, audited as
``TENANT_SCOPE_MISMATCH``); the person is within their rate (429) and, for an invoke, the
process is under its cap of tasks (503) (docs/reliability.md, "Abuse limits"). Then the SDK's
``CloudAdapter`` runs the ``AgentApplication``'s handlers: conversation references kept or
forgotten (``adapters.teams.references``) and ``Action.Execute`` invokes answered
(``adapters.teams.invokes``).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp import web
from microsoft_agents.activity import (
    Activity,
    ActivityTypes,
    AdaptiveCardInvokeValue,
    Attachment,
)
from microsoft_agents.hosting.aiohttp import CloudAdapter
from microsoft_agents.hosting.core import (
    AgentApplication,
    ClaimsIdentity,
    MemoryStorage,
    OutboundHostValidator,
    TurnContext,
    TurnState,
)
from microsoft_agents.hosting.core.authorization import Connections
from pydantic import ValidationError

from adapters.abuse_limits import client_address, limited
from adapters.bodies import read_body
from adapters.teams import references
from adapters.teams.auth import TokenGate, Unauthorized, Verified
from adapters.teams.invokes import VERBS, Invokes
from adapters.teams.references import Actor, NoTenant
from adapters.teams.render import CARD_CONTENT_TYPE
from bot.abuse_limits import Limit, Limits, Throttled, count_refusal
from bot.answering.answers import NOT_DURABLE_RETRY_AFTER_SECONDS
from bot.audit import Audit, AuditEvent, occurrence_of
from bot.chat import ChatUser
from bot.clock import Clock
from bot.core.models import ReasonCode
from bot.engine.lasting import LastingRefusals
from bot.interaction.interactions import Interactions, wants_queue, wants_reach
from bot.metrics import REGISTRY
from bot.store.base import Conversations
from cards import attention
from cards import reach as reach_cards
from cards.teams import ANSWER_VERB
from cards.views import Viewer, with_locale

log = structlog.get_logger("clarify.teams")
MESSAGES_PATH = "/api/messages"
# Teams activities are small (a card click, a message); attachments arrive as links
MAX_BODY = 128 * 1024
BODY_SECONDS = 10.0
_EDGE = "clarify.edge"  # the turn state's key for what the edge read: (tenant, Actor)
ACTION_INVOKE = "adaptiveCard/action"  # an Adaptive Card's Action.Execute, as Teams names it
ACTION_EXECUTE = "Action.Execute"


@dataclass
class TeamsAdapter:
    gate: TokenGate
    cloud: CloudAdapter
    app: AgentApplication[TurnState]
    hosts: OutboundHostValidator
    invokes: Invokes
    interactions: Interactions
    conversations: Conversations  # each person's 1:1 conversation, for proactive sends
    refusals: LastingRefusals  # a lasting refusal of Teams ends when the person is seen here
    audit: Audit
    clock: Clock
    limits: Limits
    body_seconds: float = BODY_SECONDS

    # ---------------------------------------------------------------- the edge

    async def handle_http(self, request: web.Request) -> web.Response:
        started = time.perf_counter()
        structlog.contextvars.clear_contextvars()
        try:
            return await self._handle_http(request)
        finally:
            REGISTRY.observe("clarify_ack_seconds", time.perf_counter() - started,
                             platform="teams")

    async def _handle_http(self, request: web.Request) -> web.Response:
        address = client_address(request, self.limits.proxy_hops)
        if (by_ip := self.limits.ip_refused("teams", address)) is not None:
            return limited(by_ip)  # refused unread: this address sent too much junk
        checked = await self._checked(request)
        if isinstance(checked, web.Response):
            if checked.status in (400, 401, 408, 413):  # refused at or before verification
                self.limits.ip_failed(address)
            return checked
        activity, claims, who = checked
        tenant = self.interactions.tenant(ChatUser(platform="teams", user_id="-",
                                                   aad_tenant_id=who.aad_tenant_id))
        if tenant is None:
            return await self._out_of_scope(activity)
        if refused := await self._limited(activity, who):
            return limited(refused)
        structlog.contextvars.bind_contextvars(activity=str(activity.type)[:40],
                                               teams_user=who.aad_object_id or "-")
        if (data := _answer_data(activity)) is not _NOT_AN_ANSWER:
            return await self._answer(activity, who, data)
        return await self._turn(activity, claims.identity, (tenant, who))

    async def _answer(self, activity: Activity, who: Actor, data: object) -> web.Response:
        """An answer button's invoke, the one activity that comes in bursts: answered here, as
        the SDK's ``Action.Execute`` route would answer it (the same handler, the same body),
        without the turn's connector and token clients, state and routing around it, which an
        answer never uses (docs/teams.md, "Answer invokes")."""
        try:
            answered = await self.invokes.on_action(activity, who, data)
        except Exception as exc:  # a handler's failure: Teams retries; nothing of it is shown
            log.error("teams.turn_failed", error=type(exc).__name__)
            return refusal(500, "turn_failed")
        body = answered.model_dump(mode="json", by_alias=True, exclude_none=True)
        response = web.json_response(body, status=200)
        if _refused_for_now(body):
            response.headers["Retry-After"] = str(NOT_DURABLE_RETRY_AFTER_SECONDS)
        return response

    async def _checked(self, request: web.Request
                       ) -> tuple[Activity, Verified, Actor] | web.Response:
        """The body read whole, its token verified, parsed once and checked against the token;
        else the refusal."""
        try:
            raw = await read_body(request, limit=MAX_BODY, seconds=self.body_seconds)
        except TimeoutError:
            return refusal(408, "body_incomplete")
        if raw is None:
            count_refusal(Limit.BODY, "teams")
            return refusal(413, "too_large")
        try:
            claims = await self.gate.claims(request.headers.getall("Authorization", []))
        except Unauthorized as exc:
            return refusal(401, exc.reason)
        try:
            activity = _activity(raw)
            who = references.actor(activity)
        except ValueError:
            return refusal(400, "malformed_activity")
        except NoTenant:
            return await self._out_of_scope(activity)
        try:
            self.gate.check_activity(claims, service_url=activity.service_url,
                                     aad_tenant_id=who.aad_tenant_id,
                                     channel_id=_channel(activity))
            self._host_allowed(activity)
        except Unauthorized as exc:
            return refusal(401, exc.reason)
        return activity, claims, who

    async def _limited(self, activity: Activity, who: Actor) -> Throttled | None:
        """The verified person's bucket, then (for an invoke, the one activity that starts
        tasks) the cap on outstanding tasks."""
        if who.aad_object_id is not None:
            key = f"{who.aad_tenant_id}|{who.aad_object_id.lower()}"
            if refused := await self.limits.user_refused("teams", key):
                return refused
        if activity.type != ActivityTypes.invoke:
            return None
        return self.limits.busy("teams", len(self.invokes.tasks))

    async def _turn(self, activity: Activity, claims: ClaimsIdentity,
                    edge: tuple[str, Actor]) -> web.Response:
        """The SDK's turn over the activity read above (``HttpAdapterBase.process_request``
        less what the edge did already); an invoke's answer is the response's body."""
        try:
            invoked = await self.cloud.process_activity(claims, activity, self.turn(edge))
        except PermissionError:
            return refusal(401, "not_permitted")
        except Exception as exc:  # a handler's failure: Teams retries; nothing of it is shown
            log.error("teams.turn_failed", error=type(exc).__name__)
            return refusal(500, "turn_failed")
        if activity.type != ActivityTypes.invoke:
            return web.Response(status=202)
        if invoked is None:
            return web.json_response(None, status=501)
        response = web.json_response(invoked.body, status=invoked.status or 501)
        if _refused_for_now(invoked.body):  # the answer is not durable (store down, outbox full)
            response.headers["Retry-After"] = str(NOT_DURABLE_RETRY_AFTER_SECONDS)
        return response

    def turn(self, edge: tuple[str, Actor]) -> Callable[[TurnContext], Awaitable[None]]:
        """The application's turn for one checked activity, carrying what the edge read."""
        async def turn(context: TurnContext) -> None:
            context.turn_state[_EDGE] = edge  # handlers never read the activity's ids again
            await self.app.on_turn(context)

        return turn

    def _host_allowed(self, activity: Activity) -> None:
        if not self.gate.anonymous and not (activity.service_url
                                            and self.hosts.is_allowed(activity.service_url)):
            raise Unauthorized("service_url_not_allowed")

    async def _out_of_scope(self, activity: Activity) -> web.Response:
        await self.audit.emit(AuditEvent(
            type="callback_refused", at=self.clock.now(), clarification_id="-",
            reason_code=ReasonCode.TENANT_SCOPE_MISMATCH, channel="teams",
            extra={"status": "403", "activity": str(activity.type)[:40]},
            # the activity's own id: a redelivery is the same occurrence
            occurrence=occurrence_of("teams", activity.id or uuid.uuid4().hex),
            message="A Teams activity came from an Entra tenant mapped to no tenant. Refused.",
        ), to_core=False)
        return refusal(403, "tenant_not_served")

    def routes(self) -> list[web.RouteDef]:
        return [web.post(MESSAGES_PATH, self.handle_http)]

    # ---------------------------------------------------------------- handlers

    def register(self) -> None:
        self.app.activity(ActivityTypes.installation_update)(self.on_installation)
        self.app.activity(ActivityTypes.conversation_update)(self.on_conversation_update)
        self.app.activity(ActivityTypes.message)(self.on_message)
        for verb in VERBS:
            self.app.adaptive_card.action_execute(verb)(self.on_action)
        self.app.adaptive_card.action_execute(reach_cards.REACH_VERB)(self.on_reach)

    async def on_installation(self, context: TurnContext, state: TurnState) -> None:
        """Installed: keep the 1:1 conversation; uninstalled: forget it."""
        tenant, who = _edge(context)
        if context.activity.action in references.UNINSTALLED:
            await references.forget(self.conversations, tenant_id=tenant, who=who)
            return
        await self._keep(context)

    async def on_conversation_update(self, context: TurnContext, state: TurnState) -> None:
        await self._keep(context)

    async def on_message(self, context: TurnContext, state: TurnState) -> None:
        """Keeps the conversation; in the personal chat, answers "queue" with the steward's
        attention queue (a card; a short message for anyone with nothing to see) and anything
        else with the help text."""
        await self._keep(context)
        _, who = _edge(context)
        user = who.user()
        if user is None or not references.personal(context.activity) \
                or not (context.activity.text or "").strip():
            return  # no words (a file, an adaptive card's own message): nothing was asked
        if wants_reach(context.activity.text) and self.interactions.reach_kept:
            detail = await self.interactions.reach_detail(user)
            await context.send_activity(Activity(type=ActivityTypes.message, attachments=[
                Attachment(content_type=CARD_CONTENT_TYPE,
                           content=reach_cards.render_teams_reach_detail(
                               with_locale(detail, _stated_locale(context.activity))))]))
            return
        if not wants_queue(context.activity.text):
            await context.send_activity(attention.help_text(Viewer()))
            return
        view = await self.interactions.attention(user)
        if not view.steward or view.unavailable:
            await context.send_activity(attention.summary_text(view))
            return
        card = attention.render_teams_queue(view)
        await context.send_activity(Activity(type=ActivityTypes.message, attachments=[
            Attachment(content_type=CARD_CONTENT_TYPE, content=card)]))

    async def _keep(self, context: TurnContext) -> None:
        tenant, who = _edge(context)
        await references.keep(self.conversations, self.refusals, tenant_id=tenant, who=who,
                              activity=context.activity, now=self.clock.now())

    async def on_action(self, context: TurnContext, state: TurnState, data: Any) -> Any:
        _, who = _edge(context)
        return await self.invokes.on_action(context.activity, who, data)

    async def on_reach(self, context: TurnContext, state: TurnState, data: Any) -> Any:
        _, who = _edge(context)
        return await self.invokes.on_reach(context.activity, who)

    async def drain(self) -> None:
        await self.invokes.drain()


def _edge(context: TurnContext) -> tuple[str, Actor]:
    """What the edge read of this activity: its tenant and actor (never parsed again)."""
    found = context.turn_state.get(_EDGE)
    if not isinstance(found, tuple):
        raise LookupError("an activity reached a handler without passing the edge")
    return found


# what a client says of the person beside the activity (zone, language, local time): an empty
# one is none, as a platform's zone that names no zone is none (docs/delivery.md)
_STATED = ("localTimezone", "locale", "localTimestamp")


def _stated_locale(activity: Activity) -> str | None:
    """The locale the Teams client states beside the activity, when it states one."""
    locale = getattr(activity, "locale", None)
    return locale.strip() if isinstance(locale, str) and locale.strip() else None


def _activity(raw: bytes) -> Activity:
    """The body as an activity; ValueError for anything that is not one."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise ValueError("not JSON") from None
    if not isinstance(body, dict):
        raise ValueError("not an object")
    for key in _STATED:  # an empty statement states nothing (the SDK refuses it as malformed)
        if body.get(key) == "":
            del body[key]
    try:
        activity = Activity.model_validate(body)
    # the SDK's own validators raise a bare Exception too (a channelId whose sub-channel
    # contradicts the ProductInfo entity): whatever validation raises, it is not an activity
    except Exception:  # pydantic's ValidationError, RecursionError and the SDK's own
        raise ValueError("not an activity") from None
    # what the SDK's turn needs (it raises on a turn without them: its state is keyed by
    # channel, conversation and sender, and every reply's reference names the recipient), as
    # every activity Teams sends carries them
    if not activity.type or activity.conversation is None or not activity.conversation.id \
            or not activity.channel_id or activity.from_property is None \
            or not activity.from_property.id or activity.recipient is None:
        raise ValueError("no type, channel, conversation, sender or recipient")
    return activity


_NOT_AN_ANSWER = object()


def _answer_data(activity: Activity) -> object:
    """The action data of an answer button's ``Action.Execute`` invoke, as the SDK's route for
    the answer verb would hand it to its handler; ``_NOT_AN_ANSWER`` for any other activity
    (which takes the SDK's turn, its checks and answers included)."""
    if activity.type != ActivityTypes.invoke or activity.name != ACTION_INVOKE:
        return _NOT_AN_ANSWER
    try:
        value = AdaptiveCardInvokeValue.model_validate(activity.value)
    except ValidationError:
        return _NOT_AN_ANSWER
    action = value.action
    if action is None or action.type != ACTION_EXECUTE or action.verb != ANSWER_VERB:
        return _NOT_AN_ANSWER
    return action.data


def _channel(activity: Activity) -> str | None:
    """The activity's channel as endorsements name it (``msteams``; a sub-channel aside)."""
    found = activity.channel_id
    return getattr(found, "channel", None) or (str(found) if found else None)


def _refused_for_now(body: Any) -> bool:
    """An invoke answered with a 503 error response (Teams shows its message on the card)."""
    code = body.get("statusCode") if isinstance(body, dict) else getattr(body, "status_code", None)
    return code == 503


def refusal(status: int, reason: str) -> web.Response:
    # status and reason only: never a header, a token or a byte of the body
    log.info("teams.request_refused", status=status, reason=reason)
    return web.json_response({"error": reason}, status=status)


def build_teams_adapter(*, gate: TokenGate, connections: Connections,
                        host_validator: OutboundHostValidator, invokes: Invokes,
                        interactions: Interactions, conversations: Conversations,
                        refusals: LastingRefusals, audit: Audit, clock: Clock,
                        limits: Limits | None = None) -> TeamsAdapter:
    """The SDK's adapter and application with the bot's handlers. ``host_validator`` on: a
    serviceUrl that is not a Microsoft connector host is refused before any token is sent."""
    cloud = CloudAdapter(connection_manager=connections, host_validator=host_validator)
    # the SDK's default tells the person the exception's text; a failure is the edge's 500
    cloud.on_turn_error = None  # type: ignore[assignment]
    # no typing indicator (the SDK's default starts one per turn): an invoke is answered by its
    # response and a message at once, and a typing activity would be one more connector call
    app: AgentApplication[TurnState] = AgentApplication[TurnState](
        storage=MemoryStorage(), connection_manager=connections, start_typing_timer=False)
    adapter = TeamsAdapter(gate=gate, cloud=cloud, app=app, hosts=host_validator,
                           invokes=invokes, interactions=interactions,
                           conversations=conversations, refusals=refusals,
                           audit=audit, clock=clock, limits=limits or Limits.off(clock))
    adapter.register()
    return adapter
