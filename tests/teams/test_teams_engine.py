"""The engine with the Teams channel, the reference core over HTTP and the fake Bot Connector:
a Teams-only person gets a card, the channel order is honoured per person, the reasons name what
was tried or what to do, and a crash around a send is never a second card."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

from adapters.teams.channel import MessageRef, TeamsChannel
from bot.audit import MemorySink
from bot.channel import Address, Message
from bot.channels.recording import RecordingChannel
from bot.clock import ManualClock
from bot.core.client import CoreClient
from bot.core.models import Channel as ContractChannel
from bot.core.models import ReasonCode
from bot.engine.delivery import Delivered, Deliverer
from bot.process.runtime import Engine, EngineParts, build_engine
from bot.settings import ClarifySettings
from bot.store.base import DeliveryKey
from cards.fixtures import OUTCOMES, QUESTION
from cards.teams import ANSWER_VERB
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore
from tests.engine.conftest import ACME_SLACK, new_clarification, no_sleep
from tests.teams.outbound import CODEC, ORG, SARAH, SETTINGS, TINA, Kit, address, core_with_tina

NEXT_ATTEMPT = timedelta(seconds=60) + timedelta(hours=48) + timedelta(minutes=1)


@pytest.fixture
def core(clock: ManualClock) -> ReferenceCore:
    """The acme directory plus Tina, an editor known to the core by her Teams identity only."""
    return core_with_tina(clock)


@dataclass
class Rig:
    engine: Engine
    teams: TeamsChannel
    slack: RecordingChannel
    sink: MemorySink

    def skips(self, person_id: str) -> list[Any]:
        return [ev for ev in self.sink.of("skipped") if ev.person_id == person_id]


def rig(kit: Kit, bot: CoreClient, clock: ManualClock, *, order: tuple[str, ...] = (
        "teams", "slack"), teams: TeamsChannel | None = None) -> Rig:
    teams = teams or kit.channel()
    slack = RecordingChannel()
    channels = {"teams": teams, "slack": slack}
    sink = MemorySink()
    engine = build_engine(EngineParts(
        core=bot, store=kit.store, channels={c: channels[c] for c in order},
        clarify=ClarifySettings(channels=order, hours={"enabled": False}),
        clock=clock, audit_sink=sink,
        slack=ACME_SLACK, teams=SETTINGS, sleep=no_sleep))
    return Rig(engine, teams, slack, sink)


async def test_a_teams_only_person_gets_a_card(kit: Kit, bot_client: CoreClient, truth: CoreClient,
                                               dev_client: DevCoreClient,
                                               clock: ManualClock) -> None:
    """Tina has no Slack alias; with the app installed for her, her question arrives in Teams
    as an Adaptive Card, and the core hears of a Teams delivery."""
    kit.fake.install(ORG, TINA)
    made = rig(kit, bot_client, clock)
    cid = await new_clarification(dev_client, authority={"authored_by": ["p-tina"]})
    await made.engine.worker.run_burst()
    (posted,) = kit.fake.to(TINA)
    assert posted.card is not None and posted.card["type"] == "AdaptiveCard"
    assert ANSWER_VERB in json.dumps(posted.card)
    assert made.skips("p-tina") == [] and made.slack.sent == []
    c = await truth.get_clarification(clarification_id=cid)
    assert [(d.person_id, d.channel) for d in c.deliveries] == [("p-tina", ContractChannel.TEAMS)]


@pytest.mark.parametrize(("order", "platform"), [(("teams", "slack"), "teams"),
                                                 (("slack", "teams"), "slack")])
async def test_routing_order_is_honoured_per_person(
        kit: Kit, bot_client: CoreClient, dev_client: DevCoreClient, clock: ManualClock,
        order: tuple[str, ...], platform: str) -> None:
    """Sarah is on both platforms: the first in ``clarify.channels`` gets her card."""
    kit.fake.install(ORG, SARAH)
    made = rig(kit, bot_client, clock, order=order)
    await new_clarification(dev_client, authority={"authored_by": ["p-sarah"]})
    await made.engine.worker.run_burst()
    on_teams, on_slack = kit.fake.to(SARAH), made.slack.to("p-sarah")
    assert (len(on_teams), len(on_slack)) == ((1, 0) if platform == "teams" else (0, 1))


async def test_a_person_on_neither_platform_is_told_with_the_platforms_tried(
        kit: Kit, bot_client: CoreClient, dev_client: DevCoreClient,
        clock: ManualClock) -> None:
    """Olga has no chat alias at all: NO_DELIVERY_ALIAS, naming the platforms tried."""
    made = rig(kit, bot_client, clock)
    await new_clarification(dev_client, authority={"authored_by": ["p-olga"]})
    await made.engine.worker.run_burst()
    (skip,) = made.skips("p-olga")
    assert skip.reason_code is ReasonCode.NO_DELIVERY_ALIAS
    assert "platforms tried (teams, slack)" in skip.message


async def test_a_teams_alias_on_a_slack_only_bot_is_named_unused(
        kit: Kit, bot_client: CoreClient, dev_client: DevCoreClient,
        clock: ManualClock) -> None:
    """The bot sends on Slack only: Tina is skipped, and the reason says her Teams alias is
    there but unused, instead of claiming she has no identity."""
    made = rig(kit, bot_client, clock, order=("slack",))
    await new_clarification(dev_client, authority={"authored_by": ["p-tina"]})
    await made.engine.worker.run_burst()
    (skip,) = made.skips("p-tina")
    assert skip.reason_code is ReasonCode.NO_DELIVERY_ALIAS
    assert "(slack)" in skip.message and "teams alias is unused" in skip.message


async def test_no_install_is_no_delivery_alias_telling_the_operator_to_install(
        kit: Kit, bot_client: CoreClient, dev_client: DevCoreClient,
        clock: ManualClock) -> None:
    """No reference stored and the app not installed for Tina: skipped as NO_DELIVERY_ALIAS,
    the reason says to install the app for her, and the next candidate is asked."""
    made = rig(kit, bot_client, clock)
    await new_clarification(dev_client, authority={"authored_by": ["p-tina", "p-ahmed"]})
    await made.engine.worker.run_burst()
    (skip,) = made.skips("p-tina")
    assert skip.reason_code is ReasonCode.NO_DELIVERY_ALIAS
    assert "install" in skip.message and "Teams app" in skip.message
    assert skip.facts.cause_group == "app_not_installed"  # for the reach record
    assert kit.fake.posted == [] and len(made.slack.to("p-ahmed")) == 1


async def test_a_blocked_bot_is_delivery_failed_with_its_cause(
        kit: Kit, bot_client: CoreClient, dev_client: DevCoreClient,
        clock: ManualClock) -> None:
    kit.fake.install(ORG, TINA)
    kit.fake.blocked.add(kit.fake.conversation_of(ORG, TINA))
    made = rig(kit, bot_client, clock)
    await new_clarification(dev_client, authority={"authored_by": ["p-tina"]})
    await made.engine.worker.run_burst()
    (skip,) = made.skips("p-tina")
    assert skip.reason_code is ReasonCode.DELIVERY_FAILED
    assert "MessageWritesBlocked" in skip.message
    assert (skip.facts.platform, skip.facts.cause_group) == ("teams", "blocked_or_uninstalled")


@dataclass
class DiesAfterSend(TeamsChannel):
    """The connector accepts the card, then the process dies before the engine records it."""

    died: bool = False

    async def send(self, address: Address, message: Message, *, key: DeliveryKey) -> str:
        ref = await super().send(address, message, key=key)
        if not self.died:
            self.died = True
            raise RuntimeError("process died after the connector accepted the card")
        return ref


async def test_a_crash_after_the_send_is_uncertain_and_never_resent(
        kit: Kit, bot_client: CoreClient, dev_client: DevCoreClient,
        clock: ManualClock) -> None:
    """The reservation stands without an activity id: Teams cannot be asked what was sent, so
    the next worker counts Tina's delivery as uncertain (DELIVERY_FAILED, "cannot say") and
    never sends her a second card; the next candidate is asked."""
    kit.fake.install(ORG, TINA)
    base = kit.channel()
    dying = DiesAfterSend(connector=base.connector, codec=CODEC, store=kit.store, clock=clock,
                          settings=SETTINGS, service_url=kit.fake.url)
    await new_clarification(dev_client, authority={"authored_by": ["p-tina", "p-ahmed"]})
    await rig(kit, bot_client, clock, teams=dying).engine.worker.run_burst()
    assert dying.died and len(kit.fake.to(TINA)) == 1
    clock.advance(NEXT_ATTEMPT)
    after = rig(kit, bot_client, clock)
    await after.engine.worker.run_burst()
    assert len(kit.fake.to(TINA)) == 1  # never a second card
    (skip,) = after.skips("p-tina")
    assert skip.reason_code is ReasonCode.DELIVERY_FAILED and "cannot say" in skip.message
    assert len(after.slack.to("p-ahmed")) == 1


async def test_a_recorded_activity_id_is_recovered_without_a_second_card(
        kit: Kit, clock: ManualClock) -> None:
    """The reservation plus the activity id the connector returned: a later delivery of the
    same key finds the card recorded, sends nothing, and the card is updated by that id."""
    kit.fake.install(ORG, TINA)
    channel = kit.channel()
    key = DeliveryKey("clr-r", "p-tina", 0, "question")
    await kit.store.reserve(key, worker_id="w-1", now=clock.now())
    ref = await channel.send(address(TINA), QUESTION, key=key)
    await kit.store.mark_sent(key, message_ref=ref)  # then w-1 died
    deliverer = Deliverer(ledger=kit.store, core=None,  # type: ignore[arg-type]
                          channels={"teams": channel}, worker_id="w-2", sleep=no_sleep)
    result = await deliverer.deliver(key, address(TINA), QUESTION, now=clock.now(),
                                     report=False)
    assert result.status is Delivered.EARLIER and result.message_ref == ref
    assert len(kit.fake.to(TINA)) == 1
    await channel.update(ref, next(iter(OUTCOMES.values())))
    (posted,) = kit.fake.to(TINA)
    assert posted.activity_id == MessageRef.parse(ref).activity_id and posted.versions


async def test_a_person_teams_cannot_reach_is_asked_on_their_next_platform(
        kit: Kit, bot_client: CoreClient, dev_client: DevCoreClient,
        clock: ManualClock) -> None:
    """Sarah is on both, Teams first, but the app is not installed for her: her card goes to
    Slack, the next platform in order, and nobody is skipped."""
    made = rig(kit, bot_client, clock)
    await new_clarification(dev_client, authority={"authored_by": ["p-sarah"]})
    await made.engine.worker.run_burst()
    assert kit.fake.posted == [] and len(made.slack.to("p-sarah")) == 1
    assert made.skips("p-sarah") == []


# ---------------------------------------------------------------- one person, two platforms


async def _ask_sarah(dev_client: DevCoreClient, made: Rig) -> str:
    """A high-severity question (asked directly, never digested) with Sarah first."""
    cid = await new_clarification(dev_client, authority={"authored_by": ["p-sarah", "p-ahmed"]},
                                  severity="high")
    await made.engine.worker.run_burst()
    return cid


@pytest.mark.parametrize("refusal", ["blocked", "connector_500"])
async def test_a_refusing_first_platform_falls_back_to_the_persons_next_in_this_question(
        kit: Kit, bot_client: CoreClient, truth: CoreClient, dev_client: DevCoreClient,
        clock: ManualClock, refusal: str) -> None:
    """Sarah is on Teams and Slack; Teams refuses her card (403 MessageWritesBlocked, or a 500
    through the real Teams channel and connector over HTTP): the same question goes to her on
    Slack at once (same delivery key), she is not skipped and the next candidate is not asked."""
    kit.fake.install(ORG, SARAH)
    if refusal == "blocked":
        kit.fake.blocked.add(kit.fake.conversation_of(ORG, SARAH))
    else:
        kit.fake.fail("send", 500)
    made = rig(kit, bot_client, clock)
    cid = await _ask_sarah(dev_client, made)
    assert kit.fake.posted == [] and len(made.slack.to("p-sarah")) == 1
    assert made.skips("p-sarah") == [] and made.slack.to("p-ahmed") == []
    c = await truth.get_clarification(clarification_id=cid)
    assert [(d.person_id, d.channel) for d in c.deliveries] == [("p-sarah", ContractChannel.SLACK)]
    remembered = await made.engine.refusals.blocked(address())
    assert (remembered is not None) is (refusal == "blocked")


async def test_a_remembered_block_sends_later_questions_elsewhere_until_she_is_back(
        kit: Kit, bot_client: CoreClient, dev_client: DevCoreClient, clock: ManualClock) -> None:
    """After Teams refused Sarah (MessageWritesBlocked), her later questions go to Slack first
    without trying Teams again; once she is seen in Teams again (the adapter clears the block:
    tests/teams/test_teams_handlers.py), Teams is her first platform again; and a block
    expires on its own."""
    kit.fake.install(ORG, SARAH)
    conversation = kit.fake.conversation_of(ORG, SARAH)
    kit.fake.blocked.add(conversation)
    made = rig(kit, bot_client, clock)
    await _ask_sarah(dev_client, made)
    sends = len(kit.fake.of("send"))
    kit.fake.blocked.discard(conversation)  # she unblocked the bot, and said nothing yet
    await _ask_sarah(dev_client, made)
    assert len(kit.fake.of("send")) == sends  # Teams was not tried again
    assert len(made.slack.to("p-sarah")) == 2
    assert await made.engine.refusals.clear("teams", SARAH.upper())  # as the adapter does
    await _ask_sarah(dev_client, made)
    assert len(kit.fake.to(SARAH)) == 1 and len(made.slack.to("p-sarah")) == 2
    kit.fake.blocked.add(conversation)
    await _ask_sarah(dev_client, made)  # blocked again: Slack, remembered
    assert len(made.slack.to("p-sarah")) == 3
    clock.advance(timedelta(days=15))  # the block expired: Teams is tried first again
    kit.fake.blocked.discard(conversation)
    await _ask_sarah(dev_client, made)
    assert len(kit.fake.to(SARAH)) == 2


async def test_delivery_failed_only_when_every_platform_refused_with_each_reason(
        kit: Kit, bot_client: CoreClient, dev_client: DevCoreClient,
        clock: ManualClock) -> None:
    """Teams blocked and Slack channel_not_found: only then is Sarah skipped, DELIVERY_FAILED,
    with each platform's reason code and cause in the order tried; the next candidate is
    asked; both refusals are remembered."""
    kit.fake.install(ORG, SARAH)
    kit.fake.blocked.add(kit.fake.conversation_of(ORG, SARAH))
    made = rig(kit, bot_client, clock)
    made.slack.fail_for.add("p-sarah")
    made.slack.fail_reason = "channel_not_found"
    made.slack.fail_lasting = True  # as Slack's adapter says of it
    made.slack.fail_cause = "deactivated"  # another group than Teams' (not Slack's own word)
    await _ask_sarah(dev_client, made)
    (skip,) = made.skips("p-sarah")
    assert skip.reason_code is ReasonCode.DELIVERY_FAILED
    # the cause group of the first platform tried that named one: Teams'
    assert skip.facts.cause_group == "blocked_or_uninstalled"
    assert "teams: DELIVERY_FAILED (MessageWritesBlocked" in skip.message
    assert "slack: DELIVERY_FAILED (channel_not_found)" in skip.message
    assert skip.message.index("teams:") < skip.message.index("slack:")
    assert len(made.slack.to("p-ahmed")) == 1
    assert await made.engine.refusals.blocked(address()) is not None


async def test_a_card_in_the_locale_of_the_person_latest_activity(
        kit: Kit, bot_client: CoreClient, dev_client: DevCoreClient, clock: ManualClock) -> None:
    """Tina's latest activity said ``fr-FR`` (kept with her conversation reference): her card is
    French with French dates; the spec's "Something else…" stays English."""
    kit.fake.install(ORG, TINA)
    conversation = kit.fake.open(ORG, TINA)
    reference = {"conversation": {"id": conversation, "tenantId": ORG}, "locale": "fr-FR",
                 "serviceUrl": kit.fake.url, "channelId": "msteams"}
    await kit.store.conversation_put("acme", TINA, json.dumps(reference), now=clock.now())
    made = rig(kit, bot_client, clock)
    await new_clarification(dev_client, authority={"authored_by": ["p-tina"]})
    await made.engine.worker.run_burst()
    (posted,) = kit.fake.to(TINA)
    card = json.dumps(posted.card, ensure_ascii=False)
    assert "Je ne suis pas la bonne personne" in card and "Something else…" in card
    assert "1 juil." in card or "1 juillet" in card, card
    assert "Not the right person" not in card
