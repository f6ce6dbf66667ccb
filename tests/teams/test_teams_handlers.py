"""Each Teams handler on the Agents SDK's TestAdapter and TestFlow: references kept and
forgotten, ``Action.Execute`` invokes answered with the card that replaces the clicked one."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from microsoft_agents.activity import (
    Activity,
    ChannelAccount,
    ConversationAccount,
    ConversationReference,
)
from microsoft_agents.testing import TestAdapter, TestFlow

from adapters.teams import references
from adapters.teams.references import Actor
from bot.channel import Address
from bot.core.models import ReasonCode
from bot.engine.lasting import LastingRefusals
from cards.actions import ActionKind, ActionRef
from tests.engine.conftest import new_clarification
from tests.teams.inbound import (
    ACME_AAD,
    SARAH_AAD,
    STRANGER_AAD,
    TeamsStack,
    action_data,
    activity,
)
from tests.teams.tokens import SERVICE_URL, claims, sign

CARD = "application/vnd.microsoft.card.adaptive"


def flow(teams: TeamsStack, *, user: str = SARAH_AAD, kind: str = "personal"
         ) -> tuple[TestAdapter, TestFlow]:
    """A TestFlow over one 1:1 (or other) conversation, through the adapter's own turn (the
    edge's reading of the activity carried as the HTTP path carries it)."""
    reference = ConversationReference(
        channel_id="msteams", service_url=SERVICE_URL,
        user=ChannelAccount(id=f"29:{user}", aad_object_id=user),
        agent=ChannelAccount(id="28:bot"),
        conversation=ConversationAccount(id=f"a:{user}", conversation_type=kind,
                                         tenant_id=ACME_AAD))
    adapter = TestAdapter(channel_id="msteams", conversation=reference)
    callback = teams.adapter.turn(("acme", Actor(aad_tenant_id=ACME_AAD, aad_object_id=user)))
    return adapter, TestFlow(adapter, callback)


def invoke_activity(data: dict[str, Any], verb: str = "clarify.answer", **extra: Any
                    ) -> Activity:
    return Activity(type="invoke", name="adaptiveCard/action", reply_to_id="1:card",
                    timestamp=datetime(2026, 7, 6, 9, 0, 0, 123000, tzinfo=UTC),
                    value={"action": {"type": "Action.Execute", "verb": verb, "data": data}},
                    **extra)


def invoke_answer(adapter: TestAdapter) -> dict[str, Any]:
    """The body the invoke is answered with (an ``invokeResponse`` activity in the queue)."""
    answered = [a for a in adapter.activity_queue if a.type == "invokeResponse"]
    assert len(answered) == 1
    value = answered[0].value
    body = value.body if hasattr(value, "body") else value["body"]
    return body if isinstance(body, dict) else body.model_dump(by_alias=True)


def card_text(body: dict[str, Any]) -> str:
    return str(body["value"])


async def test_installation_keeps_the_conversation_and_uninstall_forgets_it(
        teams: TeamsStack) -> None:
    """installationUpdate add stores the 1:1 reference, tenant-scoped by AAD object id; remove
    deletes it."""
    _, steps = flow(teams)
    await steps.send(Activity(type="installationUpdate", action="add")).start_test()
    kept = await teams.store.conversation_get("acme", SARAH_AAD)
    assert kept is not None
    reference = references.load_reference(kept)
    assert reference.conversation.id == f"a:{SARAH_AAD}"
    assert reference.service_url == SERVICE_URL
    assert await teams.store.conversation_get("globex", SARAH_AAD) is None
    _, steps = flow(teams)
    await steps.send(Activity(type="installationUpdate", action="remove")).start_test()
    assert await teams.store.conversation_get("acme", SARAH_AAD) is None


async def test_a_conversation_update_and_a_message_keep_the_conversation(
        teams: TeamsStack) -> None:
    """A conversation update or a message in the 1:1 chat stores (renews) the reference."""
    _, steps = flow(teams)
    await steps.send_conversation_update().start_test()
    assert await teams.store.conversation_get("acme", SARAH_AAD) is not None
    await teams.store.conversation_delete("acme", SARAH_AAD)
    _, steps = flow(teams)
    await steps.send("hello").start_test()
    assert await teams.store.conversation_get("acme", SARAH_AAD) is not None


