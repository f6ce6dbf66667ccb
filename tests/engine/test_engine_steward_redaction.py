"""A steward who may not read the document (the RBAC gate says no) never sees its title:
escalations, high-severity notices, conflict notices, unreachable-quorum notices and dead-letter
digests name "a document in the <workspace> workspace" and the clarification id instead. The
redacted escalation keeps the document's link (spec §3.3: "document link, no span text"): it
is what lets the steward act; the other notices carry no link."""

from __future__ import annotations

from datetime import timedelta

from bot.core.models import AnswerRequest, Role
from bot.core.models import Channel as ContractChannel
from tests.engine.conftest import Rig

TITLE = "Harbor Street office lease: renewal letter"
URL = "https://docs.acme.example/legal/harbor-lease-renewal"
NO_STEWARD = ["viewer", "editor"]  # Maria is the Legal steward: this ACL does not let her read


def steward_texts(rig: Rig, cid: str) -> dict[str, str]:
    """What Maria received about one clarification, as Slack renders it, by delivery kind."""
    texts: dict[str, str] = {}
    for sent in rig.channel.to("p-maria"):
        items = getattr(sent.message, "items", None) or getattr(sent.message, "notices", None)
        if sent.key.clarification_id == cid or any(i.clarification_id == cid
                                                   for i in items or ()):
            texts[sent.key.kind] = rig.rendered(sent)
    return texts


def assert_neutral(text: str, cid: str, *, linked: bool = False) -> None:
    assert TITLE not in text and "Harbor Street" not in text
    assert (URL in text) is linked and ("harbor-lease" in text) is linked
    assert "lease" not in text.replace("harbor-lease-renewal", "")  # no question, no span
    # the workspace by its name, or by its id from a baseline core (which gives no name)
    assert f"a document in the Legal workspace (clarification {cid})" in text \
        or f"a document in the acme-legal workspace (clarification {cid})" in text


async def test_steward_without_read_rights_gets_a_neutral_reference(rig: Rig) -> None:
    """Escalation (nobody could be asked) and the dead-letter digest after it: neutral; the
    escalation with the document's link (and "Open document"), the digest without."""
    cid = await rig.create(authority={"authored_by": ["p-olga"]}, read_roles=NO_STEWARD)
    await rig.burst()
    await rig.later(timedelta(seconds=61))
    texts = steward_texts(rig, cid)
    assert set(texts) == {"steward_escalation", "dead_letter"}
    assert_neutral(texts["steward_escalation"], cid, linked=True)
    assert "Open document" in texts["steward_escalation"]
    assert_neutral(texts["dead_letter"], cid)


async def test_notices_to_a_steward_without_read_rights_are_neutral(rig: Rig) -> None:
    """High-severity notice, unreachable-quorum notice and conflict notice: neutral too."""
    high = await rig.create(authority={"authored_by": ["p-ahmed"]}, severity="high",
                            read_roles=NO_STEWARD)
    short = await rig.create(authority={"authored_by": ["p-sarah", "p-olga"]},
                             severity="critical", read_roles=NO_STEWARD)
    split = await rig.create(authority={"authored_by": ["p-sarah", "p-ahmed"]},
                             severity="critical", read_roles=NO_STEWARD)
    await rig.burst()
    for person, index in (("p-sarah", 0), ("p-ahmed", 1)):
        await rig.bot.answer_clarification(clarification_id=split, request=AnswerRequest(
            answer_index=index, responder=person, rights=Role.EDITOR,
            channel=ContractChannel.SLACK))
    await rig.engine.stewards.notify_conflict(
        await rig.bot.get_clarification(clarification_id=split))
    await rig.later(timedelta(seconds=60))  # the high-severity notice's window ends
    assert set(steward_texts(rig, high)) == {"steward_notices"}
    assert set(steward_texts(rig, short)) == {"steward_quorum"}
    assert set(steward_texts(rig, split)) == {"steward_conflict"}
    for cid in (high, short, split):
        for text in steward_texts(rig, cid).values():
            assert_neutral(text, cid)


async def test_steward_with_read_rights_still_sees_the_title(rig: Rig) -> None:
    """The default ACL lets the steward read: the escalation keeps the title and its link (a
    baseline core gives no title: "the source document", linked)."""
    cid = await rig.create(authority={"authored_by": ["p-olga"]})
    await rig.burst()
    (text,) = steward_texts(rig, cid).values()
    title = TITLE if rig.contract == "full" else "the source document"
    assert title in text and URL in text and "Legal workspace (clarification" not in text
