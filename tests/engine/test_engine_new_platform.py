"""Where a new platform plugs in: a fake one answers a question end to end, with nothing in bot/
changed for it (docs/architecture.md, "Where a new platform plugs in").

The platform, "pigeon", is a Channel (sends recorded, as the recording channel does) that
declares how it maps onto the core contract's words: its people are addressed by their Entra
identity (the contract's ``aliases.teams``, ``TeamsIdentity``) and its answers and delivery
reports carry the contract's channel word ``api`` (the contract names no pigeon). It has settings
of its own (neither the Slack nor the Teams settings), a tenant map over them (what its mount
supplies: ``Platform.tenants``) and a callback translator: its own tap, verified by it, into the
platform-free ``Callback``. Slack's and Teams' words are their own names, unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from bot.answering.answers import AnswerStatus
from bot.audit import MemorySink
from bot.channel import ContractWords
from bot.channels.recording import RecordingChannel
from bot.chat import Callback, ChatUser, WorkspaceTenants
from bot.clock import ManualClock
from bot.core.client import CoreClient
from bot.core.models import Channel as ContractChannel
from bot.core.models import IdentityKind, RecordedChannel
from bot.interaction.interactions import Interactions
from bot.process.runtime import Engine, EngineParts, build_engine
from bot.settings import ClarifySettings, TeamsSettings, TeamsTenant
from bot.store.memory import MemoryStore
from devcore.client import DevCoreClient
from devcore.demo import answer_now
from tests.engine.conftest import ACME_SLACK, no_sleep
from tests.support.rigs import new_clarification

ORG = "5f3c1a2b-7d4e-4c1a-9b2e-0a11ce000001"  # acme's Entra tenant (Sarah's Entra identity)
GLOBEX_ORG = "org-of-globex"
ACME_TEAMS = TeamsSettings(tenants=(TeamsTenant(aad_tenant_id=ORG, tenant="acme"),))


@dataclass
class Pigeon(RecordingChannel):  # the platform's Channel: it cannot look up what it sent
    platform: str = "pigeon"
    can_find: bool = False
    declared_kind: IdentityKind | None = IdentityKind.ENTRA  # its people: their Entra identity
    # the contract's word for its answers
    declared_channel: ContractChannel | None = ContractChannel.API


@dataclass(frozen=True)
class PigeonSettings:  # the platform's own settings: which Entra org is which tenant
    orgs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PigeonOrgs:  # the platform's tenant map over its settings, as its mount would supply it
    settings: PigeonSettings

    def tenant_of(self, user: ChatUser) -> str | None:
        return self.settings.orgs.get(user.aad_tenant_id or "")


def translate(tap: dict[str, Any], interactions: Interactions) -> Callback:
    """The platform's verified tap → the platform-free callback (the adapter's whole job)."""
    user = ChatUser(platform="pigeon", user_id=tap["from"], aad_tenant_id=tap["org"])
    return Callback.from_user(user, tenant_id=interactions.tenant(user),
                              clarification_id=tap["question"], card_ref=tap["card"],
                              message_ref=tap["message"], answer_index=tap["pick"])


def pigeon_engine(pigeon: Pigeon, core: CoreClient, clock: ManualClock,
                  settings: PigeonSettings, **teams: TeamsSettings) -> Engine:
    return build_engine(EngineParts(
        core=core, store=MemoryStore(clock=clock), channels={"pigeon": pigeon},
        clarify=ClarifySettings(channels=("pigeon",), hours={"enabled": False}),
        clock=clock, audit_sink=MemorySink(), tenants={"pigeon": PigeonOrgs(settings)},
        sleep=no_sleep, **teams))


async def test_a_new_platform_answers_a_question_end_to_end(
    bot_client: CoreClient, truth: CoreClient, dev_client: DevCoreClient, clock: ManualClock
) -> None:
    """The engine sends the question over pigeon to the person's Entra identity; the person's
    tap, through its translator, acts in the tenant pigeon's map says and reaches the core once
    as their answer, with the channel word pigeon declares; their card shows the outcome."""
    pigeon = Pigeon()
    engine = pigeon_engine(pigeon, bot_client, clock, PigeonSettings({ORG: "acme"}))
    cid = await new_clarification(dev_client, authority={"authored_by": ["p-sarah"]})
    await engine.worker.run_burst()
    (card,) = pigeon.to("p-sarah")
    assert (card.address.platform, card.address.user_id) == (
        "pigeon", "8f1c2d3e-0000-4000-8000-00000000a001")
    tap = {"from": card.address.user_id, "org": ORG, "question": cid, "pick": 0,
           "card": card.message.card_ref, "message": card.ref}  # type: ignore[union-attr]
    cb = translate(tap, engine.interactions)
    assert cb.tenant_id == "acme"
    receipt = await answer_now(engine.answers, cb)
    assert receipt.verdict is AnswerStatus.FORWARDED
    again = await answer_now(engine.answers, cb)  # the same tap again: the same answer
    assert again.verdict is not AnswerStatus.UNVERIFIED
    c = await truth.get_clarification(clarification_id=cid)
    assert [(r.responder, r.answer_index, r.channel) for r in c.responses] == [
        ("p-sarah", 0, RecordedChannel.API)]
    assert [(d.person_id, d.channel) for d in c.deliveries] == [
        ("p-sarah", RecordedChannel.API)]
    assert [u.ref for u in pigeon.updates][:1] == [card.ref]
    cards = await engine.store.cards(cid)
    assert [x.platform for x in cards] == ["pigeon"]  # the bot's own record: its own name


async def test_a_pigeon_user_in_an_org_its_map_does_not_name_is_refused(
    bot_client: CoreClient, truth: CoreClient, dev_client: DevCoreClient, clock: ManualClock
) -> None:
    """A tap from an org pigeon's map does not name acts in no tenant (deny by default): the
    answer is refused and nothing reaches the core."""
    pigeon = Pigeon()
    engine = pigeon_engine(pigeon, bot_client, clock, PigeonSettings({ORG: "acme"}))
    cid = await new_clarification(dev_client, authority={"authored_by": ["p-sarah"]})
    await engine.worker.run_burst()
    (card,) = pigeon.to("p-sarah")
    tap = {"from": card.address.user_id, "org": GLOBEX_ORG, "question": cid, "pick": 0,
           "card": card.message.card_ref, "message": card.ref}  # type: ignore[union-attr]
    cb = translate(tap, engine.interactions)
    assert cb.tenant_id is None
    receipt = await answer_now(engine.answers, cb)
    assert receipt.verdict is AnswerStatus.OUT_OF_SCOPE
    c = await truth.get_clarification(clarification_id=cid)
    assert c.responses == []


def test_a_platform_acts_in_the_tenants_its_own_map_says_and_an_unmapped_one_in_none(
        bot_client: CoreClient, clock: ManualClock) -> None:
    """The tenant a chat user acts in is their platform's map's word (deny by default): the
    Teams settings' list does not decide it for pigeon, and a platform with no map serves no
    tenant."""
    engine = pigeon_engine(
        Pigeon(), bot_client, clock, PigeonSettings({GLOBEX_ORG: "globex"}),
        teams=ACME_TEAMS)
    tenant = engine.interactions.tenant
    assert tenant(ChatUser(platform="pigeon", user_id="u", aad_tenant_id=GLOBEX_ORG)) == "globex"
    assert tenant(ChatUser(platform="pigeon", user_id="u", aad_tenant_id=ORG)) is None
    assert tenant(ChatUser(platform="carrier", user_id="u", aad_tenant_id=ORG)) is None


async def test_a_platform_s_own_map_scopes_its_aliases_for_the_sends(
        bot_client: CoreClient, dev_client: DevCoreClient, clock: ManualClock) -> None:
    """Routing asks pigeon's tenant map, not the Teams settings, which org's Entra identities
    are a tenant's: the settings' list naming acme's org sends nothing where pigeon's map maps
    that org to no tenant."""
    pigeon = Pigeon()
    engine = pigeon_engine(
        pigeon, bot_client, clock, PigeonSettings({GLOBEX_ORG: "globex"}),
        teams=ACME_TEAMS)
    await new_clarification(dev_client, authority={"authored_by": ["p-sarah"]})
    await engine.worker.run_burst()
    assert pigeon.to("p-sarah") == []


@pytest.mark.parametrize(("platform", "word"), [
    ("slack", RecordedChannel.SLACK), ("teams", RecordedChannel.TEAMS),
    ("pigeon", RecordedChannel.API)])
async def test_each_platform_s_answers_and_deliveries_carry_its_own_contract_word(
        platform: str, word: RecordedChannel, bot_client: CoreClient, truth: CoreClient,
        dev_client: DevCoreClient, clock: ManualClock) -> None:
    """With Slack, Teams and pigeon mounted, the platform first in order reaches Sarah, and the
    core records her answer and her card's delivery under that platform's word: Slack's
    ``slack`` and Teams' ``teams`` as ever, pigeon's ``api``."""
    channels = {"slack": RecordingChannel(platform="slack"),
                "teams": RecordingChannel(platform="teams"), "pigeon": Pigeon()}
    order = (platform, *(p for p in channels if p != platform))
    engine = build_engine(EngineParts(
        core=bot_client, store=MemoryStore(clock=clock), channels=dict(channels),
        clarify=ClarifySettings(channels=order, hours={"enabled": False}),
        clock=clock, audit_sink=MemorySink(), slack=ACME_SLACK, teams=ACME_TEAMS,
        tenants={"slack": WorkspaceTenants(ACME_SLACK), "teams": ACME_TEAMS,
                 "pigeon": PigeonOrgs(PigeonSettings({ORG: "acme"}))},
        sleep=no_sleep))
    cid = await new_clarification(dev_client, authority={"authored_by": ["p-sarah"]})
    await engine.worker.run_burst()
    (card,) = channels[platform].to("p-sarah")
    assert [p for p, ch in channels.items() if ch.to("p-sarah")] == [platform]
    a = card.address
    user = ChatUser(platform=platform, user_id=a.user_id,
                    team_id=getattr(a.reach, "team_id", None),
                    enterprise_id=getattr(a.reach, "enterprise_id", None),
                    aad_tenant_id=getattr(a.reach, "aad_tenant_id", None))
    ref = card.message.card_ref  # type: ignore[union-attr]
    cb = Callback.from_user(user, tenant_id=engine.interactions.tenant(user),
                            clarification_id=cid, card_ref=ref, message_ref=card.ref,
                            answer_index=0)
    assert (await answer_now(engine.answers, cb)).verdict is AnswerStatus.FORWARDED
    c = await truth.get_clarification(clarification_id=cid)
    assert [(r.responder, r.channel) for r in c.responses] == [("p-sarah", word)]
    assert [d.channel for d in c.deliveries] == [word]


def test_a_word_the_core_recorded_names_the_platform_that_declares_it() -> None:
    """Reading the core's delivery records back (a card the store lost): the word maps to the
    one mounted platform that declares it; a chat word no platform declares names the chat
    platform it is the word of (``teams``, mounted or not); ``cli`` and an erased word name
    none."""
    words = ContractWords.of({"slack": RecordingChannel(platform="slack"), "pigeon": Pigeon()})
    assert words.platform(RecordedChannel.API) == "pigeon"
    assert words.platform(RecordedChannel.SLACK) == "slack"
    assert words.platform(RecordedChannel.TEAMS) == "teams"
    assert words.platform(RecordedChannel.CLI) is None
    assert words.platform(RecordedChannel.ERASED) is None
    assert ContractWords.of({}).platform(RecordedChannel.API) is None
    assert (words.channel("slack"), words.kind("slack")) == (
        ContractChannel.SLACK, IdentityKind.SLACK)
    assert (words.channel("pigeon"), words.kind("pigeon")) == (
        ContractChannel.API, IdentityKind.ENTRA)
    assert (words.channel("teams"), words.kind("teams")) == (
        ContractChannel.TEAMS, IdentityKind.ENTRA)