async def test_a_group_chat_is_never_kept(teams: TeamsStack) -> None:
    """Only personal conversations are kept: the bot asks people privately."""
    _, steps = flow(teams, kind="groupChat")
    await steps.send("hello").send_conversation_update().start_test()
    assert await teams.store.conversation_get("acme", SARAH_AAD) is None


async def test_an_answer_invoke_returns_the_outcome_card(teams: TeamsStack) -> None:
    """A tap is made durable, forwarded, and answered with the outcome card in the invoke."""
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    adapter, steps = flow(teams)
    await steps.send(invoke_activity(action_data(teams.codec, cid, candidate=0))).start_test()
    body = invoke_answer(adapter)
    assert body["statusCode"] == 200 and body["type"] == CARD
    assert body["value"]["type"] == "AdaptiveCard"
    assert await teams.responses(cid) == [("p-sarah", 0)]


async def test_the_outcome_card_is_in_the_locale_of_the_invoke(teams: TeamsStack) -> None:
    """The invoke says ``de-DE``: the outcome card in the response has German words and dates
    (the spec's sentence stays English); a short text reply is German too."""
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    adapter, steps = flow(teams)
    await steps.send(invoke_activity(action_data(teams.codec, cid, candidate=0),
                                     locale="de-DE")).start_test()
    shown = card_text(invoke_answer(adapter))
    assert "Recorded as evidence" in shown and "Frage:" in shown and "Quelle:" in shown
    assert "1. Juli – 30. September" in shown and "1 July" not in shown
    data = teams.codec.teams_data(ActionRef(kind=ActionKind.DIGEST_NEXT, card_ref="dg-1",
                                            offset=3))
    adapter, steps = flow(teams)
    await steps.send(invoke_activity(data, "clarify.digest.next", locale="fr-FR")).start_test()
    assert invoke_answer(adapter)["value"] == \
        "Il n’y a plus de question ouverte dans ce récapitulatif."


async def test_an_unverified_identity_gets_the_identity_card(teams: TeamsStack) -> None:
    """An AAD user no PERSON has gets the identity card naming that cause (linked to nobody in
    the directory, not "unverified"); nothing is forwarded."""
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    adapter, steps = flow(teams, user=STRANGER_AAD)
    await steps.send(invoke_activity(action_data(teams.codec, cid))).start_test()
    body = invoke_answer(adapter)
    assert body["type"] == CARD
    assert "not linked to anyone in the company directory" in card_text(body)
    assert "verified" not in card_text(body).lower()
    assert await teams.responses(cid) == []


async def test_a_shared_identity_gets_the_card_naming_the_shared_link(teams: TeamsStack
                                                                       ) -> None:
    """An AAD user two people of the tenant claim (Ahmed given Sarah's Teams alias) gets the
    identity card saying the account is linked to more than one person; nothing is
    forwarded, and the refusal is ALIAS_AMBIGUOUS on record."""
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    sarah = teams.core.directory.people[("acme", "p-sarah")]
    teams.core.directory.people[("acme", "p-ahmed")].aliases.teams[:] = sarah.aliases.teams
    adapter, steps = flow(teams, user=SARAH_AAD)
    await steps.send(invoke_activity(action_data(teams.codec, cid))).start_test()
    body = invoke_answer(adapter)
    assert body["type"] == CARD
    assert "linked to more than one person in the company directory" in card_text(body)
    assert await teams.responses(cid) == []
    assert [ev.reason_code for ev in teams.sink.of("answer_refused")] == [
        ReasonCode.ALIAS_AMBIGUOUS]


async def test_something_else_with_an_invalid_range_returns_the_form_with_errors(
        teams: TeamsStack) -> None:
    """An end before the start comes back as the form, the error under the field, nothing
    forwarded; a valid range is answered with the outcome."""
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    data = {**action_data(teams.codec, cid, candidate=None, kind=ActionKind.CUSTOM_SUBMIT),
            "custom.0.from": "2026-05-01", "custom.0.to": "2026-04-01"}
    adapter, steps = flow(teams)
    await steps.send(invoke_activity(data, "clarify.custom")).start_test()
    body = invoke_answer(adapter)
    assert body["type"] == CARD
    assert "custom.0.from" in card_text(body) and "Attention" in card_text(body)
    assert await teams.responses(cid) == []
    data["custom.0.to"] = "2026-05-31"
    adapter, steps = flow(teams)
    await steps.send(invoke_activity(data, "clarify.custom")).start_test()
    assert invoke_answer(adapter)["type"] == CARD
    assert [who for who, _ in await teams.responses(cid)] == ["p-sarah"]


