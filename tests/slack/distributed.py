"""Slack as a distributed app in tests: a PostgreSQL database of its own per test, the settings
of a distributed app against the fake Slack, and an installer's browser walking the OAuth flow
over real HTTP (the bot's install path, the fake's authorize page, the bot's redirect)."""

from __future__ import annotations

import base64
import os
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from html import unescape
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import asyncpg
import pytest

from adapters.slack import schema
from adapters.slack.links import LinkSigner, install_url
from bot.clock import Clock
from bot.reach import postgres as reach
from devslack import LocalSlack
from tests.redis_url import TEST_REDIS
from tests.support.processes import merged, serve_settings

ADMIN_URL = os.environ.get("CLARIFY_TEST_DATABASE",
                           "postgresql://postgres@127.0.0.1:5432/postgres")
LINK_KEY = "install-link-key-for-tests-0123456789abcdef"
# CLARIFY_BOT_SLACK_TOKEN_KEY: 32 bytes, base64 (as `openssl rand -base64 32` prints them)
TOKEN_KEY = base64.b64encode(b"token-key-for-tests-0123456789ab").decode()
STATE_COOKIE = "slack-app-oauth-state"


def _with_database(name: str) -> str:
    parts = urlsplit(ADMIN_URL)
    return parts._replace(path=f"/{name}").geturl()


@pytest.fixture
async def database_url() -> AsyncIterator[str]:
    """A database of the test's own on the test PostgreSQL, at this release's schemas (the
    installations' and the reach record's, as ``clarify-bot db upgrade`` brings both), dropped
    afterwards."""
    name = f"clarify_oauth_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(ADMIN_URL.replace("postgresql+asyncpg", "postgresql"))
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    url = _with_database(name)
    engine = schema.open_engine(url, pool_size=1)
    try:
        await schema.upgrade(engine)
        await reach.upgrade(engine)
    finally:
        await engine.dispose()
    yield url
    admin = await asyncpg.connect(ADMIN_URL)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


def oauth_config(*, public_url: str, slack: LocalSlack, refresh_before_minutes: int = 120,
                 refresh_check_seconds: float = 60, directory_seconds: float = 10
                 ) -> dict[str, Any]:
    """The ``[slack.oauth]`` table for a bot installed through the fake Slack."""
    return {"enabled": True, "client_id": slack.client_id, "public_url": public_url,
            "authorize_url": slack.authorize_url,
            "refresh_before_minutes": refresh_before_minutes,
            "refresh_check_seconds": refresh_check_seconds,
            "directory_seconds": directory_seconds}


def process_settings(*, core: str, port: int, prefix: str, slack: LocalSlack,
                     oauth: dict[str, Any], **tables: Any) -> dict[str, Any]:
    """A ``clarify-bot serve`` process of the multi-process Slack tests: installed through OAuth
    (no workspace list), on the test Redis under ``prefix``, no daily cap, quick polls;
    ``tables`` merged in."""
    return merged(serve_settings(
        core=core, port=port, slack_api=slack.url, redis=TEST_REDIS, prefix=prefix,
        workspaces=False, oauth=oauth, clarify={"per_person_daily_cap": 1000},
        worker={"poll_interval_seconds": 0.2, "nice": 0}, answers={"poll_seconds": 0.2},
    ), tables)


def oauth_secrets(database_url: str, slack: LocalSlack) -> dict[str, str]:
    return {"SLACK_CLIENT_SECRET": slack.client_secret, "CLARIFY_BOT_INSTALL_LINK_KEY": LINK_KEY,
            "CLARIFY_BOT_DATABASE_URL": database_url, "CLARIFY_BOT_SLACK_TOKEN_KEY": TOKEN_KEY}


def link_for(tenant: str, *, clock: Clock, public_url: str, days: float = 1,
             key: str = LINK_KEY) -> str:
    value, _ = LinkSigner(key.encode()).issue(tenant, now=clock.now(),
                                               valid=timedelta(days=days))
    return install_url(public_url.rstrip("/") + "/slack/install", value)


@dataclass
class Installer:
    """A person's browser installing the app: what each page answered."""

    http: aiohttp.ClientSession
    slack: LocalSlack

    async def install(self, link: str, into: str) -> tuple[int, str]:
        """Open the install link, approve on Slack's page for workspace (or org) ``into``,
        and follow the redirect back to the bot: its status and page."""
        async with self.http.get(link) as page:
            body = await page.text()
            if page.status != 200:
                return page.status, body
            cookie = page.cookies.get(STATE_COOKIE)
        authorize = unescape(re.search(r'href="([^"]+/oauth/v2/authorize[^"]*)"', body)[1])
        self.slack.installing = into
        async with self.http.get(authorize, allow_redirects=False) as approved:
            assert approved.status == 302, await approved.text()
            back = approved.headers["Location"]
        headers = {"Cookie": f"{STATE_COOKIE}={cookie.value}"} if cookie else {}
        async with self.http.get(back, headers=headers) as done:
            return done.status, await done.text()

    async def redirect(self, url: str, *, code: str, state: str, cookie: str | None = None
                       ) -> tuple[int, str]:
        headers = {"Cookie": f"{STATE_COOKIE}={cookie}"} if cookie else {}
        async with self.http.get(f"{url}/slack/oauth_redirect", params={"code": code,
                                 "state": state}, headers=headers) as done:
            return done.status, await done.text()


def state_of(authorize_url: str) -> str:
    return parse_qs(urlsplit(authorize_url).query)["state"][0]
