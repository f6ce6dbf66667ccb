"""The Teams channel over real HTTP to a fake Bot Connector: proactive 1:1 cards (a stored
conversation continued, or the 1:1 conversation opened where the app is installed), updates by
message reference, private notes, and the refusals the engine turns into reason codes."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from adapters.teams.channel import BLOCKED, NOT_INSTALLED, MessageRef, open_teams_channel
from adapters.teams.render import CARD_CONTENT_TYPE
from bot.channel import ChannelError, CredentialsRejected, NotReachable
from bot.store.base import DeliveryKey
from cards.fixtures import OUTCOMES, QUESTION
from tests.teams.fakeconnector import TOKEN
from tests.teams.outbound import (
    CODEC,
    KEY,
    ORG,
    SARAH,
    SETTINGS,
    Kit,
    address,
    stored_reference,
)


async def test_a_card_continues_the_stored_conversation(kit: Kit) -> None:
    """With a reference stored, the card is one send to that conversation, as an Adaptive Card
    attachment, with the bot's token; the reference names the activity the connector made."""
    cid = await stored_reference(kit)
    ref = await kit.channel().send(address(), QUESTION, key=KEY)
    (posted,) = kit.fake.to(SARAH)
    assert [c.route for c in kit.fake.calls] == ["send"]
    assert kit.fake.calls[0].authorization == f"Bearer {TOKEN}"
    attachment = posted.activity["attachments"][0]
    assert attachment["contentType"] == CARD_CONTENT_TYPE
    assert attachment["content"]["type"] == "AdaptiveCard"
    assert MessageRef.parse(ref) == MessageRef(cid, posted.activity_id, ORG, kit.fake.url)


async def test_a_card_opens_the_1to1_conversation_where_the_app_is_installed(kit: Kit) -> None:
    """No reference, app installed: the 1:1 conversation is created from the AAD object id and
    tenant, its reference stored, and the next card continues it without creating again."""
    kit.fake.install(ORG, SARAH)
    channel = kit.channel()
    await channel.send(address(), QUESTION, key=KEY)
    (create,) = kit.fake.of("create")
    assert create.body["members"] == [{"id": SARAH}] and create.body["tenantId"] == ORG
    assert create.body["isGroup"] is False
    stored = json.loads(await kit.store.conversation_get("acme", SARAH) or "{}")
    assert stored["conversation"]["id"] == kit.fake.conversation_of(ORG, SARAH)
    await channel.send(address(), QUESTION, key=DeliveryKey("clr-2", "p-sarah", 0, "question"))
    assert len(kit.fake.of("create")) == 1 and len(kit.fake.to(SARAH)) == 2


@pytest.mark.parametrize("status", [403, 404])
async def test_no_reference_and_no_install_is_not_reachable(kit: Kit, status: int) -> None:
    """The connector refuses to open the conversation: nobody can reach the person on Teams
    until the app is installed for them, and the reason tells the operator so."""
    kit.fake.not_installed_status = status
    with pytest.raises(NotReachable) as raised:
        await kit.channel().send(address(), QUESTION, key=KEY)
    assert raised.value.reason == NOT_INSTALLED and "install" in NOT_INSTALLED
    assert raised.value.cause == "app_not_installed"  # the reach report's cause group
    assert raised.value.certain and not raised.value.retryable
    assert kit.fake.posted == [] and await kit.store.conversation_get("acme", SARAH) is None


async def test_a_blocked_bot_fails_with_message_writes_blocked(kit: Kit) -> None:
    """403 MessageWritesBlocked: the delivery fails with that cause; nothing is retried."""
    cid = await stored_reference(kit)
    kit.fake.blocked.add(cid)
    with pytest.raises(ChannelError) as raised:
        await kit.channel().send(address(), QUESTION, key=KEY)
    assert raised.value.reason == BLOCKED and "MessageWritesBlocked" in BLOCKED
    assert raised.value.cause == "blocked_or_uninstalled"  # the reach report's cause group
    assert raised.value.certain and not raised.value.retryable
    assert len(kit.fake.of("send")) == 1 and kit.sleeps.taken == []


