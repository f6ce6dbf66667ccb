"""Away: a person their platform shows as away is never waited for (docs/delivery.md, "Away").

A platform that can tell (a channel that is ``bot.channel.Absences``: Slack's status and Do Not
Disturb, Teams' presence) is asked, with patience, whether the person is away now and until
when. What follows is decided here, once, for every platform (``AwayCheck.decide``):

- away past the moment the question would move on (the card's send plus the escalation window,
  ``bot.engine.reminders.moves_on``), or away with no return date: passed over at once for the
  next candidate, a skip with ``PERSON_AWAY`` (``skip``), the return date kept for the steward's
  cards (``remember``, ``steward_skips``);
- back before it: held (as for working hours) until their first working hour after their
  return (``back``), then asked;
- a critical question never waits for anyone away: passed over at once.

A lookup is kept in this process for ``PROCESS_SECONDS`` (at most ``PROCESS_KEPT`` people); one
the platform cannot answer in ``PATIENCE_SECONDS``, or refuses, counts as *not away* (never a
held card) and is not asked again for ``MISSED_SECONDS``. An ``Away`` whose return has passed is
no longer away. Nothing of what the platform showed (a status's text, its emoji) is kept or
logged: only whether it says away, until when, and the value-free source word.

``StatusWords`` is the pure matching of a status (its emoji, whole words of its text) against
``[clarify.away]``, for the adapters that read one.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

import structlog

from bot.audit import SkipPair
from bot.channel import Absences, Address, Away, ChannelError, CredentialsRejected
from bot.core.models import ReasonCode, Severity
from bot.core.models.enums import EXTENSION_CODES
from bot.engine.trail import Skip
from bot.engine.zones import PersonZone, Zones
from bot.metrics import REGISTRY
from bot.settings import AwaySettings
from bot.store.base import KeyValues
from cards.views import SkippedCandidate

log = structlog.get_logger("clarify.away")

PROCESS_SECONDS = 600.0  # a person's away lookup is kept in this process this long
PROCESS_KEPT = 10_000  # lookups kept at most (least recently used go first)
PATIENCE_SECONDS = 2.0  # how long a card waits for the platform to say
MISSED_SECONDS = 60.0  # a lookup that failed is not tried again for this long (not away)
# the bot's record of an away skip, for the steward's cards: "clarification|person" -> JSON
RECORDS = "away-skips"
RECORD_TTL_SECONDS = 90 * 86400  # longer than any ranking's windows
CAUSE_GROUP = "away"  # the reach record's cause group (``bot.reach.causes.FIXES``)
# the sources a platform names (``bot.channel.Away.source``), in words for the trail
SOURCES: dict[str, str] = {"slack_status": "Slack status", "slack_dnd": "Slack Do Not Disturb",
                           "teams_presence": "Teams presence",
                           "teams_auto_reply": "automatic reply"}
OTHER_SOURCE = "other"  # a source word this bot does not know, as a metric's label


class Verdict(StrEnum):
    ASK = "ask"  # not away (or not known to be): asked as usual
    HOLD = "hold"  # back before the question would move on: held until ``Decision.until``
    PASS = "pass"  # passed over at once for the next candidate


class Action(StrEnum):
    """What the bot did about a person away (``clarify_away_total``)."""

    PASSED_OVER = "passed_over"
    HELD = "held"
    REMINDER_SKIPPED = "reminder_skipped"
    REMINDER_DEFERRED = "reminder_deferred"
    DIGEST_HELD = "digest_held"
    DIGEST_PASSED_OVER = "digest_passed_over"


class Lookup(StrEnum):
    """How an away lookup ended (``clarify_away_lookups_total``)."""

    AWAY = "away"
    PRESENT = "present"
    UNKNOWN = "unknown"  # the platform refused or failed: not away
    LATER = "later"  # not answered in time: not away


REGISTRY.preset("clarify_away_total", action=Action, source=(*SOURCES, OTHER_SOURCE))
REGISTRY.preset("clarify_away_lookups_total", outcome=Lookup)


def source_label(away: Away) -> str:
    """The source as a metric's label: one of ``SOURCES``, else ``other``."""
    return away.source if away.source in SOURCES else OTHER_SOURCE


