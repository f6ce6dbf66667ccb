"""``clarify-bot db …`` and ``clarify-bot slack …``: the installation database and installs.

- ``db upgrade``: create or upgrade the installation database's schema (never done at start-up);
  ``db status``: the version it holds and the one this release needs.
- ``slack install-link --tenant ID [--days N]``: an install link bound to a tenant, signed with
  ``CLARIFY_BOT_INSTALL_LINK_KEY``, valid for ``slack.oauth.link_days`` unless told otherwise.
- ``slack installations [--json]``: every installation (the columns in ``COLUMNS``), never a
  token; ``slack installations remove KEY`` forgets one (its tokens revoked at Slack and deleted,
  its tenant binding dropped) and ``slack installations rebind KEY --tenant ID`` moves one to
  another tenant, each after a confirmation (``--yes``) and audited.
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


async def _with_engine(settings: Any, work: Any, *, current: bool = False) -> Any:
    """``work(engine)`` on the installation database; ``current``: only at this release's
    schema (else the line naming `clarify-bot db upgrade`). Failures in one line: what failed
    and the fix (``adapters.slack.database``)."""
    from adapters.slack import database, schema

    url = settings.secrets.require("database_url")
    engine = schema.open_engine(url, pool_size=1)
    try:
        if current:
            await schema.require_current(engine)
        return await work(engine)
    except click.ClickException:
        raise
    except Exception as exc:  # what failed and the fix (adapters.slack.database), no value
        raise click.ClickException(database.failure(exc, url)) from None
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
        from bot.reach import postgres as reach

        try:
            applied = await schema.upgrade(engine, sealer)
        except schema.TokensInPlainText as exc:  # not a database error: said as it is
            raise click.ClickException(str(exc)) from None
        for step in await reach.upgrade(engine):
            click.echo(f"applied reach {step.version}: {step.what}")
        return applied

    applied = asyncio.run(_with_engine(settings, upgrading))
    where = schema.where(settings.secrets.require("database_url"))
    for step in applied:
        click.echo(f"applied {step.version}: {step.what}")
    click.echo(f"the installation database at {where} is at schema version {schema.LATEST}"
               + ("" if applied else " (nothing to do)"))


@db.command()
@_CONFIG
def status(config: Path | None) -> None:
    """The schema versions the database holds (the installation database's, the reach
    record's) and the ones this release needs."""
    from adapters.slack import schema
    from bot.reach import postgres as reach

    settings = _settings(config, "database_url")

    async def versions(engine: Any) -> tuple[int, int]:
        return await schema.version(engine), await reach.version(engine)

    found, kept = asyncio.run(_with_engine(settings, versions))
    behind = found != schema.LATEST or kept != reach.LATEST
    click.echo(f"schema version {found}; this release needs {schema.LATEST}")
    click.echo(f"reach schema version {kept}; this release needs {reach.LATEST}")
    for step in reach.STEPS:
        if step.version > kept:
            click.echo(f"  missing reach step {step.version}: {step.what}")
    if behind:
        click.echo("run `clarify-bot db upgrade`")
        raise SystemExit(1)


@click.group()
def slack() -> None:
    """Slack as a distributed app: install links and installations (docs/slack.md)."""


def _require_distributed(settings: Any) -> None:
    if not settings.slack.distributed:
        raise click.ClickException(
            "Slack is in the single-workspace mode (SLACK_BOT_TOKEN); install links and "
            "installations need slack.oauth.enabled = true (docs/slack.md)")


_NO_CHECK = click.option(
    "--no-check", is_flag=True,
    help="Do not ask the core whether the tenant is one the bot's token serves (when the core "
         "cannot be reached); the tenant is then taken as typed.")


def _tenant_checked(settings: Any, tenant: str, no_check: bool) -> None:
    """Refuse a tenant the core does not serve for the bot's token, before anything is bound
    to it (``clarify_bot.preflight.core_problem``); with --no-check, say that it was not."""
    from bot.settings import SettingsError
    from clarify_bot import preflight

    if no_check:
        click.echo(f"--no-check: tenant {tenant} was not checked against the core; a typo binds "
                   "the workspace to a tenant nobody serves (`clarify-bot slack installations "
                   "rebind` moves it)", err=True)
        return
    try:
        settings.secrets.require("core_token")
    except SettingsError as exc:
        raise click.ClickException(f"{exc} (the tenant is checked with the core; --no-check "
                                   "skips that)") from None
    from bot.logs import configure_logging

    configure_logging(level="critical", fmt="console")  # the refusal below says it all
    problem = asyncio.run(preflight.core_problem(settings, tenant=tenant))
    if problem is None:
        return
    hint = "" if problem.key == "--tenant" else \
        "; to go ahead without the core, --no-check (the tenant is then not checked)"
    raise click.ClickException(f"{problem}{hint}")


@slack.command("install-link")
@_CONFIG
@click.option("--tenant", required=True, help="The core's tenant the installation serves.")
@click.option("--days", type=click.FloatRange(min=0, min_open=True, max=90), default=None,
              help="How long the link is valid (default: slack.oauth.link_days).")
@_NO_CHECK
def install_link(config: Path | None, tenant: str, days: float | None, no_check: bool) -> None:
    """Print an install link bound to a tenant: whoever installs Clarify with it installs it
    for that tenant, before it expires, in one workspace or org. The tenant is first checked
    with the core (one the bot's token serves) unless --no-check."""
    from adapters.slack.links import LinkSigner, install_url
    from bot.clock import SystemClock

    settings = _settings(config, "install_link_key")
    _require_distributed(settings)
    oauth = settings.slack.oauth
    signer = LinkSigner(settings.secrets.require("install_link_key").encode())
    now = SystemClock().now()
    try:  # the tenant's form first: a malformed one needs no core to refuse
        signer.issue(tenant, now=now, valid=timedelta(days=days or oauth.link_days))
    except ValueError as exc:
        raise click.ClickException(f"--tenant: {exc}") from None
    _tenant_checked(settings, tenant, no_check)
    value, link = signer.issue(tenant, now=now, valid=timedelta(days=days or oauth.link_days))
    click.echo(install_url(oauth.install_url, value))
    click.echo(f"for tenant {link.tenant}, valid until {link.expires_at:%Y-%m-%d %H:%M} UTC; it "
               "installs one workspace or org (again: a reinstall)", err=True)


# what `slack installations` shows, in this order (docs/operations.md and docs/slack.md list
# the same; tests/cli/test_operator_path.py holds them to it)
COLUMNS = ("key", "team_id", "team_name", "enterprise_id", "tenant", "installed_at",
           "token_expires_at", "state", "reason", "refresh_failures")


@slack.group(invoke_without_command=True)
@_CONFIG
@click.option("--json", "as_json", is_flag=True,
              help="A JSON array, one object per installation ([] when there is none).")
@click.pass_context
def installations(ctx: click.Context, config: Path | None, as_json: bool) -> None:
    """List the installations (key, workspace, org, tenant, installed at, token expiry, state,
    reason, refresh failures); `remove` and `rebind` change one."""
    ctx.obj = config
    if ctx.invoked_subcommand is not None:
        return
    from adapters.slack.installations import InstallationDB

    settings = _settings(config, "database_url")
    _require_distributed(settings)

    async def listing(engine: Any) -> list[dict[str, object]]:
        db = InstallationDB(engine=engine, client_id=settings.slack.oauth.client_id or "")
        return [i.public() for i in await db.all()]

    rows = asyncio.run(_with_engine(settings, listing, current=True))
    if as_json:
        click.echo(json.dumps(rows, sort_keys=True, indent=2))
        return
    if not rows:
        click.echo("no installations yet: `clarify-bot slack install-link --tenant ID`")
        return
    table = [[_cell(row[c]) for c in COLUMNS] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in table)) for i, c in enumerate(COLUMNS)]
    click.echo("  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths, strict=True)).rstrip())
    for r in table:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


def _confirm(yes: bool, question: str) -> None:
    if yes:
        return
    if not click.confirm(question, default=False):
        raise click.ClickException("nothing changed (not confirmed; --yes answers yes)")


@installations.command()
@click.argument("key")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@_CONFIG
@click.pass_obj
def remove(group_config: Path | None, key: str, yes: bool, config: Path | None) -> None:
    """Remove an installation: its tokens revoked at Slack (auth.revoke) and deleted, its
    tenant binding dropped, so any tenant's link can install the workspace again. Every
    process stops serving it within slack.oauth.directory_seconds."""
    from adapters.slack import operators
    from adapters.slack.sealing import Sealer

    settings = _settings(config or group_config, "database_url", "slack_token_key")
    _require_distributed(settings)
    found = asyncio.run(_with_engine(settings, lambda engine: operators.find(engine, key),
                                     current=True))
    if found is None:
        raise click.ClickException(f"no installation {key} (`clarify-bot slack installations` "
                                   "lists them)")
    _confirm(yes, f"Remove {_described(found)}? Its people are no longer asked there")

    async def removing(engine: Any) -> Any:
        return await operators.remove(
            engine, key, client_id=settings.slack.oauth.client_id or "",
            api_url=settings.slack.api_url,
            sealer=Sealer.from_setting(settings.secrets.require("slack_token_key")))

    done = asyncio.run(_with_engine(settings, removing, current=True))
    if done is None:
        raise click.ClickException(f"no installation {key} (removed meanwhile?)")
    _audited(settings, "slack_installation_removed", done.key, tenant=done.tenant,
             extra={"token": done.revoked},
             message=f"An operator removed the Slack installation {done.key} (tenant "
                     f"{done.tenant}).")
    said = {"revoked": "its token revoked at Slack and deleted",
            "no token": "no token was kept",
            "already invalid": "its token, which Slack no longer accepted, deleted"}
    click.echo(f"removed {done.key} (was tenant {done.tenant}): "
               + said.get(done.revoked, f"its token deleted here; Slack could not be asked to "
                          f"revoke it ({done.revoked}), so a workspace admin should remove the "
                          "app there"))


@installations.command()
@click.argument("key")
@click.option("--tenant", required=True, help="The core's tenant it serves from now on.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@_NO_CHECK
@_CONFIG
@click.pass_obj
def rebind(group_config: Path | None, key: str, tenant: str, yes: bool, no_check: bool,
           config: Path | None) -> None:
    """Move an installation to another tenant, explicitly (an install never does): its people
    are asked for that tenant's questions from then on (a worker confirms a binding before it
    sends into a workspace, so the old tenant's questions stop at once).
    The tenant is first checked with the core unless --no-check."""
    from adapters.slack import operators

    settings = _settings(config or group_config, "database_url")
    _require_distributed(settings)
    if not operators.TENANT.match(tenant):
        raise click.ClickException("--tenant: not a tenant id (1-200 of A-Z a-z 0-9 . _ : @ -)")
    found = asyncio.run(_with_engine(settings, lambda engine: operators.find(engine, key),
                                     current=True))
    if found is None:
        raise click.ClickException(f"no installation {key} (`clarify-bot slack installations` "
                                   "lists them)")
    if found.tenant == tenant:
        click.echo(f"{key} already serves tenant {tenant}: nothing to do")
        return
    _tenant_checked(settings, tenant, no_check)
    _confirm(yes, f"Move {_described(found)} to tenant {tenant}? Its people will be asked "
                  f"{tenant}'s questions, no longer {found.tenant}'s")

    async def moving(engine: Any) -> Any:
        try:
            return await operators.rebind(engine, key, tenant=tenant)
        except operators.RebindRefused as exc:
            raise click.ClickException(str(exc)) from None

    before = asyncio.run(_with_engine(settings, moving, current=True))
    if before is None:
        raise click.ClickException(f"no installation {key} (removed meanwhile?)")
    _audited(settings, "slack_installation_rebound", key, tenant=tenant,
             extra={"from_tenant": before.tenant},
             message=f"An operator moved the Slack installation {key} from tenant "
                     f"{before.tenant} to tenant {tenant}.")
    click.echo(f"{key} now serves tenant {tenant} (was {before.tenant})")


def _described(found: Any) -> str:
    name = found.enterprise_name if found.is_enterprise_install else found.team_name
    scope = "org-wide installation" if found.is_enterprise_install else "installation"
    return f"the {scope} {found.key}{f' ({name})' if name else ''} of tenant {found.tenant}"


def _audited(settings: Any, kind: str, key: str, *, tenant: str, extra: dict[str, str],
             message: str) -> None:
    """The operator's change as an audit event, in the configured sink (the jsonl file, or
    stderr where the service would write stdout: the command's output stays its own)."""
    import sys
    import uuid

    from bot.audit import AuditEvent, JsonLinesSink
    from bot.clock import SystemClock

    audit = settings.audit
    sink = JsonLinesSink(path=audit.path) if audit.sink == "jsonl" and audit.path else \
        JsonLinesSink(stream=sys.stderr)
    # one id per operation: two removals of one key are two events (``operation``)
    operation = uuid.uuid4().hex
    sink.write(AuditEvent(type=kind, at=SystemClock().now(), clarification_id="-",
                          channel="slack", message=message, occurrence=operation,
                          extra={"installation": key, "tenant": tenant, "by": "cli",
                                 "operation": operation, **extra}))


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
