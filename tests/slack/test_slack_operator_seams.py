"""Where the operator's commands meet running processes: ``clarify-bot slack installations
rebind|remove`` while web and worker ``serve`` processes hold a view of the installations read
before: the old tenant's question is never sent into the workspace rebound a moment ago, and an
event from a workspace removed a moment ago is dropped as unserved."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from pathlib import Path

import pytest
import structlog

from adapters.slack import operators, schema
from adapters.slack.installations import InstallationDB
from adapters.slack.sealing import Sealer
from bot.core.models import ReasonCode
from bot.metrics import REGISTRY
from devslack import LocalSlack
from tests.bot.test_service import SECRETS
from tests.engine.conftest import new_clarification
from tests.slack import test_slack_grid_processes as grid_module
from tests.slack.distributed import (
    TOKEN_KEY,
    database_url,  # noqa: F401 (a fixture)
    oauth_secrets,
)
from tests.slack.test_slack_distributed import (  # noqa: F401 (fixtures)
    GLOBEX,
    Distributed,
    bot,
    people,
)
from tests.slack.test_slack_grid_processes import grid, slack, until_events  # noqa: F401
from tests.support.processes import BIN, wait_until

# slow: bot processes, `devcore` and CLI runs
# about installations, not the core's contract
pytestmark = [pytest.mark.full_contract, pytest.mark.slow]


async def _cli(tmp_path: Path, slack: LocalSlack, database_url: str,  # noqa: F811
               *args: str) -> tuple[int, str]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/"),
           **{k: v for k, v in SECRETS.items() if k != "SLACK_BOT_TOKEN"},
           **oauth_secrets(database_url, slack)}
    done = await asyncio.create_subprocess_exec(
        str(BIN / "clarify-bot"), *args, "--config", str(tmp_path / "bot-0.toml"), env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await done.communicate()
    return done.returncode or 0, out.decode()


async def test_a_rebound_org_gets_no_question_of_its_old_tenant_from_a_stale_worker(
        tmp_path: Path, slack: LocalSlack, database_url: str,  # noqa: F811
        devcore_url: str) -> None:  # noqa: F811
    """Acme's org-wide install serves Sarah's workspace; the workers' view says so (read at the
    first question) and is not read again for ten minutes. The operator rebinds the org to
    globex: acme's next question to Sarah is not sent (skipped TENANT_SCOPE_MISMATCH)."""
    async with grid(tmp_path, slack, database_url, devcore_url, webs=1, workers=1,
                    directory_seconds=600) as g:
        assert (await g.install("acme", "E0ACME"))[0] == 200
        first = await new_clarification(g.dev, authority={"authored_by": ["p-sarah"]})
        await wait_until(lambda: g.cards_of("U0SARAH", first), "Sarah's first card", seconds=30)
        status, out = await _cli(tmp_path, slack, database_url, "slack", "installations",
                                 "rebind", "E0ACME", "--tenant", "globex", "--yes", "--no-check")
        assert status == 0, out
        before = len(slack.dm_of("U0SARAH"))
        second = await new_clarification(g.dev, authority={"authored_by": ["p-sarah"]})
        skips = await until_events(g, second, "p-sarah")
        assert {e.reason_code for e in skips if e.type == "skipped"} == {
            ReasonCode.TENANT_SCOPE_MISMATCH}, [(e.type, e.reason_code) for e in skips]
        assert len(slack.dm_of("U0SARAH")) == before  # nothing of acme's went there
        assert not g.cards_of("U0SARAH", second)


async def test_events_from_a_workspace_removed_a_moment_ago_are_quiet_and_counted(
        bot: Distributed, tmp_path: Path) -> None:  # noqa: F811
    """``slack installations remove`` (another process) takes Globex out while this web
    process's view still has it: Globex's next event is refused quietly and counted as
    unserved, as for a workspace never installed, not handed to Bolt's authorize (which
    found no installation and logged an error)."""
    assert (await bot.install("globex", GLOBEX))[0] == 200
    assert bot.installations.resolve(GLOBEX) is not None  # this process's view has it
    removed = await operators.remove(
        bot.installations.db.engine, GLOBEX, client_id=bot.slack.client_id,
        api_url=bot.slack.url + "/api/", sealer=Sealer.from_setting(TOKEN_KEY))
    assert removed is not None
    counted = REGISTRY.value("clarify_slack_unserved_total", kind="app_home_opened")
    home = bot.slack.event("app_home_opened", GLOBEX)
    home["event"].update(user="U0GINA", tab="home", channel="D0GINA")
    with structlog.testing.capture_logs() as logs:
        answered = await bot.post_signed(json.dumps(home).encode(),
                                         content_type="application/json")
    assert answered.status == 200
    assert REGISTRY.value("clarify_slack_unserved_total", kind="app_home_opened") == counted + 1
    assert not [line for line in logs if line.get("log_level") in ("error", "critical")], logs