def counted(action: Action, away: Away) -> None:
    REGISTRY.inc("clarify_away_total", action=action.value, source=source_label(away))


@dataclass(frozen=True, slots=True)
class Decision:
    """What follows for one candidate: asked, held until ``until`` (their first working hour
    back), or passed over (``away`` says until when and from where; ``critical``: because a
    critical question never waits)."""

    verdict: Verdict
    away: Away | None = None
    until: datetime | None = None
    critical: bool = False


ASK = Decision(Verdict.ASK)


def current(away: Away | None, now: datetime) -> Away | None:
    """``away`` while it lasts: None once its return has passed."""
    if away is None or (away.until is not None and away.until <= now):
        return None
    return away


@dataclass
class AwayCheck:
    """The engine's one: every away lookup and decision of the process."""

    channels: Mapping[str, object]
    settings: AwaySettings
    zones: Zones  # the tenants' working hours: a return is held to the first one after it
    monotonic: Callable[[], float] = time.monotonic
    _near: OrderedDict[str, tuple[float, Away | None]] = field(default_factory=OrderedDict,
                                                               repr=False)

    async def lookup(self, address: Address, now: datetime) -> Away | None:
        """Whether the person at ``address`` is away now: from this process when asked in the
        last ``PROCESS_SECONDS``, else from their platform; None when they are not, when their
        platform cannot tell (no such platform, a refusal, no answer in time) or when the rule
        is off."""
        if not self.settings.enabled:
            return None
        channel = self.channels.get(address.platform)
        if not isinstance(channel, Absences):
            return None
        key = f"{address.platform}|{address.user_id}"
        near = self._near.get(key)
        if near is not None and self.monotonic() < near[0]:
            self._near.move_to_end(key)
            return current(near[1], now)
        found, kept = await self._ask(channel, address)
        _keep(self._near, key, (self.monotonic() + kept, found))
        return current(found, now)

    async def _ask(self, channel: Absences, address: Address) -> tuple[Away | None, float]:
        """The platform's answer and how long it is kept."""
        try:
            found = await asyncio.wait_for(channel.away(address), PATIENCE_SECONDS)
        except CredentialsRejected:
            raise
        except ChannelError as exc:  # refused or failed: not away, asked again in a while
            REGISTRY.inc("clarify_away_lookups_total", outcome=Lookup.UNKNOWN.value)
            log.info("away.unknown", platform=address.platform, reason=exc.reason)
            return None, MISSED_SECONDS
        except TimeoutError:  # paced (a burst of new people): not away this time
            REGISTRY.inc("clarify_away_lookups_total", outcome=Lookup.LATER.value)
            log.info("away.later", platform=address.platform)
            return None, MISSED_SECONDS
        outcome = Lookup.AWAY if found is not None else Lookup.PRESENT
        REGISTRY.inc("clarify_away_lookups_total", outcome=outcome.value)
        return found, PROCESS_SECONDS

    def forget(self) -> None:
        """Drop what this process keeps (tests; an erasure run in this process)."""
        self._near.clear()

    def back(self, tenant_id: str, zone: PersonZone, away: Away) -> datetime | None:
        """When the person can be asked again: their first working hour at or after their
        return (the return itself when working hours are off); None without a return date."""
        if away.until is None:
            return None
        if not self.zones.enabled:
            return away.until
        return self.zones.hours(tenant_id).next_open(away.until, zone.zone)

    async def decide(self, *, tenant_id: str, severity: Severity, address: Address,
                     zone: PersonZone, now: datetime, moves_on_at: datetime) -> Decision:
        """Asked, held or passed over (the module's rules); ``moves_on_at``: when the question
        would move on were the card sent now."""
        away = await self.lookup(address, now)
        if away is None:
            return ASK
        if severity is Severity.CRITICAL:
            return Decision(Verdict.PASS, away, critical=True)
        back = self.back(tenant_id, zone, away)
        if back is None or back >= moves_on_at:
            return Decision(Verdict.PASS, away)
        return Decision(Verdict.HOLD, away, until=back)


# ---------------------------------------------------------------- the skip and its record


def said(away: Away) -> str:
    """What the trail says of the person, in place of the reason code's own words: "was away
    until 14 December 2026" (the return's day in UTC), "was away with no return date"."""
    if away.until is None:
        return "was away with no return date"
    day = away.until.astimezone(UTC).date()
    return f"was away until {day.day} {day:%B} {day.year}"


