"""Installations' tokens at rest, through the bot as ``serve`` assembles it: installs over real
HTTP, the fake Slack issuing (and rotating, and revoking) tokens, the rows read back raw from
PostgreSQL. No token Slack issued is ever in a row, a log line or the audit as it is; a reinstall
and a refresh leave one row per installation; the token of an install the bot refuses is given
back with ``auth.revoke``; every install event has its own id, and the redirect's raw ``error``
is never recorded."""

from __future__ import annotations

import base64
import contextlib
import json
from datetime import timedelta
from pathlib import Path

import asyncpg
import pytest
import structlog
from slack_sdk.oauth.installation_store import Installation

from adapters.slack import schema
from adapters.slack.installations import QUIET, SealedInstallationStore
from adapters.slack.sealing import Sealer, key_id
from bot.clock import ManualClock
from bot.core.client import CoreClient
from bot.settings import SettingsError, load_settings
from clarify_bot import preflight
from clarify_bot.app import open_service
from devcore.client import DevCoreClient
from devcore.core import ReferenceCore
from devslack import LocalSlack
from tests.bot.test_service import SECRETS
from tests.engine.conftest import new_clarification
from tests.slack.distributed import (
    TOKEN_KEY,
    database_url,  # noqa: F401 (a fixture)
    oauth_secrets,
)
from tests.slack.test_slack_distributed import (  # noqa: F401 (fixtures)
    ACME,
    GLOBEX,
    Distributed,
    _audit,
    _config,
    _served,
    bot,
    people,
)
from tests.support.processes import free_port

TABLES = ("slack_installations", "slack_bots")


async def raw_rows(url: str) -> str:
    """Every row of slack_sdk's token tables, as PostgreSQL renders them (each column's text)."""
    conn = await asyncpg.connect(url)
    try:
        rows = [r[0] for t in TABLES for r in await conn.fetch(f"SELECT t::text FROM {t} AS t")]
        return "\n".join(rows)
    finally:
        await conn.close()


async def row_counts(url: str) -> dict[str, int]:
    conn = await asyncpg.connect(url)
    try:
        return {t: await conn.fetchval(f"SELECT count(*) FROM {t}") for t in TABLES}
    finally:
        await conn.close()


async def test_tokens_rest_sealed_and_a_reinstall_or_a_refresh_leaves_one_row(
        tmp_path: Path, clock: ManualClock, core: ReferenceCore, core_url: str,
        truth: CoreClient, dev_client: DevCoreClient, people: LocalSlack,  # noqa: F811
        database_url: str) -> None:  # noqa: F811
    people.rotation, people.token_seconds = True, 30 * 60
    people.epoch = lambda: clock.now().timestamp()
    with structlog.testing.capture_logs() as logs:
        async with contextlib.AsyncExitStack() as stack:
            served = await _served(stack, tmp_path=tmp_path, clock=clock, core=core,
                                   core_url=core_url, truth=truth, dev=dev_client,
                                   slack=people, database=database_url,
                                   refresh_before_minutes=5, refresh_check_seconds=0.2)
            assert (await served.install("acme", ACME))[0] == 200
            assert (await served.install("acme", ACME))[0] == 200  # a reinstall
            clock.advance(timedelta(minutes=26))  # the token is due: refreshed once
            await served.until(lambda: len(people.refreshes) == 1, "a refresh")
            cid = await new_clarification(served.dev, authority={"authored_by": ["p-sarah"]})
            card = await served.card_for("U0SARAH", cid)  # sent with the newest token, opened
            assert card.team == ACME
            rows = await raw_rows(database_url)
            counts = await row_counts(database_url)
    issued = [*people.issued, *people._refresh]
    assert len(people.issued) == 3  # two installs, one refresh
    assert counts == {"slack_installations": 1, "slack_bots": 1}  # the superseded are gone
    assert "clarify-sealed:v1:" in rows
    assert not [t for t in issued if t in rows]
    assert not [t for t in issued if t in json.dumps(logs, default=str)]
    assert TOKEN_KEY not in json.dumps(logs, default=str)
    installs = _audit((tmp_path / "audit.jsonl").read_text(), "slack_installed")
    assert [e["extra"]["outcome"] for e in installs] == ["installed", "reinstalled"]
    assert len({e["event_id"] for e in installs}) == 2


async def test_the_token_of_a_refused_install_is_revoked_and_never_stored(
        bot: Distributed, database_url: str) -> None:  # noqa: F811
    with structlog.testing.capture_logs() as logs:
        assert (await bot.install("acme", ACME))[0] == 200
        status, _ = await bot.install("globex", ACME)  # globex's link in Acme's workspace
        assert status == 403
    kept, refused = list(bot.slack.issued)
    assert bot.slack.issued[refused].revoked and not bot.slack.issued[kept].revoked
    assert [c.error for c in bot.slack.calls_to("auth.revoke")] == [None]
    rows = await raw_rows(database_url)
    assert kept not in rows and refused not in rows
    text = json.dumps(logs, default=str)
    assert kept not in text and refused not in text
    assert {"event": "slack.refused_install_token", "outcome": "revoked",
            "log_level": "info"}.items() <= next(
        e for e in logs if e["event"] == "slack.refused_install_token").items()


