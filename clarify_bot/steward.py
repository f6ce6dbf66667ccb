"""`clarify-bot clarify …`: the operator's and steward's fallback (spec §7, changelog v0.8).

Every command talks to the core's REST API with the operator's API key (``CLARIFY_BOT_API_KEY``),
never the bot's service token: the core then applies its own rules to the key's person (the read
gate, the responder assertion rule, steward-only overrides and erasure), and the CLI only shows
what it decided. Answers are recorded as the key's person with channel ``cli``; a refusal prints
the core's error code and message and records nothing. ``--json`` prints one object matching
``clarify_bot/schemas/clarify-cli.schema.json``.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import click
from pydantic import BaseModel

from bot.core import errors as e
from bot.core.extensions import Extension
from bot.core.models import (
    AnswerCustomInput,
    AnswerOutcome,
    AnswerRequest,
    ClarificationState,
    ClarificationSummary,
    ErasureReport,
    PersonAliases,
    Severity,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from bot.core.paging import Bound
from clarify_bot import steward_output as out
from clarify_bot.errors import OneLineGroup

STATES = [s.value for s in ClarificationState]
SEVERITIES = [s.value for s in Severity]
# `clarify ls` follows the core's cursors until --limit is reached, the list ends, or this long
LS_SECONDS = 30.0
# `clarify queue` follows each list to its end within this; past it, it says how to list the rest
QUEUE_BOUND = Bound(pages=1000, items=100_000, seconds=60.0)


class Ctx:
    def __init__(self, config: Path | None, json_out: bool) -> None:
        self.config = config
        self.json = json_out


def _settings(ctx: Ctx) -> Any:
    from bot import pseudonym
    from bot.settings import SettingsError, load_settings

    try:
        settings = load_settings(ctx.config)
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None
    pseudonym.configure_from(settings.secrets)  # the erasure finds what serve named with it
    return settings


def _client(settings: Any) -> Any:
    from bot.core.client import CoreClient, RetryPolicy

    key = settings.secrets.api_key
    if key is None:
        raise click.ClickException(
            "set CLARIFY_BOT_API_KEY to your API key (the bot's service token is never used "
            "here: the core records what you do as the key's person)")
    return CoreClient(base_url=settings.core.url, token=key, retry=RetryPolicy(max_attempts=2))


def _run(ctx: Ctx, command: str, work: Callable[[Any, Any], Awaitable[tuple[BaseModel, str]]]
         ) -> None:
    """Run one command against the core; print its text or JSON; a refusal exits 1."""
    settings = _settings(ctx)

    async def go() -> tuple[BaseModel, str]:
        async with _client(settings) as core:
            return await work(core, settings)

    try:
        model, text = asyncio.run(go())
    except e.CoreAPIError as exc:
        message = getattr(exc, "message", str(exc))
        if isinstance(exc, e.StewardRequired) and command in STEWARD_SCOPE:
            message = (f"clarify {command} needs steward scope (spec §7): this API key is not "
                       "bound to a steward; use a steward's key, or `clarify ls` and `clarify "
                       "show` with this one")
        error = out.CliError(code=exc.code or "UNEXPECTED", status=exc.status, message=message)
        if ctx.json:
            click.echo(out.dump(out.ErrorOutput(command=command, error=error)))
            raise SystemExit(1) from None
        if isinstance(exc, e.StewardRequired) and command in STEWARD_SCOPE:
            raise click.ClickException(f"{error.message} ({error.status} {error.code})"
                                       ) from None
        raise click.ClickException(  # the core's words, printed as text
            f"refused by the core: {error.status} {out.shown(error.code)}: "
            f"{out.shown(error.message)}") from None
    except e.CoreTransportError:
        raise click.ClickException(f"cannot reach the core at {settings.core.url}") from None
    click.echo(out.dump(model) if ctx.json else text)


@click.group("clarify", cls=OneLineGroup)
@click.option("--config", type=click.Path(path_type=Path, exists=True), default=None,
              help="The settings file (default: $CLARIFY_BOT_CONFIG); gives the core's URL.")
@click.option("--json", "json_out", is_flag=True, help="One JSON object (see the schema).")
@click.pass_context
def clarify(click_ctx: click.Context, config: Path | None, json_out: bool) -> None:
    """Read, answer and review clarifications with your API key (CLARIFY_BOT_API_KEY)."""
    from bot.logs import configure_logging

    configure_logging(level="error", fmt="console")  # the output is the command's, not logs
    click_ctx.obj = Ctx(config, json_out)


@clarify.command("ls")
@click.option("--state", type=click.Choice(STATES))
@click.option("--severity", type=click.Choice(SEVERITIES))
@click.option("--document", help="Only this source document's id.")
@click.option("--since", type=click.DateTime(["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S"]),
              help="Only those updated at or after this UTC date or time.")
@click.option("--limit", type=click.IntRange(1, 200), default=50, show_default=True,
              help="List up to this many, following the core's pages (a page is shown whole).")
@click.option("--cursor", help="Continue where a previous listing stopped (its nextCursor).")
@click.pass_obj
def ls(ctx: Ctx, state: str | None, severity: str | None, document: str | None,
       since: datetime | None, limit: int, cursor: str | None) -> None:
    """List clarifications, newest first."""

    async def work(core: Any, _: Any) -> tuple[BaseModel, str]:
        after = since.replace(tzinfo=UTC) if since else None
        listing = await core.walk_clarifications(
            bound=Bound(pages=limit, items=limit, seconds=LS_SECONDS), start=cursor,
            state=state, severity=severity, document_id=document, since=after)
        items = _filtered(listing.items, document=document, since=after)
        text = out.list_text(items, empty="no clarifications match")
        if listing.next_cursor:
            again = _ls_args(state=state, severity=severity, document=document, since=since,
                             limit=limit)
            text += (f"\nmore: clarify-bot clarify ls{again} --cursor "
                     f"{shlex.quote(listing.next_cursor)} lists the next ones")
        elif not listing.complete:
            text += "\n" + out.CURSOR_REPEATED
        return out.ListOutput(command="ls", items=items, nextCursor=listing.next_cursor,
                              complete=listing.complete), text

    _run(ctx, "ls", work)


def _ls_args(*, state: str | None, severity: str | None, document: str | None,
             since: datetime | None, limit: int) -> str:
    """The options of an ``ls`` again, to continue it with ``--cursor``."""
    given = [("--state", state), ("--severity", severity), ("--document", document),
             ("--since", since.strftime("%Y-%m-%dT%H:%M:%S") if since else None),
             ("--limit", str(limit))]
    return "".join(f" {flag} {shlex.quote(value)}" for flag, value in given if value)


def _filtered(items: list[ClarificationSummary], *, document: str | None,
              since: datetime | None) -> list[ClarificationSummary]:
    """The filters a core beyond the baseline applies, checked here too: a baseline core
    ignores ``documentId`` and ``since`` and its items do not say, so the command says it
    cannot filter rather than list what does not match."""
    if document is not None:
        if any(i.document_id is None for i in items):
            raise click.ClickException(
                "this core cannot filter by document (--document is beyond the baseline "
                "contract it offers)")
        items = [i for i in items if i.document_id == document]
    if since is not None:
        if any(i.updated_at is None for i in items):
            raise click.ClickException(
                "this core cannot filter by time (--since is beyond the baseline contract it "
                "offers)")
        items = [i for i in items if i.updated_at is not None and i.updated_at >= since]
    return items


@clarify.command("show")
@click.argument("clarification_id")
@click.pass_obj
def show(ctx: Ctx, clarification_id: str) -> None:
    """One clarification with its responses, delivery history and events."""
    _run(ctx, "show", _shown("show", clarification_id))


Work = Callable[[Any, Any], Awaitable[tuple[BaseModel, str]]]


def _shown(command: Literal["show", "review"], clarification_id: str) -> Work:
    async def work(core: Any, _: Any) -> tuple[BaseModel, str]:
        c = await core.get_clarification(clarification_id=clarification_id)
        try:
            h = await core.get_delivery_history(clarification_id=clarification_id)
        except e.ExtensionUnavailable:
            h = None  # a core without the history extension: shown without it, and said so
        return out.ShowOutput(command=command, clarification=c, history=h), out.show_text(c, h)

    return work


def _scoped(work: Work) -> Work:
    """``work`` after the steward-scope check."""
    async def scoped(core: Any, settings: Any) -> tuple[BaseModel, str]:
        await steward_scope(core)
        return await work(core, settings)

    return scoped


def _answer_options(f: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed([
        click.option("--index", type=click.IntRange(0), help="The candidate's number (see show)."),
        click.option("--date", "from_", type=click.DateTime(["%Y-%m-%d"]),
                     help="A date of your own: the first valid day."),
        click.option("--to", "to", type=click.DateTime(["%Y-%m-%d"]),
                     help="With --date: the last valid day (inclusive)."),
        click.option("--text", help="A date in words: '12 June 2026', '2026-06', 'Q3 2026'."),
    ]):
        f = option(f)
    return f


def _request(index: int | None, from_: datetime | None, to: datetime | None, text: str | None,
             **more: Any) -> AnswerRequest:
    if sum(x is not None for x in (index, from_, text)) != 1:
        raise click.UsageError("give exactly one of --index, --date or --text")
    if to is not None and from_ is None:
        raise click.UsageError("--to needs --date")
    custom = None
    if index is None:
        after = (to.date() + timedelta(days=1)).isoformat() if to else None  # exclusive end
        custom = AnswerCustomInput(
            valid_from=from_.date().isoformat() if from_ else None, valid_to=after,
            source_text=text)
    return AnswerRequest(answer_index=index, answer_custom=custom, channel=ContractChannel.CLI,
                         **more)


def _answered(command: Literal["answer", "override"], clarification_id: str,
              request: AnswerRequest) -> Work:
    async def work(core: Any, _: Any) -> tuple[BaseModel, str]:
        receipt = await core.answer_clarification(clarification_id=clarification_id,
                                                  request=request)
        r = receipt.result
        words = out.RESULT_WORDS.get(r.outcome.value, r.outcome.value)
        if r.replayed:
            words = "Already recorded (the same answer again): " + words
        text = f"{clarification_id}: {words}\nstate: {out.STATE_WORDS[r.state.value]}"
        attestation = r.outcome in (AnswerOutcome.ATTESTATION,
                                    AnswerOutcome.CONFLICTING_ATTESTATION)
        kept = None
        if request.note is not None:  # a core without the answer-note extension drops it
            kept = core.offers(Extension.ANSWER_NOTE)
            if not kept:
                text += "\nnote: not kept: this core does not keep a note with an answer"
        return out.AnswerOutput(command=command, result=r, httpStatus=receipt.http_status,
                                attestation=attestation, noteKept=kept), text

    return work


@clarify.command("answer")
@click.argument("clarification_id")
@_answer_options
@click.option("--note", help="A note kept with your answer.")
@click.option("--responder", help="Only ever yourself: the core refuses anyone else.")
@click.pass_obj
def answer(ctx: Ctx, clarification_id: str, index: int | None, from_: datetime | None,
           to: datetime | None, text: str | None, note: str | None,
           responder: str | None) -> None:
    """Answer as your key's person (recorded with channel cli)."""
    request = _request(index, from_, to, text, note=note, responder=responder)
    _run(ctx, "answer", _answered("answer", clarification_id, request))


