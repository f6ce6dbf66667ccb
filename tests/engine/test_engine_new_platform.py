"""Where a new platform plugs in: a fake one answers a question end to end, with nothing in bot/
changed for it (docs/architecture.md, "Where a new platform plugs in").

The platform is a Channel (sends recorded, as the recording channel does), a tenant map of its
own (what its mount supplies: ``Platform.tenants``) and a callback translator: its own tap,
verified by it, into the platform-free ``Callback``. It takes the ``teams`` slot, since the core's
contract names the chat channels it keeps aliases for (``slack``, ``teams``); no Teams settings are
given: its own tenant map scopes its aliases for the sends as it scopes its users' clicks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.answering.answers import AnswerStatus
from bot.audit import MemorySink
from bot.channels.recording import RecordingChannel
from bot.chat import Callback, ChatUser
from bot.clock import ManualClock
from bot.core.client import CoreClient
from bot.interaction.interactions import Interactions
from bot.process.runtime import EngineParts, build_engine
from bot.settings import ClarifySettings, TeamsSettings, TeamsTenant
from bot.store.memory import MemoryStore
from devcore.client import DevCoreClient
from devcore.demo import answer_now
from tests.engine.conftest import new_clarification, no_sleep

ORG = "5f3c1a2b-7d4e-4c1a-9b2e-0a11ce000001"  # acme's Entra tenant (Sarah's Teams alias)


@dataclass
class Pigeon(RecordingChannel):  # the platform's Channel: it cannot look up what it sent
    platform: str = "teams"
    can_find: bool = False


@dataclass(frozen=True)
class PigeonOrgs:  # the platform's tenant map: its orgs, as its mount would supply them
    orgs: dict[str, str]

    def tenant_of(self, user: ChatUser) -> str | None:
        return self.orgs.get(user.aad_tenant_id or "")


def translate(tap: dict[str, Any], interactions: Interactions) -> Callback:
    """The platform's verified tap → the platform-free callback (the adapter's whole job)."""
    user = ChatUser(platform="teams", user_id=tap["from"], aad_tenant_id=tap["org"])
    return Callback.from_user(user, tenant_id=interactions.tenant(user),
                              clarification_id=tap["question"], card_ref=tap["card"],
                              message_ref=tap["message"], answer_index=tap["pick"])


async def test_a_new_platform_answers_a_question_end_to_end(
    bot_client: CoreClient, truth: CoreClient, dev_client: DevCoreClient, clock: ManualClock
) -> None:
    """The engine sends the question over the new platform's channel; the person's tap, through
    its translator, reaches the core as their answer and their card shows the outcome."""
    pigeon = Pigeon()
    engine = build_engine(EngineParts(
        core=bot_client, store=MemoryStore(clock=clock), channels={"teams": pigeon},
        clarify=ClarifySettings(channels=("teams",), hours={"enabled": False}),
        clock=clock, audit_sink=MemorySink(),
        tenants={"teams": PigeonOrgs({ORG: "acme"})},
        sleep=no_sleep))
    cid = await new_clarification(dev_client, authority={"authored_by": ["p-sarah"]})
    await engine.worker.run_burst()
    (card,) = pigeon.to("p-sarah")
    tap = {"from": card.address.user_id, "org": ORG, "question": cid, "pick": 0,
           "card": card.message.card_ref, "message": card.ref}  # type: ignore[union-attr]
    receipt = await answer_now(engine.answers, translate(tap, engine.interactions))
    assert receipt.verdict is AnswerStatus.FORWARDED
    c = await truth.get_clarification(clarification_id=cid)
    assert [(r.responder, r.answer_index, r.channel) for r in c.responses] == [
        ("p-sarah", 0, "teams")]
    assert [u.ref for u in pigeon.updates] == [card.ref]


def test_a_platform_acts_in_the_tenants_its_own_map_says_and_an_unmapped_one_in_none(
        bot_client: CoreClient, clock: ManualClock) -> None:
    """The tenant a chat user acts in is their platform's map's word (deny by default): the
    Teams settings' list does not decide it once the platform supplied its own, and a platform
    with no map serves no tenant."""
    engine = build_engine(EngineParts(
        core=bot_client, store=MemoryStore(clock=clock), channels={"teams": Pigeon()},
        clarify=ClarifySettings(channels=("teams",), hours={"enabled": False}),
        clock=clock, audit_sink=MemorySink(),
        teams=TeamsSettings(tenants=(TeamsTenant(aad_tenant_id=ORG, tenant="acme"),)),
        tenants={"teams": PigeonOrgs({"org-of-globex": "globex"})}, sleep=no_sleep))
    tenant = engine.interactions.tenant
    assert tenant(ChatUser(platform="teams", user_id="u", aad_tenant_id="org-of-globex")) == \
        "globex"
    assert tenant(ChatUser(platform="teams", user_id="u", aad_tenant_id=ORG)) is None
    assert tenant(ChatUser(platform="carrier", user_id="u", aad_tenant_id=ORG)) is None


async def test_a_platform_s_own_map_scopes_its_aliases_for_the_sends(
        bot_client: CoreClient, dev_client: DevCoreClient, clock: ManualClock) -> None:
    """Routing asks the platform's tenant map, not the Teams settings, which org's aliases are a
    tenant's: the settings' list naming acme's org sends nothing where the platform's map maps
    that org to no tenant."""
    pigeon = Pigeon()
    engine = build_engine(EngineParts(
        core=bot_client, store=MemoryStore(clock=clock), channels={"teams": pigeon},
        clarify=ClarifySettings(channels=("teams",), hours={"enabled": False}),
        clock=clock, audit_sink=MemorySink(),
        teams=TeamsSettings(tenants=(TeamsTenant(aad_tenant_id=ORG, tenant="acme"),)),
        tenants={"teams": PigeonOrgs({"org-of-globex": "globex"})}, sleep=no_sleep))
    await new_clarification(dev_client, authority={"authored_by": ["p-sarah"]})
    await engine.worker.run_burst()
    assert pigeon.to("p-sarah") == []