async def test_a_refusal_teams_does_not_explain_names_no_cause_group(kit: Kit) -> None:
    """A 403 without a blocking code is a refusal of its own: failed with the connector's
    words, no cause group (the reach report files it under delivery_failed)."""
    await stored_reference(kit)
    kit.fake.fail("send", 403, body={"error": {"code": "Forbidden"}})
    with pytest.raises(ChannelError) as raised:
        await kit.channel().send(address(), QUESTION, key=KEY)
    assert raised.value.reason.startswith("connector_403")
    assert raised.value.cause is None and not raised.value.lasting


async def test_a_stale_reference_opens_the_conversation_again(kit: Kit) -> None:
    """The stored conversation is gone (404): the 1:1 conversation is opened afresh, once."""
    await kit.store.conversation_put(
        "acme", SARAH, json.dumps({"conversation": {"id": "a:1gone"},
                                   "serviceUrl": kit.fake.url}), now=kit.clock.now())
    kit.fake.install(ORG, SARAH)
    ref = await kit.channel().send(address(), QUESTION, key=KEY)
    assert MessageRef.parse(ref).conversation_id == kit.fake.conversation_of(ORG, SARAH)
    assert [c.status for c in kit.fake.calls] == [404, 201, 201]


async def test_a_card_is_updated_by_its_message_reference(kit: Kit) -> None:
    """``update`` replaces the activity the reference names with the new card."""
    await stored_reference(kit)
    channel = kit.channel()
    ref = await channel.send(address(), QUESTION, key=KEY)
    outcome = next(iter(OUTCOMES.values()))
    await channel.update(ref, outcome)
    (posted,) = kit.fake.to(SARAH)
    assert len(posted.versions) == 1 and posted.card != posted.versions[0]["attachments"][0]
    assert kit.fake.of("update")[0].path.endswith(f"/activities/{posted.activity_id}")


async def test_an_update_of_something_not_a_reference_is_refused(kit: Kit) -> None:
    with pytest.raises(ChannelError) as raised:
        await kit.channel().update("C0SLACK:1720000000.000100", QUESTION)
    assert raised.value.certain and kit.fake.calls == []


async def test_a_note_is_a_message_in_the_persons_own_chat(kit: Kit) -> None:
    """``note`` writes into the 1:1 chat of the message it is next to: "not available" as
    text, an outcome as a card."""
    cid = await stored_reference(kit)
    channel = kit.channel()
    ref = await channel.send(address(), QUESTION, key=KEY)
    await channel.note(ref, SARAH, None)
    await channel.note(ref, SARAH, next(iter(OUTCOMES.values())))
    _, text, card = kit.fake.posted
    assert text.conversation_id == cid and text.activity["text"] and text.card is None
    assert card.conversation_id == cid and card.card is not None


async def test_a_refused_token_is_credentials_rejected(kit: Kit) -> None:
    """The identity platform gives no token: the bot's own credentials are at fault, nothing
    is sent, and the setting to fix is named."""
    await stored_reference(kit)
    kit.tokens.fail = True
    with pytest.raises(CredentialsRejected) as raised:
        await kit.channel().send(address(), QUESTION, key=KEY)
    assert raised.value.setting == "TEAMS_APP_PASSWORD" and kit.fake.calls == []
    with pytest.raises(CredentialsRejected):
        await kit.channel().check_credentials()


async def test_a_401_gets_a_fresh_token_once(kit: Kit) -> None:
    """A token that expired in flight: one fresh token and the send goes through; a connector
    that keeps refusing it is CredentialsRejected."""
    await stored_reference(kit)
    kit.fake.fail("send", 401)
    await kit.channel().send(address(), QUESTION, key=KEY)
    assert kit.tokens.asked == [False, True] and len(kit.fake.posted) == 1
    kit.fake.fail("send", 401, times=2)
    with pytest.raises(CredentialsRejected):
        await kit.channel().send(address(), QUESTION, key=KEY)
    assert len(kit.fake.posted) == 1