# the commands that need a steward's key (spec §7: "review requires steward scope"); the core's
# attention list is the check (403 STEWARD_REQUIRED for any other key)
STEWARD_SCOPE = ("queue", "review", "override")


async def steward_scope(core: Any) -> None:
    """Raises StewardRequired unless the key is a steward's: the core's attention list says
    (a core without the attention extension cannot: then nothing is checked here, and the
    queue is what the key may list anyway; docs/operations.md)."""
    if core.offers(Extension.ATTENTION):
        try:
            await core.list_attention(limit=1)
        except e.ExtensionUnavailable:
            pass


def _queue(ctx: Ctx, command: str) -> None:
    async def work(core: Any, _: Any) -> tuple[BaseModel, str]:
        # GET /v1/attention, or the clarification list with the spec's filters without it
        listing = await core.attention_queue(bound=QUEUE_BOUND)
        if listing.complete:
            text = out.list_text(listing.items, empty="nothing needs a steward")
        else:
            bound = f"{QUEUE_BOUND.pages} pages or {QUEUE_BOUND.seconds:.0f} s"
            text = (out.list_text(listing.items, empty="nothing needs a steward in what was "
                                  "read") + "\n" + out.QUEUE_CUT.format(bound=bound))
        return out.ListOutput(command="queue", items=listing.items,
                              complete=listing.complete), text

    _run(ctx, command, work)


