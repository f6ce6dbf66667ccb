"""The steward's override and "Not the right person" against the bot as ``serve`` assembles it
(``open_service``: settings file, store, engine, worker loop, outbox consumers, the Slack
adapter mounted on its web server), the reference core over HTTP and the fake Slack; people
press buttons with signed requests. The service runs in the test's event loop on a ManualClock
(so the decline's "no clock move" is checked); waiting for what the running worker and outbox do
is bounded real-time polling."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.clock import ManualClock
from bot.core.client import CoreClient
from bot.core.models import BindingStatus, ClarificationState, JobState, ResponseRecord, Role
from bot.settings import load_settings
from clarify_bot.app import open_service
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore
from devslack import LocalSlack, Message
from tests.bot.test_service import SECRETS, config_text
from tests.engine.conftest import new_clarification
from tests.slack.conftest import SlackPeople
from tests.slack.test_slack_decline import LEASE, PASSED_ON, WHY_NAMED, declined_events
from tests.slack.test_slack_override import note_input
from tests.support.processes import free_port, healthy, wait_until

NOTE = "Countersigned letter of 2 July"


@dataclass
class Served(SlackPeople):
    slack: LocalSlack
    url: str
    http: aiohttp.ClientSession
    signing_secret: str
    clock: ManualClock
    core: ReferenceCore
    bot: CoreClient
    dev: DevCoreClient

    async def post_signed(self, body: bytes, *, timestamp: float | None = None,
                          **kwargs: Any) -> aiohttp.ClientResponse:
        """Signed at the service's clock (it checks the signature's age against it)."""
        stamp = self.clock.now().timestamp() if timestamp is None else timestamp
        return await super().post_signed(body, timestamp=stamp, **kwargs)

    async def until(self, check: Callable[[], Any], what: str, seconds: float = 20) -> Any:
        return await wait_until(check, what, seconds)

    async def card_for(self, user_id: str, cid: str) -> Message:
        cards: list[Message] = await self.until(lambda: self.cards_of(user_id, cid),
                                                f"a card for {user_id}")
        return cards[-1]

    async def shows(self, message: Message, words: str) -> None:
        await self.until(lambda: words in self.text_of(message), f"{words!r} in the card")

    async def responses(self, cid: str) -> list[ResponseRecord]:
        return list((await self.bot.get_clarification(clarification_id=cid)).responses)


@pytest.fixture
async def served(tmp_path: Path, clock: ManualClock, core: ReferenceCore, core_url: str,
                 truth: CoreClient, dev_client: DevCoreClient, fake_slack: LocalSlack
                 ) -> AsyncIterator[Served]:
    port = free_port()
    config = tmp_path / "clarify-bot.toml"
    config.write_text(config_text(core=core_url, port=port, slack_api=fake_slack.url,
                                  answers={"poll_seconds": 0.05}))
    settings = load_settings(config, environ=SECRETS)
    async with contextlib.AsyncExitStack() as stack:
        service = await stack.enter_async_context(open_service(settings, clock=clock))
        running = asyncio.create_task(service.run(role="all"))

        async def stop() -> None:
            service.stop()
            await asyncio.wait_for(running, 30)
        stack.push_async_callback(stop)
        http = await stack.enter_async_context(aiohttp.ClientSession())
        made = Served(slack=fake_slack, url=f"http://127.0.0.1:{port}", http=http,
                      signing_secret=SECRETS["SLACK_SIGNING_SECRET"], clock=clock, core=core,
                      bot=truth, dev=dev_client)
        await made.until(lambda: healthy(made.url, http), "the bot to listen")
        yield made


async def conflicted(served: Served) -> tuple[str, Message]:
    cid = await new_clarification(served.dev, authority={"authored_by": ["p-sarah"],
                                                         "named": ["p-ahmed"]},
                                  severity="critical")
    for user_id, index in (("U0SARAH", 0), ("U0AHMED", 1)):
        card = await served.card_for(user_id, cid)
        assert (await served.click(user_id, card, f"clarify.answer.{index}")).status == 200
        await served.until(lambda n=index: _count(served, cid, n + 1), "the answer recorded")
    notices: list[Message] = await served.until(lambda: served.slack.dm_of("U0MARIA"),
                                                "the steward's conflict card")
    return cid, notices[-1]


async def _count(served: Served, cid: str, count: int) -> bool:
    return len(await served.responses(cid)) >= count


async def open_override(served: Served, notice: Message, index: int) -> dict[str, Any]:
    opened = len(served.slack.calls_to("views.open"))
    assert (await served.click("U0MARIA", notice, f"clarify.override.{index}")).status == 200
    await served.until(lambda: len(served.slack.calls_to("views.open")) > opened, "the modal")
    # the modal just opened: an App Home published meanwhile is kept among the views too
    return [v for v in served.slack.views.values() if v.get("type") == "modal"][-1]


async def test_served_slack_steward_override(served: Served, contract: str) -> None:
    cid, notice = await conflicted(served)
    modal = await open_override(served, notice, 1)
    response = await served.submit("U0MARIA", modal, {"override.note": note_input(NOTE)})
    assert response.status == 200
    await served.until(lambda: _count(served, cid, 3), "the override recorded")
    last = (await served.responses(cid))[-1]
    note = NOTE if contract == "full" else None  # a baseline core keeps no note
    assert (last.responder, last.answer_index, last.note) == ("p-maria", 1, note)
    assert last.binding_status is BindingStatus.STEWARD_OVERRIDE
    c = await served.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.ANSWERED
    await served.shows(served.card("U0SARAH", cid), "Recorded as a steward decision")
    # the card she decided from is replaced by the outcome: no "Decide" buttons left
    await served.shows(notice, "Recorded as a steward decision")
    assert "clarify.override" not in served.text_of(notice)


async def test_served_slack_steward_override_refused_for_a_non_steward(served: Served) -> None:
    cid, notice = await conflicted(served)
    before = await served.responses(cid)
    key = next(k for k in served.core.directory.people if k[1] == "p-maria")
    maria = served.core.directory.people[key]
    served.core.directory.people[key] = maria.model_copy(update={"memberships": [
        ms.model_copy(update={"role": Role.EDITOR}) for ms in maria.memberships]})
    modal = await open_override(served, notice, 0)
    response = await served.submit("U0MARIA", modal, {"override.note": note_input("Mine")})
    assert response.status == 200
    told = await served.until(lambda: served.slack.calls_to("chat.postEphemeral"),
                              "Maria to be told")
    assert told[-1].args["user"] == "U0MARIA"
    c = await served.bot.get_clarification(clarification_id=cid)
    assert c.state is ClarificationState.CONFLICTED and c.responses == before


@pytest.mark.full_contract  # the expedite extension
async def test_served_slack_not_the_right_person(served: Served) -> None:
    cid = await new_clarification(served.dev, authority={"authored_by": ["p-ahmed"],
                                                         "named": ["p-sarah"]})
    ahmed = await served.card_for("U0AHMED", cid)
    c = await served.bot.get_clarification(clarification_id=cid)
    served.clock.advance(LEASE)  # the lease ran out: the job waits out its 48 h window

    async def waiting() -> bool:
        job = await served.bot.get_job(job_id=str(c.job_id))
        return job.state is JobState.AVAILABLE
    await served.until(waiting, "the job to wait out its window")
    assert not served.cards_of("U0SARAH", cid)
    moved = served.clock.now()
    assert (await served.click("U0AHMED", ahmed, "clarify.decline")).status == 200
    await served.shows(ahmed, PASSED_ON)
    sarah = await served.card_for("U0SARAH", cid)
    assert served.clock.now() == moved  # no clock move: the decline moved it on
    assert WHY_NAMED in served.text_of(sarah)
    c = await served.bot.get_clarification(clarification_id=cid)
    assert [(ev.person_id, ev.attempt) for ev in declined_events(c)] == [("p-ahmed", 0)]


async def test_served_queue_cache_seconds_reaches_the_board(tmp_path: Path, core_url: str,
                                                            fake_slack: LocalSlack) -> None:
    """``answers.queue_cache_seconds`` is the TTL of the stewards' remembered queues."""
    config = tmp_path / "clarify-bot.toml"
    config.write_text(config_text(core=core_url, port=free_port(), slack_api=fake_slack.url,
                                  answers={"queue_cache_seconds": 5}))
    async with open_service(load_settings(config, environ=SECRETS)) as service:
        assert service.engine.interactions.board.ttl_seconds == 5
