"""Slack as a distributed app, end to end: the bot as ``serve`` assembles it (``open_service``)
with installations in a real PostgreSQL, the reference core over HTTP and the fake Slack as
Slack's side of the OAuth v2 flow. Installs go through install links in a browser's steps over
real HTTP; each workspace's cards are posted with that workspace's own token (the fake records
which token made each post); a revoked token removes only its workspace, its people skipped
at once; an uninstalled
workspace's people are skipped with a reason code; rotating tokens are refreshed before they
expire on the injected clock, and never used expired."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import structlog

from adapters.slack.channel import SlackChannel
from bot.clock import ManualClock
from bot.core.client import CoreClient
from bot.core.models import ClarificationEvent, ReasonCode
from bot.metrics import REGISTRY
from bot.process.pauses import Pauses
from bot.settings import load_settings
from clarify_bot.app import open_service
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore
from devslack import LocalSlack
from tests.bot.test_service import SECRETS, config_text
from tests.engine.conftest import new_clarification
from tests.slack.distributed import (
    LINK_KEY,
    Installer,
    database_url,  # noqa: F401 (a fixture)
    link_for,
    oauth_config,
    oauth_secrets,
)
from tests.slack.test_slack_served_steward import Served
from tests.support.processes import free_port, healthy

ACME, GLOBEX = "T0ACME", "T0GLOBEX"


def _config(core_url: str, port: int, slack: LocalSlack, audit: Path, **oauth: Any) -> str:
    # no single-workspace list: each installation is bound to its tenant by its link
    return config_text(core=core_url, port=port, slack_api=slack.url, workspaces=False,
                       oauth=oauth_config(public_url=f"http://127.0.0.1:{port}", slack=slack,
                                          **oauth),
                       answers={"poll_seconds": 0.05}, audit={"sink": "jsonl", "path": audit})


class Distributed(Served):
    service: Any = None
    installer: Installer | None = None

    @property
    def installations(self) -> Any:
        return self.service.engine.channels["slack"].installations

    async def install(self, tenant: str, into: str) -> tuple[int, str]:
        assert self.installer is not None
        return await self.installer.install(
            link_for(tenant, clock=self.clock, public_url=self.url), into)

    async def readyz(self) -> dict[str, Any]:
        async with self.http.get(f"{self.url}/readyz") as got:
            body: dict[str, Any] = await got.json()
            return body


@pytest.fixture
def people(fake_slack: LocalSlack) -> LocalSlack:
    fake_slack.add_workspace(ACME, enterprise_id="E0ACME", name="Acme")
    fake_slack.add_workspace(GLOBEX, name="Globex")
    for user in list(fake_slack.users):
        fake_slack.users[user].team = ACME
    fake_slack.add_user("U0GINA", team=GLOBEX)
    return fake_slack


async def _served(stack: contextlib.AsyncExitStack, *, tmp_path: Path, clock: ManualClock,
                  core: ReferenceCore, core_url: str, truth: CoreClient, dev: DevCoreClient,
                  slack: LocalSlack, database: str, **oauth: Any) -> Distributed:
    port = free_port()
    config = tmp_path / "clarify-bot.toml"
    config.write_text(_config(core_url, port, slack, tmp_path / "audit.jsonl", **oauth))
    environ = {k: v for k, v in SECRETS.items() if k != "SLACK_BOT_TOKEN"}
    settings = load_settings(config, environ={**environ, **oauth_secrets(database, slack)})
    service = await stack.enter_async_context(open_service(settings, clock=clock))
    running = asyncio.create_task(service.run(role="all"))

    async def stop() -> None:
        service.stop()
        await asyncio.wait_for(running, 30)
    stack.push_async_callback(stop)
    http = await stack.enter_async_context(aiohttp.ClientSession())
    made = Distributed(slack=slack, url=f"http://127.0.0.1:{port}", http=http,
                       signing_secret=SECRETS["SLACK_SIGNING_SECRET"], clock=clock, core=core,
                       bot=truth, dev=dev)
    made.service, made.installer = service, Installer(http, slack)
    await made.until(lambda: healthy(made.url, http), "the bot to listen")
    return made


@pytest.fixture
async def bot(tmp_path: Path, clock: ManualClock, core: ReferenceCore, core_url: str,
              truth: CoreClient, dev_client: DevCoreClient, people: LocalSlack,
              database_url: str) -> AsyncIterator[Distributed]:  # noqa: F811
    async with contextlib.AsyncExitStack() as stack:
        yield await _served(stack, tmp_path=tmp_path, clock=clock, core=core, core_url=core_url,
                            truth=truth, dev=dev_client, slack=people, database=database_url)


async def globex_question(dev: DevCoreClient) -> str:
    return await new_clarification(dev, authority={"authored_by": ["p-gina"]},
                                   workspace="globex-legal", tenant="globex")


@pytest.mark.slow
async def test_two_tenants_installed_through_links_each_get_cards_with_their_own_token(
        bot: Distributed, tmp_path: Path) -> None:
    assert (await bot.install("acme", ACME))[0] == 200
    status, page = await bot.install("globex", GLOBEX)
    assert status == 200 and "Clarify is installed in Globex" in page
    listed = {i.key: i for i in bot.installations.installed}
    assert {k: (i.tenant, i.state) for k, i in listed.items()} == {
        ACME: ("acme", "active"), GLOBEX: ("globex", "active")}
    assert listed[ACME].enterprise_id == "E0ACME"

    acme = await new_clarification(bot.dev, authority={"authored_by": ["p-sarah"]})
    globex = await globex_question(bot.dev)
    sarah = await bot.card_for("U0SARAH", acme)
    gina = await bot.card_for("U0GINA", globex)
    # the fake knows which installation's token posted each card
    assert (sarah.team, gina.team) == (ACME, GLOBEX)
    tokens = {t: i.key for t, i in bot.slack.issued.items()}
    assert sorted(tokens.values()) == [ACME, GLOBEX]
    # an answer from each workspace is taken, in its own tenant
    assert (await bot.click("U0SARAH", sarah, "clarify.answer.0")).status == 200
    assert (await bot.click("U0GINA", gina, "clarify.answer.0", team_id=GLOBEX,
                            enterprise_id=None)).status == 200
    await bot.until(lambda: _answered(bot, acme), "Sarah's answer recorded")
    await bot.until(lambda: _answered(bot, globex), "Gina's answer recorded")
    installs = _audit((tmp_path / "audit.jsonl").read_text(), "slack_installed")
    assert {(e["extra"]["installation"], e["extra"]["tenant"]) for e in installs} == {
        (ACME, "acme"), (GLOBEX, "globex")}


async def _answered(bot: Distributed, cid: str) -> bool:
    return bool((await bot.bot.get_clarification(clarification_id=cid)).responses)


def _audit(out: str, kind: str) -> list[dict[str, Any]]:
    """The audit sink's JSON lines of one type (the service's sink is stdout)."""
    return [json.loads(line) for line in out.splitlines()
            if line.startswith("{") and json.loads(line).get("type") == kind]


async def test_an_install_without_a_valid_link_is_refused_and_audited(
        bot: Distributed, tmp_path: Path) -> None:
    async with bot.http.get(f"{bot.url}/slack/install") as page:
        assert page.status == 403
        assert "link" in await page.text()
    forged = link_for("acme", clock=bot.clock, public_url=bot.url, key="x" * 40)
    expired = link_for("acme", clock=bot.clock, public_url=bot.url, days=1)
    bot.clock.advance(timedelta(days=2))
    for link in (forged, expired):
        async with bot.http.get(link) as page:
            assert page.status == 403
    # Slack's own install button, or a replayed redirect: a code with no state the bot issued
    assert bot.installer is not None
    code = bot.slack.grant_code(ACME)
    status, _ = await bot.installer.redirect(bot.url, code=code, state="made-up-state",
                                             cookie="made-up-state")
    assert status in (401, 403)
    assert bot.installations.installed == []
    assert bot.slack.counts["oauth.v2.access"] == 0  # no code was exchanged
    refused = _audit((tmp_path / "audit.jsonl").read_text(), "slack_install_refused")
    assert [r["extra"]["reason"] for r in refused] == ["missing", "bad_signature", "expired",
                                                       "invalid_state"]


async def test_a_link_of_one_tenant_never_takes_another_tenants_workspace(
        bot: Distributed) -> None:
    assert (await bot.install("acme", ACME))[0] == 200
    status, page = await bot.install("globex", ACME)  # globex's link used in Acme's workspace
    assert status == 403 and "another organisation" in page
    assert [(i.key, i.tenant) for i in bot.installations.installed] == [(ACME, "acme")]
    assert (await bot.install("acme", ACME))[0] == 200  # a reinstall for the same tenant


async def test_a_revoked_token_removes_its_workspace_only_and_its_people_are_skipped_at_once(
        bot: Distributed) -> None:
    """Slack answers a send ``token_revoked``: nothing was posted, so the person is skipped
    NO_DELIVERY_ALIAS with that cause (not DELIVERY_FAILED "mid-send", and no pause); the
    installation is removed for every process; the other workspaces are served."""
    await bot.install("acme", ACME)
    await bot.install("globex", GLOBEX)
    bot.slack.revoke(GLOBEX)
    globex = await globex_question(bot.dev)

    async def skipped() -> list[ClarificationEvent]:
        c = await bot.bot.get_clarification(clarification_id=globex)
        return [e for e in c.events if e.reason_code and e.person_id == "p-gina"]
    events = await bot.until(skipped, "Gina skipped")
    assert {e.reason_code for e in events} == {ReasonCode.NO_DELIVERY_ALIAS}
    assert any("token_revoked" in e.message and "uninstalled" in e.message for e in events)
    assert not any("mid-send" in e.message for e in events)
    assert bot.installations.resolve(GLOBEX).state == "removed"
    assert bot.installations.resolve(GLOBEX).reason == "token_revoked"
    acme = await new_clarification(bot.dev, authority={"authored_by": ["p-sarah"]})
    assert (await bot.card_for("U0SARAH", acme)).team == ACME
    assert bot.slack.dm_of("U0GINA") == []
    ready = await bot.readyz()
    assert ready["status"] == "ok"  # the other workspaces are served
    assert ready["slack_installations"]["paused_installations"] == {}
    assert REGISTRY.value("clarify_slack_installations", state="removed") == 1
    assert REGISTRY.value("clarify_delivery_paused") == 0


async def test_an_uninstalled_workspace_is_removed_and_its_people_skipped_with_a_reason(
        bot: Distributed) -> None:
    await bot.install("acme", ACME)
    await bot.install("globex", GLOBEX)
    event = bot.slack.event("app_uninstalled", GLOBEX)
    bot.slack.revoke(GLOBEX)
    answered = await bot.post_signed(json.dumps(event).encode(),
                                     content_type="application/json")
    assert answered.status == 200
    assert bot.installations.resolve(GLOBEX).state == "removed"
    globex = await globex_question(bot.dev)

    async def skipped() -> list[ReasonCode]:
        c = await bot.bot.get_clarification(clarification_id=globex)
        return [e.reason_code for e in c.events if e.reason_code] if hasattr(c, "events") \
            else []
    codes = await bot.until(skipped, "Gina skipped")
    assert ReasonCode.NO_DELIVERY_ALIAS in codes
    assert bot.slack.dm_of("U0GINA") == []
    acme = await new_clarification(bot.dev, authority={"authored_by": ["p-sarah"]})
    assert (await bot.card_for("U0SARAH", acme)).team == ACME


@pytest.mark.slow
async def test_rotating_tokens_are_refreshed_before_they_expire_on_the_injected_clock(
        tmp_path: Path, clock: ManualClock, core: ReferenceCore, core_url: str,
        truth: CoreClient, dev_client: DevCoreClient, people: LocalSlack,
        database_url: str) -> None:  # noqa: F811
    people.rotation, people.token_seconds = True, 30 * 60
    people.epoch = lambda: clock.now().timestamp()
    with structlog.testing.capture_logs() as logs:
        await _rotating(tmp_path=tmp_path, clock=clock, core=core, core_url=core_url,
                        truth=truth, dev=dev_client, slack=people, database=database_url)
    secrets = [*people.issued, *people._refresh, people.client_secret, LINK_KEY]
    text = json.dumps(logs, default=str)
    assert "slack.token_refresh_failed" in text and "slack.token_refreshed" in text
    assert not [s for s in secrets if s in text]


async def _rotating(*, tmp_path: Path, clock: ManualClock, core: ReferenceCore, core_url: str,
                    truth: CoreClient, dev: DevCoreClient, slack: LocalSlack, database: str
                    ) -> None:
    people = slack
    async with contextlib.AsyncExitStack() as stack:
        bot = await _served(stack, tmp_path=tmp_path, clock=clock, core=core, core_url=core_url,
                            truth=truth, dev=dev, slack=people, database=database,
                            refresh_before_minutes=5, refresh_check_seconds=0.2)
        await bot.install("acme", ACME)
        first = bot.installations.resolve(ACME).token_expires_at
        assert first == clock.now() + timedelta(minutes=30)
        for round_ in range(1, 4):
            clock.advance(timedelta(minutes=26))  # inside the margin: due, not yet expired
            await bot.until(lambda r=round_: len(people.refreshes) == r,
                            f"refresh {round_}")
            cid = await new_clarification(bot.dev, authority={"authored_by": ["p-sarah"]})
            await bot.card_for("U0SARAH", cid)
        assert people.refreshes == [ACME] * 3
        assert people.calls_with_expired_tokens() == []
        assert not [c for c in people.calls if c.error == "invalid_refresh_token"]
        # a refresh that fails is retried and said, and the token is never used expired
        people.fail_next("oauth.v2.access", status=200, error="internal_error", times=3)
        clock.advance(timedelta(minutes=26))
        await bot.until(lambda: REGISTRY.value("clarify_slack_token_refreshes_total",
                                               outcome="failed") >= 1, "a failed refresh")
        # retried after refresh_check_seconds on the injected clock
        await bot.until(lambda: (clock.advance(0.5), len(people.refreshes) == 4)[1],
                        "the refresh retried")
        assert people.calls_with_expired_tokens() == []


@pytest.mark.slow
async def test_a_distributed_app_s_worker_is_built_with_its_installations_pauses(
        bot: Distributed) -> None:
    """The platform's ``pauses`` hook builds the per-installation pauses before the worker is
    built (nothing set on the worker afterwards): a refused token pauses its workspace alone."""
    pauses = bot.service.engine.worker.pauses
    channel = bot.service.engine.channels["slack"]
    assert isinstance(pauses, Pauses)
    assert isinstance(channel, SlackChannel) and channel.installations is not None
    assert pauses.check == channel.installations.check
