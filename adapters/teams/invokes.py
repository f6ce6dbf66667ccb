"""``Action.Execute`` invokes (``adaptiveCard/action``): parse the action data once, hand the
decision to ``bot/``, answer the invoke with the card that replaces the clicked one.

Teams waits about 5 s for an invoke's answer; every invoke is answered within
``INVOKE_SECONDS`` of its handler starting, whatever the store, the core or the connector's
buckets do. An answer is made durable first (``AnswerService.take``, at most
``ACCEPT_SECONDS``), then forwarded in a task of ours until the invoke's deadline: the invoke
is answered with the refreshed card (the response is the update: no connector call, no bucket,
for the clicker's own card), while the person's other cards, other people's and the steward's
follow in the background through the paced connector. A core slower than the deadline leaves
the "being recorded" card (and "cannot be reached" only while the core is failing:
``bot.answering.waiting``), which the follow-ups update through the channel when the outcome
arrives (``bot.answering.clicks`` decides what shows). "Something else…" is validated here and
again by the core, and comes back as the form with the field's error. The digest's next page
replaces the digest card.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import structlog
from microsoft_agents.activity import Activity, AdaptiveCardInvokeResponse

from adapters.teams.references import Actor, clicked
from bot.aio import Tasks
from bot.answering import clicks
from bot.answering.answers import AnswerService, AnswerStatus, NotDurable, Wait
from bot.chat import Callback, ChatUser
from bot.clock import Clock
from bot.interaction.declines import DeclineStatus
from bot.interaction.interactions import Interactions
from cards import overrides
from cards import reach as reach_cards
from cards import teams as adaptive
from cards import text as card_text
from cards.actions import (
    OVERRIDE_NOTE_ID,
    ActionCodec,
    ActionKind,
    ActionRef,
    CustomAnswer,
    InvalidActionPayload,
    custom_input_ids,
    read_custom_answer,
    read_override_note,
)
from cards.reach_views import ReachDetailView
from cards.views import CustomError, CustomFormView, Viewer, with_locale

log = structlog.get_logger("clarify.teams")
CARD = "application/vnd.microsoft.card.adaptive"
MESSAGE = "application/vnd.microsoft.activity.message"
ERROR = "application/vnd.microsoft.error"
# Teams gives an invoke about 5 s; the bot answers within 3 s of the handler starting (the edge's
# checks before it take milliseconds), leaving the rest to the network and Teams itself
INVOKE_SECONDS = 3.0
# Teams' time for the store write that makes an answer durable (``AnswerService.take``'s
# ``respond_within``; a 503 after it): half the invoke's budget, the rest for the forward
ACCEPT_SECONDS = 1.5
DECISION_SECONDS = INVOKE_SECONDS  # what else an invoke waits for (forms, pages, declines)
VERBS = (adaptive.ANSWER_VERB, adaptive.CUSTOM_VERB, adaptive.DIGEST_NEXT_VERB,
         adaptive.REFRESH_VERB, adaptive.DECLINE_VERB, overrides.OVERRIDE_VERB,
         overrides.OVERRIDE_SUBMIT_VERB)


@dataclass
class Invokes:
    answers: AnswerService
    interactions: Interactions
    codec: ActionCodec
    clock: Clock
    tasks: Tasks = field(default_factory=lambda: Tasks("teams"))
    accept_seconds: float = ACCEPT_SECONDS
    decision_seconds: float = DECISION_SECONDS
    invoke_seconds: float = INVOKE_SECONDS

    async def on_action(self, activity: Activity, who: Actor, data: object
                        ) -> AdaptiveCardInvokeResponse:
        """The invoke's response, every card and text of it in the locale of the activity (the
        person's Teams locale)."""
        token = _READER.set(_locale_of(activity))
        try:
            return await self._on_action(activity, who, data)
        finally:
            _READER.reset(token)

    async def _on_action(self, activity: Activity, who: Actor, data: object
                         ) -> AdaptiveCardInvokeResponse:
        try:
            ref = self.codec.decode_teams_data(data)
        except InvalidActionPayload:
            return _error(400, "BadRequest", "This card's action is not one the bot sent.")
        user = who.user()
        if ref.kind is ActionKind.DIGEST_NEXT:
            return await self._next_page(user, ref)
        assert ref.clarification_id is not None
        if user is None:  # no AAD object id: nobody the core could verify
            return card(adaptive.render_outcome(_read(
                clicks.unverified(ref.clarification_id, now=self.clock.now()))))
        if ref.kind is ActionKind.ANSWER:
            return await self._answer(activity, user, ref, answer_index=ref.candidate)
        if ref.kind is ActionKind.CUSTOM_SUBMIT:
            return await self._custom(activity, user, ref, data)
        if ref.kind is ActionKind.REFRESH:
            return await self._refresh(user, ref)
        if ref.kind is ActionKind.DECLINE:
            return await self._decline(user, ref)
        if ref.kind in (ActionKind.OVERRIDE_OPEN, ActionKind.OVERRIDE_SUBMIT):
            return await self._override(activity, user, ref, data)
        return _error(400, "BadRequest", "This card's action is not one the bot sent.")

    async def on_reach(self, activity: Activity, who: Actor) -> AdaptiveCardInvokeResponse:
        """The weekly reach report's button: the detail card, for a steward; for anyone else
        the card that says there is nothing for them (``bot.interaction.reach``)."""
        token = _READER.set(_locale_of(activity))
        try:
            user = who.user()
            detail = ReachDetailView(viewer=Viewer(), steward=False) if user is None \
                else await self._within(self.interactions.reach_detail(user))
            if detail is None:  # the record or the core too slow for the invoke
                detail = ReachDetailView(viewer=Viewer(), steward=True, unavailable=True)
            return card(reach_cards.render_teams_reach_detail(_read(detail)))
        finally:
            _READER.reset(token)

    # ---------------------------------------------------------------- answers

    async def _answer(self, activity: Activity, user: ChatUser, ref: ActionRef, *,
                      answer_index: int | None = None, custom: CustomAnswer | None = None,
                      override_note: str | None = None) -> AdaptiveCardInvokeResponse:
        deadline = asyncio.get_running_loop().time() + self.invoke_seconds
        assert ref.clarification_id is not None
        where = clicked(activity, user.aad_tenant_id or "")
        cb = Callback.from_user(
            user, tenant_id=self.interactions.tenant(user), clarification_id=ref.clarification_id,
            card_ref=ref.card_ref, message_ref=str(where) if where else None,
            answer_index=answer_index,
            custom=(custom.start, custom.end, custom.note) if custom else None,
            received_at=self.clock.now(),
            acted_at=_micros(activity.timestamp or activity.local_timestamp),
            override_note=override_note)
        try:  # forwarded at once, the invoke answered with its outcome if it comes in time
            receipt = await self.answers.take(
                cb, respond_within=self.accept_seconds,
                wait=Wait(tasks=self.tasks, until=deadline, in_place=True))
        except NotDurable:
            return _error(503, "ServiceUnavailable",
                          "Your answer could not be saved. Please try again in a moment.")
        if custom is not None and receipt.verdict is AnswerStatus.INVALID:
            return await self._form(user, ref, CustomError.UNPARSEABLE, custom)
        if cb.steward_override and receipt.verdict is AnswerStatus.NOT_ALLOWED:
            return message("override.refused")  # the core refused: nothing was recorded
        shown = clicks.after_click(cb, receipt, now=self.clock.now(), reach=self.answers.reach)
        if shown.view is not None:
            return card(adaptive.render_outcome(_read(shown.view)))
        return message(shown.text_key or "answer.received")

    # ---------------------------------------------------------------- "Something else…"

    async def _custom(self, activity: Activity, user: ChatUser, ref: ActionRef, data: object
                      ) -> AdaptiveCardInvokeResponse:
        ids = custom_input_ids(ref.slot)
        values = data if isinstance(data, dict) else {}
        parsed = read_custom_answer(start=values.get(ids.start), end=values.get(ids.end),
                                    note=values.get(ids.note))
        if isinstance(parsed, CustomError):
            return await self._form(user, ref, parsed, None, values=values)
        return await self._answer(activity, user, ref, custom=parsed)

    async def _form(self, user: ChatUser, ref: ActionRef, error: CustomError,
                    entered: CustomAnswer | None, *, values: dict[str, Any] | None = None
                    ) -> AdaptiveCardInvokeResponse:
        """The form again, with the field's error under it and what was typed kept."""
        assert ref.clarification_id is not None
        question = await self._within(self.interactions.custom_form(
            user, clarification_id=ref.clarification_id, card_ref=ref.card_ref))
        if question is None:
            return message("answer.form_unavailable")
        note = entered.note if entered else str((values or {}).get(
            custom_input_ids(ref.slot).note) or "")
        form = CustomFormView(question=question, slot=ref.slot, error=error,
                              entered_from=entered.start if entered else None,
                              entered_to=entered.end if entered else None, entered_note=note)
        return card(adaptive.render_custom_form(_read(form), codec=self.codec))

    # ---------------------------------------------------------------- "Not the right person"

    async def _decline(self, user: ChatUser, ref: ActionRef) -> AdaptiveCardInvokeResponse:
        """``bot.interaction.interactions`` decides and records; the invoke answers with the
        "passed on"
        card. A decline still running at the deadline goes on in a task of ours (a repeated
        press is then one skip and shows the card)."""
        assert ref.clarification_id is not None
        task = self.tasks.spawn(self.interactions.decline(
            user, clarification_id=ref.clarification_id, card_ref=ref.card_ref, paint=False))
        done, _ = await asyncio.wait({task}, timeout=self.decision_seconds)
        if task not in done or task.cancelled() or task.exception() is not None:
            return message("decline.unavailable")
        declined = task.result()
        if declined.view is not None:
            return card(adaptive.render_outcome(_read(declined.view)))
        if declined.status is DeclineStatus.NOT_ALLOWED:
            return message(declined.told or "decline.not_available")
        return message("decline.unavailable")

    # ---------------------------------------------------------------- steward overrides

    async def _override(self, activity: Activity, user: ChatUser, ref: ActionRef, data: object
                        ) -> AdaptiveCardInvokeResponse:
        """The confirmation card with its required note (OVERRIDE_OPEN, or a submit without a
        note, which records nothing), or the override itself, forwarded like any answer."""
        assert ref.clarification_id is not None and ref.candidate is not None
        values = data if isinstance(data, dict) else {}
        note = read_override_note(values.get(OVERRIDE_NOTE_ID))
        if ref.kind is ActionKind.OVERRIDE_SUBMIT and note is not None:
            return await self._answer(activity, user, ref, answer_index=ref.candidate,
                                      override_note=note)
        form = await self._within(self.interactions.override_form(
            user, clarification_id=ref.clarification_id, card_ref=ref.card_ref,
            candidate=ref.candidate))
        if form is None:
            return message("answer.form_unavailable")
        form = replace(form, note_missing=ref.kind is ActionKind.OVERRIDE_SUBMIT)
        return card(overrides.teams_form(_read(form), codec=self.codec))

    # ---------------------------------------------------------------- the rest

    async def _next_page(self, user: ChatUser | None, ref: ActionRef
                         ) -> AdaptiveCardInvokeResponse:
        assert ref.offset is not None
        page = None if user is None else await self._within(self.interactions.digest_page(
            user, digest_ref=ref.card_ref, offset=ref.offset))
        if page is None:
            return message("digest.no_more")
        return card(adaptive.render_digest(_read(page), codec=self.codec))

    async def _refresh(self, user: ChatUser, ref: ActionRef) -> AdaptiveCardInvokeResponse:
        """Universal Actions' refresh: the question as it stands now, for this person."""
        assert ref.clarification_id is not None
        question = await self._within(self.interactions.custom_form(
            user, clarification_id=ref.clarification_id, card_ref=ref.card_ref))
        if question is None:
            return message("answer.not_available")
        return card(adaptive.render_question(_read(question), codec=self.codec))

    async def _within[T](self, work: Coroutine[Any, Any, T | None]) -> T | None:
        """What ``bot.interaction.interactions`` says inside the invoke's deadline, else None."""
        try:
            return await asyncio.wait_for(work, self.decision_seconds)
        except TimeoutError:
            return None

    async def drain(self) -> None:
        """Wait for forwards still running after their invoke was answered (tests, shutdown)."""
        await self.tasks.drain()


