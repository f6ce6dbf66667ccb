"""``clarify-bot db …`` and ``clarify-bot slack …``: the installation database and installs.

- ``db upgrade``: create or upgrade the installation database's schema (never done at start-up);
  ``db status``: the version it holds and the one this release needs.
- ``slack install-link --tenant ID [--days N]``: an install link bound to a tenant, signed with
  ``CLARIFY_BOT_INSTALL_LINK_KEY``, valid for ``slack.oauth.link_days`` unless told otherwise.
- ``slack installations [--json]``: every installation (workspace, org, tenant, installed at,
  token expiry, state), never a token.
- ``slack rotate-token-key``: every token re-sealed with the first of
  ``CLARIFY_BOT_SLACK_TOKEN_KEY``'s keys (the step between adding a new key and removing the old).
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import click

_CONFIG = click.option("--config", "config", type=click.Path(path_type=Path, exists=True),
                       default=None, help="The TOML settings file (default: $CLARIFY_BOT_CONFIG).")


def _settings(config: Path | None, *needed: str) -> Any:
    from bot.settings import SettingsError, load_settings

    try:
        settings = load_settings(config)
        for name in needed:
            settings.secrets.require(name)
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None
    return settings


async def _with_engine(settings: Any, work: Any) -> Any:
    from adapters.slack import schema

    url = settings.secrets.require("database_url")
    engine = schema.open_engine(url, pool_size=1)
    try:
        return await work(engine)
    except (OSError, Exception) as exc:
        if isinstance(exc, click.ClickException):
            raise
        raise click.ClickException(f"cannot use the installation database at "
                                   f"{schema.where(url)} ({type(exc).__name__})") from None
    finally:
        await engine.dispose()


@click.group()
def db() -> None:
    """The Slack installation database (a distributed app, docs/slack.md)."""


@db.command()
@_CONFIG
def upgrade(config: Path | None) -> None:
    """Create the installation tables, or bring them to this release's schema."""
    from adapters.slack import schema
    from adapters.slack.sealing import Sealer

    settings = _settings(config, "database_url")
    key = settings.secrets.value("slack_token_key")
    sealer = None if key is None else Sealer.from_setting(key)
    async def upgrading(engine: Any) -> list[schema.Step]:
        try:
            return await schema.upgrade(engine, sealer)
        except schema.TokensInPlainText as exc:  # not a database error: said as it is
            raise click.ClickException(str(exc)) from None

    applied = asyncio.run(_with_engine(settings, upgrading))
    where = schema.where(settings.secrets.require("database_url"))
    for step in applied:
        click.echo(f"applied {step.version}: {step.what}")
    click.echo(f"the installation database at {where} is at schema version {schema.LATEST}"
               + ("" if applied else " (nothing to do)"))


@db.command()
@_CONFIG
def status(config: Path | None) -> None:
    """The schema version the installation database holds, and the one this release needs."""
    from adapters.slack import schema

    settings = _settings(config, "database_url")
    found = asyncio.run(_with_engine(settings, schema.version))
    click.echo(f"schema version {found}; this release needs {schema.LATEST}"
               + ("" if found == schema.LATEST else ": run `clarify-bot db upgrade`"))
    if found != schema.LATEST:
        raise SystemExit(1)


@click.group()
def slack() -> None:
    """Slack as a distributed app: install links and installations (docs/slack.md)."""


def _require_distributed(settings: Any) -> None:
    if not settings.slack.distributed:
        raise click.ClickException(
            "Slack is in the single-workspace mode (SLACK_BOT_TOKEN); install links and "
            "installations need slack.oauth.enabled = true (docs/slack.md)")


@slack.command("install-link")
@_CONFIG
@click.option("--tenant", required=True, help="The core's tenant the installation serves.")
@click.option("--days", type=click.FloatRange(min=0, min_open=True, max=90), default=None,
              help="How long the link is valid (default: slack.oauth.link_days).")
def install_link(config: Path | None, tenant: str, days: float | None) -> None:
    """Print an install link bound to a tenant: whoever installs Clarify with it installs it
    for that tenant, before it expires, in one workspace or org."""
    from adapters.slack.links import LinkSigner, install_url
    from bot.clock import SystemClock

    settings = _settings(config, "install_link_key")
    _require_distributed(settings)
    oauth = settings.slack.oauth
    signer = LinkSigner(settings.secrets.require("install_link_key").encode())
    try:
        value, link = signer.issue(tenant, now=SystemClock().now(),
                                   valid=timedelta(days=days or oauth.link_days))
    except ValueError as exc:
        raise click.ClickException(f"--tenant: {exc}") from None
    click.echo(install_url(oauth.install_url, value))
    click.echo(f"for tenant {link.tenant}, valid until {link.expires_at:%Y-%m-%d %H:%M} UTC; it "
               "installs one workspace or org (again: a reinstall)", err=True)


@slack.command()
@_CONFIG
@click.option("--json", "as_json", is_flag=True, help="One JSON object per installation.")
def installations(config: Path | None, as_json: bool) -> None:
    """List the installations: workspace, org, tenant, installed at, token expiry, state."""
    from adapters.slack import schema
    from adapters.slack.installations import InstallationDB

    settings = _settings(config, "database_url")
    _require_distributed(settings)

    async def listing(engine: Any) -> list[dict[str, object]]:
        await schema.require_current(engine)
        db = InstallationDB(engine=engine, client_id=settings.slack.oauth.client_id or "")
        return [i.public() for i in await db.all()]

    try:
        rows = asyncio.run(_with_engine(settings, listing))
    except schema.SchemaOutdated as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        for row in rows:
            click.echo(json.dumps(row, sort_keys=True))
        return
    if not rows:
        click.echo("no installations yet: `clarify-bot slack install-link --tenant ID`")
        return
    columns = ("key", "team_id", "enterprise_id", "tenant", "installed_at",
               "token_expires_at", "state", "reason")
    table = [[_cell(row[c]) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in table)) for i, c in enumerate(columns)]
    click.echo("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for r in table:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


def _cell(value: object) -> str:
    if value is None:
        return "-"
    text = str(value)
    return text[:19].replace("T", " ") if len(text) >= 19 and text[4:5] == "-" else text


@slack.command("rotate-token-key")
@_CONFIG
def rotate_token_key(config: Path | None) -> None:
    """Re-seal every stored token with the first key of CLARIFY_BOT_SLACK_TOKEN_KEY (and any
    token still in plain text); the older keys can then be removed."""
    from adapters.slack import schema
    from adapters.slack.sealing import Sealer, TokenKeyError

    settings = _settings(config, "database_url", "slack_token_key")
    _require_distributed(settings)
    sealer = Sealer.from_setting(settings.secrets.require("slack_token_key"))

    async def rotate(engine: Any) -> schema.Resealed:
        try:
            await schema.require_current(engine)
            return await schema.seal_tokens(engine, sealer)
        except (schema.SchemaOutdated, TokenKeyError) as exc:  # said as they are
            raise click.ClickException(str(exc)) from None

    done = asyncio.run(_with_engine(settings, rotate))
    click.echo(f"re-sealed {done.sealed} row(s) of tokens, deleted {done.deleted} superseded "
               f"row(s); every token is sealed with key id {sealer.current}: the other keys "
               "can be removed from CLARIFY_BOT_SLACK_TOKEN_KEY")