async def test_the_mounts_constructor_takes_the_settings(kit: Kit) -> None:
    """``open_teams_channel``: the tenant rate and the service URL come from settings; a local
    connector is allowed only when named, so a production mount sends nowhere else."""
    settings = SETTINGS.model_copy(update={"service_url": kit.fake.url,
                                           "tenant_sends_per_second": 5.0})
    made = open_teams_channel(settings, session=kit.session, tokens=kit.tokens, store=kit.store,
                              clock=kit.clock, codec=CODEC, sleep=kit.sleeps,
                              local_connectors=(kit.fake.origin,))
    assert made.connector.limits.tenant_rate == 5.0 and made.service_url == kit.fake.url
    kit.fake.install(ORG, SARAH)
    await made.send(address(), QUESTION, key=KEY)
    assert len(kit.fake.to(SARAH)) == 1
    production = open_teams_channel(settings, session=kit.session, tokens=kit.tokens,
                                    store=kit.store, clock=kit.clock, codec=CODEC)
    with pytest.raises(ChannelError):
        await production.update(str(MessageRef("a:1", "1", ORG, kit.fake.url)), QUESTION)


async def test_a_reminder_updates_the_card_and_writes_in_its_conversation(kit: Kit) -> None:
    """A question card's reminder on Teams: the card is updated in place through the connector
    (which notifies nobody), and the nudge is a new activity in the card's own 1:1
    conversation (which does), with its words as the activity's text for the notification."""
    from datetime import UTC, datetime

    from cards.views import ReminderView

    cid = await stored_reference(kit)
    channel = kit.channel()
    ref = await channel.send(address(), QUESTION, key=KEY)
    moves_on = datetime(2026, 7, 6, 17, 1, tzinfo=UTC)
    await channel.update(ref, replace(QUESTION, reminded=True, moves_on_at=moves_on))
    nudge = ReminderView(clarification_id=QUESTION.clarification_id, near=ref,
                         document=QUESTION.document, viewer=QUESTION.viewer,
                         as_of=QUESTION.asked_at, moves_on_at=moves_on)
    await channel.send(address(), nudge,
                       key=DeliveryKey(KEY.clarification_id, "p-sarah", 0, "reminder"))
    card, reminder = kit.fake.to(SARAH)
    assert len(card.versions) == 1
    assert "Reminder: your answer is still needed." in json.dumps(card.card)
    assert reminder.conversation_id == cid
    assert reminder.activity["text"].startswith("Reminder: a question about a date in")
    assert "Moves on to the next person on" in reminder.activity["text"]
    assert [c.route for c in kit.fake.calls] == ["send", "update", "send"]


async def test_a_reminder_activity_text_shows_the_title_as_text(kit: Kit) -> None:
    """The nudge's activity text is markdown to Teams: a title holding markdown is escaped in
    it (CommonMark backslashes), so it can neither format the line nor add a link."""
    from cards.views import ReminderView

    await stored_reference(kit)
    channel = kit.channel()
    ref = await channel.send(address(), QUESTION, key=KEY)
    document = replace(QUESTION.document, title="*Q3* [plan](https://evil.example)")
    nudge = ReminderView(clarification_id=QUESTION.clarification_id, near=ref,
                         document=document, viewer=QUESTION.viewer, as_of=QUESTION.asked_at)
    await channel.send(address(), nudge,
                       key=DeliveryKey(KEY.clarification_id, "p-sarah", 0, "reminder"))
    _, reminder = kit.fake.to(SARAH)
    assert "“\\*Q3\\* \\[plan\\](https:\u2060//evil.example)”" in reminder.activity["text"]