async def test_each_install_refusal_has_its_own_id_and_a_raw_error_is_never_recorded(
        bot: Distributed, tmp_path: Path) -> None:  # noqa: F811
    with structlog.testing.capture_logs() as logs:
        for _ in range(2):  # two people opening the install path without a link
            async with bot.http.get(f"{bot.url}/slack/install") as page:
                assert page.status == 403
        hostile = "<script>alert(1)</script>"
        async with bot.http.get(f"{bot.url}/slack/oauth_redirect",
                                params={"error": hostile, "state": "s1"}) as page:
            assert hostile not in await page.text()
        async with bot.http.get(f"{bot.url}/slack/oauth_redirect",
                                params={"error": "access_denied", "state": "s2"}) as page:
            assert page.status == 200 and "cancelled" in await page.text()
        assert bot.installer is not None
        code = bot.slack.grant_code(ACME)
        for _ in range(2):  # the same forged redirect replayed: one event, twice recorded
            await bot.installer.redirect(bot.url, code=code, state="forged", cookie="forged")
    audit_text = (tmp_path / "audit.jsonl").read_text()
    refused = _audit(audit_text, "slack_install_refused")
    assert [(r["extra"]["stage"], r["extra"]["reason"]) for r in refused] == [
        ("install", "missing"), ("install", "missing"), ("redirect", "other"),
        ("redirect", "access_denied"), ("redirect", "invalid_state"),
        ("redirect", "invalid_state")]
    ids = [r["event_id"] for r in refused]
    assert len(set(ids[:4])) == 4 and ids[4] == ids[5] and ids[4] not in ids[:4]
    assert "script" not in audit_text and "script" not in json.dumps(logs, default=str)
    assert [e["reason"] for e in logs if e["event"] == "slack.install_refused"] == [
        "missing", "missing", "other", "access_denied", "invalid_state", "invalid_state"]


async def test_two_installs_and_two_refusals_get_an_id_each(
        bot: Distributed, tmp_path: Path) -> None:  # noqa: F811
    """Two workspaces installed and two installs refused: each event has its own id."""
    assert (await bot.install("acme", ACME))[0] == 200
    assert (await bot.install("globex", GLOBEX))[0] == 200
    assert (await bot.install("globex", ACME))[0] == 403
    assert (await bot.install("acme", GLOBEX))[0] == 403
    audit_text = (tmp_path / "audit.jsonl").read_text()
    for kind in ("slack_installed", "slack_install_refused"):
        events = _audit(audit_text, kind)
        assert len(events) == 2 and len({e["event_id"] for e in events}) == 2


async def test_serve_does_not_start_with_a_key_that_does_not_open_the_tokens(
        tmp_path: Path, clock: ManualClock, core_url: str, people: LocalSlack,  # noqa: F811
        database_url: str) -> None:  # noqa: F811
    """Tokens sealed with another key: start-up stops in one line naming the setting and the
    key ids, before anything is served; never a key or a token."""
    other = base64.b64encode(b"another-key-for-tests-0123456789"[:32]).decode()
    engine = schema.open_engine(database_url, pool_size=1)
    try:
        sealed = SealedInstallationStore(sealer=Sealer.from_setting(other),
                                         client_id=people.client_id, engine=engine, logger=QUIET)
        installation = Installation(app_id="A0FAKEAPP", team_id=ACME, bot_token="xoxb-T0ACME-zq",
                                    bot_id="B0", bot_user_id="U0BOT", user_id="U0INSTALLER")
        await sealed.async_save(installation)
    finally:
        await engine.dispose()
    config = tmp_path / "clarify-bot.toml"
    config.write_text(_config(core_url, free_port(), people, tmp_path / "audit.jsonl"))
    environ = {k: v for k, v in SECRETS.items() if k != "SLACK_BOT_TOKEN"}
    settings = load_settings(config, environ={**environ, **oauth_secrets(database_url, people)})
    with pytest.raises(SettingsError) as refused:
        async with open_service(settings, clock=clock):
            pytest.fail("served with a key that opens no token")
    said = str(refused.value)
    assert "CLARIFY_BOT_SLACK_TOKEN_KEY" in said and key_id(base64.b64decode(other)) in said
    assert other not in said and TOKEN_KEY not in said and "xoxb-T0ACME-zq" not in said
    # check-config's promise: the database part of its live checks refuses in the same words
    problem = await preflight.database_problem(settings)
    assert problem is not None and str(SettingsError([problem])) == said
