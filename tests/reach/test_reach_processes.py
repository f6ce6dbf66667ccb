"""The reach record over real processes: `clarify-bot db upgrade` on a fresh PostgreSQL database,
`clarify-bot serve` (memory store, the record in that database) against the reference core
(`clarify-bot devcore`) and the local Slack stand-in, a person's click, then `clarify-bot report
--json --tenant acme` as a subprocess: its numbers equal what the stand-in delivered and what
the core recorded; `clarify-bot clarify erase-attribution` then leaves no trace of the person in
the report or the table. The report CLI reads the database its URL names (an operator's tool);
in chat, only a steward sees the reach detail, and an editor or another tenant's steward who
forges the click is refused."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import asyncpg
import pytest

from bot.core.client import CoreClient
from bot.core.models import BindingStatus
from devcore.client import DevCoreClient
from devslack import APP_TOKEN, LocalSlack
from tests.bot.test_serve import SECRETS, SIGNING_SECRET, settings, signed_click
from tests.conftest import CLARIFY_TOKEN, DEV_TOKEN
from tests.reach.test_reach_ready import bare_database  # noqa: F401 (a fixture)
from tests.slack.conftest import fake_slack, from_workspace  # noqa: F401 (a fixture)
from tests.support.processes import CLARIFY_BOT, Processes, free_port, plain_env, wait_until
from tests.support.rigs import new_clarification

pytestmark = [pytest.mark.slow, pytest.mark.full_contract]
MARIA = "acme-key-maria-steward"  # a steward's key at the reference core
USERS = ("U0SARAH", "U0AHMED", "U0PRIYA", "U0MARIA", "U0TOM", "U0JONAS", "U0LEE")


async def run(*args: str, env: dict[str, str]) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        CLARIFY_BOT, *args, env=plain_env(**env), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode()


def cards(slack: LocalSlack) -> list[tuple[str, str]]:
    """(clarification, person) of every question card the stand-in holds in a DM."""
    found = []
    for user in USERS:
        for message in slack.dm_of(user):
            delivery = str(((message.metadata or {}).get("event_payload") or {}).get(
                "delivery", ""))
            parts = delivery.split("|")
            if len(parts) >= 4 and parts[3] == "question":
                found.append((parts[0], parts[1]))
    return found


@pytest.fixture
async def served(processes: Processes, devcore_url: str, fake_slack: LocalSlack,  # noqa: F811
                 bare_database: str) -> AsyncIterator[dict[str, str]]:  # noqa: F811
    yield await serve(processes, devcore_url, fake_slack, bare_database)


async def serve(processes: Processes, devcore_url: str, fake_slack: LocalSlack,  # noqa: F811
                bare_database: str) -> dict[str, str]:  # noqa: F811
    env = {"CLARIFY_BOT_DATABASE_URL": bare_database}
    code, out = await run("db", "upgrade", env=env)  # as an operator would, before serve
    assert code == 0, out
    port = free_port()
    bot = await processes.serve(
        settings(core=devcore_url, port=port, slack_api=fake_slack.url, slack={"mode": "http"}),
        env=plain_env(**{**SECRETS, "SLACK_APP_TOKEN": APP_TOKEN, **env}))
    return {**env, "url": bot.url, "core": devcore_url,
            "config": str(processes.tmp_path / "serve-0.toml")}


async def report(env: dict[str, str]) -> dict[str, Any]:
    code, out = await run("report", "--json", "--tenant", "acme",
                          env={"CLARIFY_BOT_DATABASE_URL": env["CLARIFY_BOT_DATABASE_URL"]})
    assert code == 0, out
    return json.loads(out)


async def test_the_report_counts_what_was_delivered_and_recorded(
        served: dict[str, str], fake_slack: LocalSlack) -> None:  # noqa: F811
    slack = fake_slack
    # the critical question's quorum is two: Sarah and Ahmed both give the first answer
    await wait_until(lambda: {("clr-00001", "p-sarah"), ("clr-00001", "p-ahmed")} <= set(
        cards(slack)), "both cards of the critical question")
    for user in ("U0SARAH", "U0AHMED"):
        body, headers = signed_click(slack, user)
        async with aiohttp.ClientSession() as http, http.post(
                f"{served['url']}/slack/events", data=body, headers=headers) as acked:
            assert acked.status == 200
    async with CoreClient(base_url=served["core"], token=CLARIFY_TOKEN) as core:
        async def recorded() -> list[Any]:
            listed = (await core.list_clarifications(tenant_id="acme")).items
            return [await core.get_clarification(clarification_id=c.id) for c in listed]

        async def settled() -> bool:
            found = await report(served)
            bound = sum(r["bound"] for r in found["rows"])
            asked = sum(r["asked"] for r in found["rows"])
            return bound >= 1 and asked == len({cid for cid, _ in cards(slack)})

        await wait_until(settled, "the click's bound answer in the report", seconds=30)
        found = await report(served)
        questions = await recorded()
    delivered = cards(slack)
    assert sum(r["asked"] for r in found["rows"]) == len({cid for cid, _ in delivered})
    bound = [c for c in questions
             if any(r.binding_status is BindingStatus.BOUND for r in c.responses)]
    assert sum(r["bound"] for r in found["rows"]) == len(bound) == 1
    skipped: dict[str, set[str]] = {}
    for c in questions:
        for ev in c.events:
            if ev.type == "skipped" and ev.reason_code is not None and ev.person_id:
                skipped.setdefault(ev.reason_code.value, set()).add(ev.person_id)
    groups = {"NO_DELIVERY_ALIAS": "no_alias", "NO_READ_PERMISSION": "no_read_permission"}
    by_cause = {c["cause"]: set(c["people"]) for c in found["causes"]}
    for code, group in groups.items():
        assert by_cause.get(group, set()) == skipped.get(code, set()), code
    per_person = Counter(person for _, person in delivered)
    top = {(person, count) for person, _, count in found["interruptions"]["top"]}
    assert top == set(per_person.items())

    erase = {"CLARIFY_BOT_DATABASE_URL": served["CLARIFY_BOT_DATABASE_URL"],
             "CLARIFY_BOT_CORE__URL": served["core"], "CLARIFY_BOT_API_KEY": MARIA,
             "CLARIFY_BOT_STORE__BACKEND": "memory"}
    code, out = await run("clarify", "erase-attribution", "--person", "p-sarah", "--yes",
                          env=erase)
    assert code == 0, out
    after = json.dumps(await report(served))
    assert "p-sarah" not in after and "U0SARAH" not in after
    db = await asyncpg.connect(served["CLARIFY_BOT_DATABASE_URL"])
    try:
        rows = [dict(r) for r in await db.fetch("SELECT * FROM clarify_reach_entries")]
    finally:
        await db.close()
    assert rows and not [r for r in rows if "p-sarah" in json.dumps(r, default=str)
                         or "U0SARAH" in json.dumps(r, default=str)]


async def test_over_serve_a_steward_opens_the_reach_tab_and_others_are_refused(
        served: dict[str, str], fake_slack: LocalSlack) -> None:  # noqa: F811
    """`clarify-bot serve` with the record in PostgreSQL: Maria (steward of acme-legal) opens
    her Home and its Reach tab, which names the people not reached; Sarah (an editor) and Gina
    (globex's steward) forge the same signed click: their Homes name nobody of acme."""
    slack = fake_slack
    slack.connect(f"{served['url']}/slack/events", SIGNING_SECRET)
    slack.add_user("U0GINA", name="gina", team="T0GLOBEX")
    async with DevCoreClient(base_url=served["core"], token=DEV_TOKEN) as dev:
        await new_clarification(dev, authority={"authored_by": ["p-tom", "p-olga", "p-sarah"]})
    await wait_until(lambda: len(cards(slack)) >= 2, "the first cards")

    async def skipped_in_report() -> bool:
        return bool((await report(served))["causes"])

    await wait_until(skipped_in_report, "the skips in the record", seconds=30, every=0.5)
    names = {p: (await person(served, p)) for p in
             {x for c in (await report(served))["causes"] for x in c["people"]}}
    assert (await slack.open_home("U0MARIA")).status == 200
    await wait_until(lambda: "home.tabs" in json.dumps(slack.homes.get("U0MARIA")),
                     "Maria's Home with its tabs")
    assert (await slack.click_home("U0MARIA", action_id="home.reach", value="reach")
            ).status == 200
    await wait_until(lambda: all(n in json.dumps(slack.homes["U0MARIA"], ensure_ascii=False)
                                 for n in names.values()), "the Reach tab's names")
    forged = slack.home_actions("U0MARIA", action_id="home.reach", value="reach")

    def as_(user: str, team: str, org: str | None) -> dict[str, Any]:
        payload = json.loads(json.dumps(forged))
        from_workspace(payload, team, org)
        payload["user"]["id"] = user
        return payload

    assert (await slack.post_interaction(as_("U0SARAH", "T0ACME", "E0ACME"))).status == 200
    await wait_until(lambda: slack.homes.get("U0SARAH") is not None, "Sarah's Home")
    shown = json.dumps(slack.homes["U0SARAH"], ensure_ascii=False)
    assert "Nothing for you here" in shown
    assert not any(n in shown for n in names.values())
    # a workspace this bot does not serve: refused at the edge, nothing published
    refused = await slack.post_interaction(as_("U0GINA", "T0GLOBEX", None))
    assert (refused.status, slack.homes.get("U0GINA")) == (403, None)


async def person(env: dict[str, str], person_id: str) -> str:
    async with CoreClient(base_url=env["core"], token=CLARIFY_TOKEN) as core:
        return (await core.get_person(person_id=person_id, tenant_id="acme")).display_name


async def test_every_cause_slack_can_give_is_counted_as_the_core_and_the_stand_in_recorded(
        served: dict[str, str], fake_slack: LocalSlack) -> None:  # noqa: F811
    """Questions to Tom (may not read them), Olga (no Slack alias) and one more person each,
    whose card Slack refuses: Priya's with ``cannot_dm_bot``, Ahmed's with ``user_disabled``.
    The report's causes are exactly the core's skips, grouped (no_read_permission, no_alias,
    blocked_or_uninstalled, deactivated); the refused got no DM for those questions; --failed
    lists exactly the people under the causes."""
    slack = fake_slack
    await wait_until(lambda: len(cards(slack)) >= 3, "the scenario's first cards")
    expected = {"no_read_permission": {"p-tom"}, "no_alias": {"p-olga"},
                "blocked_or_uninstalled": {"p-priya"}, "deactivated": {"p-ahmed"}}

    async def causes() -> dict[str, set[str]]:
        return {c["cause"]: set(c["people"]) for c in (await report(served))["causes"]}

    made = {}
    async with DevCoreClient(base_url=served["core"], token=DEV_TOKEN) as dev:
        for person, error, cause in (("p-priya", "cannot_dm_bot", "blocked_or_uninstalled"),
                                     ("p-ahmed", "user_disabled", "deactivated")):
            # her card only: the scenario's other cards may still be going out
            slack.fail_next("chat.postMessage", status=200, error=error,
                            channel=f"U0{person.removeprefix('p-').upper()}")
            made[person] = await new_clarification(dev, authority={"authored_by": [
                "p-tom", "p-olga", person]})

            async def shown(person: str = person, cause: str = cause) -> bool:
                return person in (await causes()).get(cause, set())

            await wait_until(shown, f"{person} under {cause}", seconds=45, every=0.5)
    found = await causes()
    async with CoreClient(base_url=served["core"], token=CLARIFY_TOKEN) as core:
        listed = (await core.list_clarifications(tenant_id="acme")).items
        records = [await core.get_clarification(clarification_id=c.id) for c in listed]
    skipped = {(ev.person_id, ev.reason_code.value) for c in records for ev in c.events
               if ev.type == "skipped" and ev.reason_code is not None and ev.person_id}
    assert {p for people in found.values() for p in people} == {p for p, _ in skipped}
    assert {("p-tom", "NO_READ_PERMISSION"), ("p-olga", "NO_DELIVERY_ALIAS"),
            ("p-priya", "DELIVERY_FAILED"), ("p-ahmed", "DELIVERY_FAILED")} <= skipped
    for cause, people in expected.items():
        assert people <= found[cause], cause
    sent = set(cards(slack))
    assert (made["p-priya"], "p-priya") not in sent and (made["p-ahmed"], "p-ahmed") not in sent
    code, out = await run("report", "--json", "--failed", "--tenant", "acme",
                          env={"CLARIFY_BOT_DATABASE_URL": served["CLARIFY_BOT_DATABASE_URL"]})
    assert code == 0, out
    failed = {f["person_id"]: f["cause"] for f in json.loads(out)["failed"]}
    assert failed == {p: cause for cause, people in found.items() for p in people}