def skip(person_id: str, decision: Decision, platform: str, *, where: str = "") -> Skip:
    """The skip of a person passed over for being away: ``PERSON_AWAY`` (the spec's code on a
    core without the extension, ``bot.core.encoding``), the source and why in words."""
    away = decision.away
    assert away is not None
    why = "a critical question never waits" if decision.critical else (
        "no return date" if away.until is None else "back after the question would move on")
    return Skip(person_id, ReasonCode.PERSON_AWAY,
                f"{SOURCES.get(away.source, 'their platform')}; {why}{where}",
                said=said(away), platform=platform, cause_group=CAUSE_GROUP)


async def remember(kv: KeyValues, clarification_id: str, person_id: str, away: Away) -> None:
    """The bot's record of the skip: the steward's cards name the return date from it, also
    where the core's trail holds the spec's code in its place."""
    value = {"until": away.until.isoformat() if away.until is not None else None,
             "source": source_label(away)}
    await kv.kv_put(RECORDS, f"{clarification_id}|{person_id}", json.dumps(value),
                    ttl_seconds=RECORD_TTL_SECONDS)


# the codes under which the core's trail may hold an away skip: its own, and the spec's in its
# place on a core without the extension
_CODES = frozenset({ReasonCode.PERSON_AWAY, EXTENSION_CODES[ReasonCode.PERSON_AWAY][1]})


async def steward_skips(kv: KeyValues, clarification_id: str, skips: Iterable[SkipPair],
                        names: Mapping[str, str]) -> tuple[SkippedCandidate, ...]:
    """The skips as the steward reads them: each person's name and reason code, a person the
    bot passed over for being away as ``PERSON_AWAY`` with their return date (whatever code
    the core's trail holds for it), each (person, reason) once, in order."""
    shown: dict[tuple[str, ReasonCode], SkippedCandidate] = {}
    for pair in skips:
        name = names.get(pair.person_id, pair.person_id)
        entry = SkippedCandidate(person=name, reason=pair.reason_code)
        if pair.reason_code in _CODES:
            raw = await kv.kv_get(RECORDS, f"{clarification_id}|{pair.person_id}")
            if raw is not None:
                entry = SkippedCandidate(person=name, reason=ReasonCode.PERSON_AWAY,
                                         until=_when(json.loads(raw).get("until")))
        shown.setdefault((pair.person_id, entry.reason), entry)
    return tuple(shown.values())


def _when(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None


# ---------------------------------------------------------------- what a status says


@dataclass(frozen=True, slots=True)
class StatusWords:
    """Whether a status says away by ``[clarify.away]``: its emoji is one of ``status_emoji``
    (a skin tone or other modifier after it aside), or its text holds one of ``status_text`` as
    whole words, in any case. Pure: an adapter hands it what its platform shows."""

    emoji: frozenset[str]
    text: re.Pattern[str] | None

    @classmethod
    def of(cls, settings: AwaySettings) -> StatusWords:
        words = [w.casefold() for w in settings.status_text if w.strip()]
        pattern = None
        if words:
            pattern = re.compile(r"(?<!\w)(?:" + "|".join(
                re.escape(w) for w in sorted(words, key=len, reverse=True)) + r")(?!\w)")
        return cls(emoji=frozenset(e.strip().casefold() for e in settings.status_emoji),
                   text=pattern)

    def away(self, emoji: str | None, text: str | None) -> bool:
        if emoji and _first_emoji(emoji.strip().casefold()) in self.emoji:
            return True
        return bool(text and self.text is not None and self.text.search(text.casefold()))


def _first_emoji(emoji: str) -> str:
    """``:palm_tree:`` of ``:palm_tree::skin-tone-2:``; a character emoji as it is."""
    if emoji.startswith(":") and "::" in emoji:
        return emoji.split("::", 1)[0] + ":"
    return emoji


def _keep[V](kept: OrderedDict[str, V], key: str, value: V) -> None:
    """``kept[key] = value``, the most recent last, at most ``PROCESS_KEPT`` kept."""
    kept[key] = value
    kept.move_to_end(key)
    while len(kept) > PROCESS_KEPT:
        kept.popitem(last=False)