async def _sarah_wrote_in(kit: Kit, locale: str) -> str:
    """Sarah's latest activity said ``locale``: kept with her conversation reference, as the
    inbound side keeps it (``adapters.teams.references.reference_json``)."""
    cid = kit.fake.open(ORG, SARAH)
    reference = {"conversation": {"id": cid, "tenantId": ORG}, "serviceUrl": kit.fake.url,
                 "channelId": "msteams", "locale": locale}
    await kit.store.conversation_put("acme", SARAH, json.dumps(reference), now=kit.clock.now())
    return cid


RECORDED = OUTCOMES["outcome_recorded"]  # built in the core's locale ("en")


async def test_an_update_is_in_the_locale_of_the_persons_latest_activity(kit: Kit) -> None:
    """A card repainted later (not in a click's response), from a view in the core's locale:
    written in Sarah's Teams locale (German texts and dates; the spec's sentence stays English),
    with no connector call but the update (this process sent the card)."""
    await _sarah_wrote_in(kit, "de-DE")
    channel = kit.channel()
    ref = await channel.send(address(), QUESTION, key=KEY)
    await channel.update(ref, RECORDED)
    (posted,) = kit.fake.to(SARAH)
    card = json.dumps(posted.card, ensure_ascii=False)
    assert "Recorded as evidence: 12. Juni, confirmed by Sarah, 04.07.2026." in card, card
    assert "Frage:" in card and "Question:" not in card
    assert [c.route for c in kit.fake.calls] == ["send", "update"]


async def test_an_update_of_a_card_sent_elsewhere_asks_whose_chat_it_is(kit: Kit) -> None:
    """A card sent by another replica (or before a restart): the connector's members of the
    1:1 conversation name Sarah, once; her card is written in her locale (fr-FR)."""
    cid = await _sarah_wrote_in(kit, "fr-FR")
    ref = await kit.channel().send(address(), QUESTION, key=KEY)
    fresh = kit.channel()  # knows nothing of what the first one sent
    await fresh.update(ref, RECORDED)
    await fresh.update(ref, replace(RECORDED, confirmed_by=("Ahmed",)))
    (posted,) = kit.fake.to(SARAH)
    card = json.dumps(posted.card, ensure_ascii=False)
    assert "12 juin, confirmed by Ahmed, 4 juil. 2026." in card, card
    assert "Question:" not in card  # French sets a narrow no-break space before the colon
    (members,) = kit.fake.of("members")
    assert members.path.endswith(f"/v3/conversations/{cid}/members") and members.status == 200
    assert members.authorization == f"Bearer {TOKEN}"


async def test_an_update_whose_reader_is_unknown_keeps_the_views_locale(kit: Kit) -> None:
    """The person never stated a locale, or the connector cannot say whose chat it is: the
    card is still updated, in the view's own locale (never held back)."""
    await stored_reference(kit)  # no locale kept
    ref = await kit.channel().send(address(), QUESTION, key=KEY)
    await kit.channel().update(ref, RECORDED)
    (posted,) = kit.fake.to(SARAH)
    assert "Recorded as evidence: 12 June, confirmed by Sarah, 4 Jul 2026." in json.dumps(
        posted.card, ensure_ascii=False)
    kit.fake.fail("members", 403)
    await kit.channel().update(ref, replace(RECORDED, confirmed_by=("Ahmed",)))
    assert "confirmed by Ahmed, 4 Jul 2026." in json.dumps(posted.card, ensure_ascii=False)
    assert [c.status for c in kit.fake.of("members")] == [200, 403]
    assert len(kit.fake.of("update")) == 2


async def test_a_note_is_in_the_locale_of_the_persons_latest_activity(kit: Kit) -> None:
    """``note`` in the chat of a card: its text and its card in Sarah's Teams locale."""
    await _sarah_wrote_in(kit, "de-DE")
    channel = kit.channel()
    ref = await channel.send(address(), QUESTION, key=KEY)
    await channel.note(ref, SARAH, None)
    await channel.note(ref, SARAH, RECORDED)
    _, text, card = kit.fake.posted
    assert text.activity["text"].startswith("Ihre Antwort wurde nicht erfasst")
    assert "12. Juni" in json.dumps(card.card, ensure_ascii=False)