@clarify.command("queue")
@click.pass_obj
def queue(ctx: Ctx) -> None:
    """What needs a steward: conflicted, expired, dead-lettered; urgent ones still open."""
    _queue(ctx, "queue")


@clarify.command("review")
@click.argument("clarification_id", required=False)
@click.option("--override", is_flag=True, help="Bind this answer as a steward (needs --note).")
@_answer_options
@click.option("--note", help="Why (required with --override; kept with the response).")
@click.pass_obj
def review(ctx: Ctx, clarification_id: str | None, override: bool, index: int | None,
           from_: datetime | None, to: datetime | None, text: str | None,
           note: str | None) -> None:
    """The queue; one item with its history; or, with --override, a steward's binding answer."""
    if clarification_id is None:
        if override:
            raise click.UsageError("--override needs a clarification id")
        _queue(ctx, "review")  # a refusal names the command typed; the listing is the queue's
        return
    if not override:
        if any(x is not None for x in (index, from_, text, note)):
            raise click.UsageError("an answer in review needs --override (or use answer)")
        _run(ctx, "review", _scoped(_shown("review", clarification_id)))
        return
    if not note or not note.strip():
        raise click.UsageError("--override needs --note: say why, it is kept with the response")
    request = _request(index, from_, to, text, note=note.strip(), steward_override=True)
    _run(ctx, "override", _answered("override", clarification_id, request))