OLD_KEY = base64.b64encode(b"old-token-key-for-tests-01234567").decode()


async def test_rotate_token_key_while_cards_go_out_from_every_process(
        tmp_path: Path, slack: LocalSlack, database_url: str,  # noqa: F811
        devcore_url: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """docs/slack.md's rotation, step 2 while two web and two worker processes run with
    ``NEW,OLD``: the tokens rest sealed with the old key, questions go out from the workers
    while ``clarify-bot slack rotate-token-key`` re-seals them. Every card arrives, nothing is
    logged at error level, and no key or token is printed."""
    both = f"{TOKEN_KEY},{OLD_KEY}"

    def secrets(url: str, fake: LocalSlack) -> dict[str, str]:
        return {**oauth_secrets(url, fake), "CLARIFY_BOT_SLACK_TOKEN_KEY": both}
    monkeypatch.setattr(grid_module, "oauth_secrets", secrets)
    async with grid(tmp_path, slack, database_url, devcore_url, webs=2, workers=2,
                    directory_seconds=10) as g:
        assert (await g.install("acme", "E0ACME"))[0] == 200
        assert (await g.install("globex", "T0GLOBEX", web=1))[0] == 200
        engine = schema.open_engine(database_url, pool_size=1)
        try:  # the rotation's starting point: every token sealed with the old key
            await schema.seal_tokens(engine, Sealer.from_setting(f"{OLD_KEY},{TOKEN_KEY}"))
        finally:
            await engine.dispose()
        asked = [await new_clarification(g.dev, authority={"authored_by": ["p-sarah"]})
                 for _ in range(3)]
        asked += [await new_clarification(g.dev, authority={"authored_by": ["p-gina"]},
                                          workspace="globex-legal", tenant="globex")
                  for _ in range(3)]
        env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/"),
               **{k: v for k, v in SECRETS.items() if k != "SLACK_BOT_TOKEN"},
               **secrets(database_url, slack)}
        rotated = await asyncio.create_subprocess_exec(
            str(BIN / "clarify-bot"), "slack", "rotate-token-key", "--config",
            str(tmp_path / "bot-0.toml"), env=env, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT)
        out = (await rotated.communicate())[0].decode()
        assert rotated.returncode == 0, out
        assert TOKEN_KEY not in out and OLD_KEY not in out
        async def reached(cid: str, user: str, who: str) -> bool:
            """A card, or the question queued for the person's digest: the scenario's own
            questions may have reached Sarah first, and her card batching takes the rest."""
            return bool(g.cards_of(user, cid)) or any(
                e.reason_code is ReasonCode.DIGESTED for e in await g.events(cid, who))
        for cid in asked[:3]:
            await wait_until(lambda c=cid: reached(c, "U0SARAH", "p-sarah"), "Sarah's card",
                        seconds=40)
        for cid in asked[3:]:
            await wait_until(lambda c=cid: reached(c, "U0GINA", "p-gina"), "Gina's card",
                             seconds=40)
        for cid, who in [(c, "p-sarah") for c in asked[:3]] + [(c, "p-gina") for c in asked[3:]]:
            assert not [e for e in await g.events(cid, who) if e.type == "skipped"]
        engine = schema.open_engine(database_url, pool_size=1)
        try:  # every token now opens with the new key alone
            await InstallationDB(engine=engine, client_id=slack.client_id,
                                 sealer=Sealer.from_setting(TOKEN_KEY)).check_tokens()
        finally:
            await engine.dispose()
    lines = [line for role in ("web", "worker") for line in g.lines(role)]
    assert not [line for line in lines if line.get("level") in ("error", "critical")], [
        line for line in lines if line.get("level") in ("error", "critical")]
    text = "".join(p.read_text() for paths in g.logs.values() for p in paths)
    assert not [s for s in [*slack.issued, TOKEN_KEY, OLD_KEY] if s in text]
