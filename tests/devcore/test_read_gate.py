"""The read gate over HTTP: span text and titles only to callers whose person may read the source.

Scenario ``acme``: clr-00001 and clr-00002 are Legal documents every Legal role may read; clr-00003
is a Finance invoice only Finance editors and stewards may read. Priya is a Legal viewer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import httpx
import pytest

from bot.core.client import CoreClient
from bot.core.models import (
    AnswerCustomInput,
    AnswerRequest,
    Clarification,
    CreateClarificationRequest,
    Role,
)
from bot.core.models import (
    Channel as ContractChannel,
)
from bot.engine.rbac import may_read
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore
from devcore.scenario import read_scenario

SARAH, PRIYA, MARIA, UNBOUND = (
    "acme-key-sarah-editor", "acme-key-priya-viewer", "acme-key-maria-steward", "acme-key-unbound")
KEY_PERSON = {SARAH: "p-sarah", PRIYA: "p-priya", MARIA: "p-maria", UNBOUND: None}


def _texts(c: Clarification) -> list[str]:
    """Everything a clarification holds that was taken from the document's text."""
    found = [c.span_excerpt, c.question, c.document.title, *(x.label for x in c.candidates)]
    found += [r.answer_custom.source_text for r in c.responses
              if r.answer_custom is not None and r.answer_custom.source_text]
    return [t for t in found if t]


async def _create(dev: DevCoreClient, **acl: object) -> str:
    spec = read_scenario("acme")["clarifications"][1]
    spec["document"]["content_hash"] = "sha256:" + hashlib.sha256(repr(acl).encode()).hexdigest()
    spec["document"]["acl"].update(acl)
    created = await dev.create_clarification(
        request=CreateClarificationRequest.model_validate(spec))
    return created.clarification.id


async def test_a_key_whose_person_may_not_read_gets_the_redacted_view(
    bot_client: CoreClient, client_for: Callable[[str], CoreClient], core_url: str
) -> None:
    """Priya (Legal viewer) reading the Finance invoice: ids, states and dates, no document text."""
    full = await bot_client.get_clarification(clarification_id="clr-00003")
    seen = await client_for(PRIYA).get_clarification(clarification_id="clr-00003")
    assert seen.redacted and not full.redacted
    assert (seen.span_excerpt, seen.question, seen.document.title) == ("", "", "")
    assert [x.label for x in seen.candidates] == ["", ""]
    assert [x.valid_from for x in seen.candidates] == [x.valid_from for x in full.candidates]
    assert (seen.id, seen.state, seen.document.url) == (full.id, full.state, full.document.url)
    async with httpx.AsyncClient(base_url=core_url) as http:
        raw = await http.get("/v1/clarifications/clr-00003",
                             headers={"Authorization": f"Bearer {PRIYA}"})
    assert raw.json()["redacted"] is True
    assert not [t for t in _texts(full) if t in raw.text]


@pytest.mark.parametrize("cid", ["clr-00001", "clr-00002", "clr-00003"])
async def test_a_key_bound_to_no_person_always_gets_the_redacted_view(
    client_for: Callable[[str], CoreClient], cid: str
) -> None:
    """An API key without a principal has no person to check: redacted, whatever the ACL."""
    seen = await client_for(UNBOUND).get_clarification(clarification_id=cid)
    assert seen.redacted and _texts(seen) == []


async def test_the_clarify_audience_keeps_the_full_view(bot_client: CoreClient) -> None:
    """The bot gates each delivery itself, so its token reads every record in full."""
    for cid in ("clr-00001", "clr-00002", "clr-00003", "clr-00004"):
        c = await bot_client.get_clarification(clarification_id=cid)
        assert not c.redacted and c.span_excerpt and c.question and c.document.title


async def test_the_list_hides_titles_the_caller_may_not_read(
    client_for: Callable[[str], CoreClient]
) -> None:
    """In the list, documentTitle is empty (redacted) exactly where the full record would be."""
    priya = client_for(PRIYA)
    page = await priya.list_clarifications()
    for item in page.items:
        full = await priya.get_clarification(clarification_id=item.id)
        assert item.redacted == full.redacted
        assert item.document_title == full.document.title
    assert {i.id for i in page.items if i.redacted} == {"clr-00003"}


async def test_deny_and_allow_lists_decide_before_roles(
    dev_client: DevCoreClient, client_for: Callable[[str], CoreClient]
) -> None:
    """The ACL's deny list beats a reading role; its allow list admits a non-member."""
    denied = await _create(dev_client, deny_people=["p-sarah"])
    allowed = await _create(dev_client, workspace_id="acme-legal", read_roles=["steward"],
                            allow_people=["p-priya"])
    assert (await client_for(SARAH).get_clarification(clarification_id=denied)).redacted
    assert not (await client_for(PRIYA).get_clarification(clarification_id=allowed)).redacted
    assert (await client_for(SARAH).get_clarification(clarification_id=allowed)).redacted


async def test_free_form_notes_are_withheld_from_the_redacted_view(
    bot_client: CoreClient, client_for: Callable[[str], CoreClient]
) -> None:
    """A person's own words in a free-form answer are shown only where the span would be."""
    note = "per the side letter signed in Lisbon"
    await bot_client.answer_clarification(clarification_id="clr-00002", request=AnswerRequest(
        answer_custom=AnswerCustomInput(valid_from="2026-09-01", source_text=note),
        responder="p-ahmed", rights=Role.EDITOR, channel=ContractChannel.SLACK))
    full = await client_for(SARAH).get_clarification(clarification_id="clr-00002")
    hidden = await client_for(UNBOUND).get_clarification(clarification_id="clr-00002")
    assert full.responses[0].answer_custom is not None
    assert full.responses[0].answer_custom.source_text == note
    assert hidden.responses[0].answer_custom is not None
    assert hidden.responses[0].answer_custom.source_text is None
    assert hidden.responses[0].interval == full.responses[0].interval


async def test_the_core_applies_the_bots_own_read_check(
    core: ReferenceCore, client_for: Callable[[str], CoreClient]
) -> None:
    """For every key and clarification, full view exactly when the bot's may_read allows it."""
    for key, person_id in KEY_PERSON.items():
        for cid in ("clr-00001", "clr-00002", "clr-00003", "clr-00004"):
            seen = await client_for(key).get_clarification(clarification_id=cid)
            person = core.directory.person_in(tenant_id="acme", person_id=person_id or "")
            allowed = person is not None and may_read(
                person, acl=seen.document.acl, tenant_id="acme").allowed
            assert seen.redacted is not allowed, (key, cid)