@clarify.command("erase-attribution")
@click.option("--person", required=True, help="The person id whose attribution is erased.")
@click.option("--tenant", help="Your key's tenant (the default).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
def erase_attribution(ctx: Ctx, person: str, tenant: str | None, yes: bool) -> None:
    """Erase a person's attribution (spec OQ-5): in the core, in the bot's store and audit file."""
    if not yes:
        click.confirm(f"Erase every attribution of {person}? This cannot be undone", abort=True)

    async def work(core: Any, settings: Any) -> tuple[BaseModel, str]:
        from redis.exceptions import RedisError

        from bot.erasure import erase_bot_data, read_aliases
        from bot.store.errors import StoreError
        from clarify_bot.reach_record import kept_log as reach_log

        report: ErasureReport | None
        try:
            report = await core.erase_attribution(person_id=person, tenant_id=tenant)
            aliases: PersonAliases | None = report.aliases
        except e.ExtensionUnavailable:
            # the core cannot tombstone (nor say whether the key is a steward's): the bot's own
            # data, found from the person's aliases, with the operator's service token only
            if settings.secrets.core_token is None:
                raise click.ClickException(
                    "this core does not offer erase-attribution: erasing what the bot holds "
                    "needs the operator's service token (CLARIFY_BOT_CORE_TOKEN), and the "
                    "core's part its own tooling") from None
            report = None
            aliases = await read_aliases(settings, person_id=person, tenant_id=tenant)
        try:
            store, lines = await erase_bot_data(settings, person_id=person,
                                                aliases=aliases or PersonAliases(),
                                                reach=reach_log(settings))
        except (StoreError, RedisError, OSError, TimeoutError) as exc:
            core_part = "the core's part ran (its attribution of " + person + " is erased)" \
                if report is not None else "the core was not asked (it offers no erasure)"
            raise click.ClickException(
                f"{core_part}, but the bot's part did not: the store at redis.url "
                f"({settings.redis.url.split('@')[-1]}) cannot be reached "
                f"({type(exc).__name__}). When Redis answers, run this command again: the "
                "core's part is retry-safe (a second call changes nothing) and the bot's part "
                "runs then") from None
        result = out.ErasureOutput(command="erase-attribution", personId=person, core=report,
                                   store=store, auditLines=lines,
                                   aliasesFound=aliases is not None)
        return result, out.erasure_text(result)

    _run(ctx, "erase-attribution", work)