async def test_the_digest_next_page_without_a_digest_says_so(teams: TeamsStack) -> None:
    """A next-page tap on a digest the bot no longer holds says there is nothing more."""
    data = teams.codec.teams_data(ActionRef(kind=ActionKind.DIGEST_NEXT, card_ref="dg-1",
                                            offset=3))
    adapter, steps = flow(teams)
    await steps.send(invoke_activity(data, "clarify.digest.next")).start_test()
    body = invoke_answer(adapter)
    assert body["type"] == "application/vnd.microsoft.activity.message"


async def test_action_data_the_bot_did_not_sign_is_refused(teams: TeamsStack) -> None:
    """A forged or edited token in the action data is a 400 error response, nothing accepted."""
    adapter, steps = flow(teams)
    await steps.send(invoke_activity({"t": "v1.forged.token"})).start_test()
    body = invoke_answer(adapter)
    assert body["statusCode"] == 400
    assert await teams.store.outbox_size() == 0


async def test_a_refresh_returns_the_question_as_it_stands_for_this_person(
        teams: TeamsStack) -> None:
    """Universal Actions' refresh: the question card for someone who may read it; for someone
    the core does not verify, a short message and no question text."""
    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    data = action_data(teams.codec, cid, candidate=None, kind=ActionKind.REFRESH)
    adapter, steps = flow(teams)
    await steps.send(invoke_activity(data, "clarify.refresh")).start_test()
    body = invoke_answer(adapter)
    assert body["type"] == CARD and "Action.Execute" in card_text(body)
    assert await teams.responses(cid) == []  # a refresh answers nothing
    adapter, steps = flow(teams, user=STRANGER_AAD)
    await steps.send(invoke_activity(data, "clarify.refresh")).start_test()
    body = invoke_answer(adapter)
    assert body["type"] == "application/vnd.microsoft.activity.message"
    assert "Harbor Street" not in str(body)


async def test_a_store_that_cannot_take_the_answer_is_a_503_and_nothing_is_forwarded(
        teams: TeamsStack, monkeypatch: Any) -> None:
    """Durable first: when the store fails, the invoke is answered with a 503 error response
    (Teams tells the person it failed) and nothing reaches the core."""
    from bot.store.errors import StoreUnavailable

    async def unavailable(*args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailable()

    cid = await new_clarification(teams.dev, authority={"named": ["p-sarah"]})
    monkeypatch.setattr(teams.store, "outbox_accept", unavailable)
    adapter, steps = flow(teams)
    await steps.send(invoke_activity(action_data(teams.codec, cid))).start_test()
    body = invoke_answer(adapter)
    assert body["statusCode"] == 503
    assert await teams.responses(cid) == []


@pytest.mark.parametrize("kind", ["installationUpdate", "message"])
async def test_installing_again_or_writing_to_the_bot_ends_a_remembered_block(
        teams: TeamsStack, kind: str) -> None:
    """A remembered block of Teams for Sarah (the bot was refused with MessageWritesBlocked)
    ends when she installs the app again or writes to the bot in the 1:1 chat, through the real
    endpoint with a signed Bot Framework token: Teams is her first platform again."""
    blocks = LastingRefusals(teams.store)
    sarah = Address(platform="teams", person_id="p-sarah", user_id=SARAH_AAD)
    await blocks.remember(sarah, "MessageWritesBlocked: the person blocked the bot")
    assert await blocks.blocked(sarah) is not None
    # a message without words (a file, say): kept, and nothing to answer through the connector
    extra: dict[str, Any] = {"action": "add"} if kind == "installationUpdate" else {}
    response = await teams.post(activity(kind, **extra), sign(claims()))
    assert response.status in (200, 201, 202)
    await teams.settle()
    assert await blocks.blocked(sarah) is None