# The locale of the invoke being answered (the Teams activity's ``locale``): the cards and short
# texts of its response are rendered in it (``cards.views.with_locale``); None: the core's.
_READER: ContextVar[str | None] = ContextVar("teams_invoke_locale", default=None)


def _locale_of(activity: Activity) -> str | None:
    locale = getattr(activity, "locale", None)
    return locale if isinstance(locale, str) and locale.strip() else None


def _read[V](view: V) -> V:
    return with_locale(view, _READER.get())


def card(content: dict[str, Any]) -> AdaptiveCardInvokeResponse:
    return AdaptiveCardInvokeResponse(status_code=200, type=CARD, value=content)


def message(key: str) -> AdaptiveCardInvokeResponse:
    """A short text Teams shows beside the card, which stays as it is."""
    return AdaptiveCardInvokeResponse(status_code=200, type=MESSAGE,
                                      value=card_text.catalog_of(
                                          Viewer(locale=_READER.get() or "en")).text(key))


def _error(status: int, code: str, text: str) -> AdaptiveCardInvokeResponse:
    return AdaptiveCardInvokeResponse(status_code=status, type=ERROR,
                                      value={"code": code, "message": text})


def _micros(stamp: datetime | None) -> int:
    """The channel's time of the action (the activity's ``timestamp``, else its
    ``localTimestamp``, which carries its own offset): one invoke retried is one answer
    (``entry_id``), and one person's answers are ordered by it, not by arrival."""
    if stamp is None:
        return 0
    if stamp.tzinfo is None:  # a timestamp without an offset is UTC, as the channel sends it
        stamp = stamp.replace(tzinfo=UTC)
    return round(stamp.timestamp() * 1_000_000)
