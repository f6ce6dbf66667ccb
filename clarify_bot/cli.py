"""The ``clarify-bot`` console script."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import click

from clarify_bot.errors import OneLineGroup, one_line


def _print_version(ctx: click.Context, _: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from clarify_bot.build import describe

    click.echo(describe())
    ctx.exit()


class Root(OneLineGroup):
    """The command group: every error one line, usage errors too (``OneLineGroup``)."""

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as exc:
            raise one_line(exc, exc.ctx or click.Context(self, info_name=info_name)) from None


@click.group(cls=Root)
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Print the release and the commit, then exit.")
def main() -> None:
    """clarify-bot: one-tap clarification of ambiguous dates, as governed evidence."""


@main.command()
@click.option("--web", is_flag=True,
              help="Instead of the printed story, start the sandbox: the same loop in your "
                   "browser on a local Slack (clarify-bot sandbox, port 8780).")
@click.option("--port", default=8780, show_default=True, type=click.IntRange(0, 65535),
              help="With --web: the page's port on 127.0.0.1 (0 picks a free one).")
@click.pass_context
def demo(ctx: click.Context, web: bool, port: int) -> None:
    """Run the whole loop on embedded defaults: reference core, scenario, answers, escalation."""
    from bot.logs import configure_logging
    from devcore.demo import run_demo

    if web:
        ctx.invoke(sandbox, port=port)
        return
    configure_logging(level="warning")
    asyncio.run(run_demo(echo=click.echo))


@main.command()
@click.option("--scenario", default="sandbox", show_default=True,
              help="A bundled scenario name or the path of a scenario TOML file.")
@click.option("--port", default=8780, show_default=True, type=click.IntRange(0, 65535),
              help="The page's port on 127.0.0.1 (0 picks a free one).")
@click.option("--open", "open_browser", is_flag=True,
              help="Also open the page in this machine's web browser.")
def sandbox(scenario: str, port: int, open_browser: bool) -> None:
    """See it work without a workspace: the real bot, the reference core and a local Slack in
    your browser (docs/quickstart.md)."""
    import webbrowser

    from bot.logs import configure_logging
    from clarify_bot.sandbox.run import run_sandbox

    configure_logging(level="warning", fmt="console")
    try:
        asyncio.run(run_sandbox(scenario=scenario, port=port, echo=click.echo,
                                opened=webbrowser.open if open_browser else None))
    except OSError as exc:  # the page's port is taken
        reason = (os.strerror(exc.errno) if exc.errno else str(exc) or type(exc).__name__).lower()
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {reason} (choose "
                                   "another --port)") from None


@main.command()
@click.option(
    "--scenario",
    default="acme",
    show_default=True,
    help="A bundled scenario name or the path of a scenario TOML file.",
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8700, show_default=True, type=click.IntRange(0, 65535),
              help="0 picks a free port (printed).")
@click.option("--people", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="A TOML file mapping the scenario's people to real Slack/Teams ids "
                   "(docs/quickstart.md).")
@click.option("--contract", type=click.Choice(["full", "baseline"]), default="full",
              show_default=True,
              help="baseline: serve only what every core offers (no extensions, no OpenAPI "
                   "document), to try the bot against a core as specified "
                   "(docs/core-contract.md).")
@click.option("--largest-page", type=click.IntRange(1, 200), default=200, show_default=True,
              help="The most items a page of any list holds, whatever the client asks: small "
                   "pages show how the bot follows a list's cursors (docs/core-contract.md).")
def devcore(scenario: str, host: str, port: int, people: Path | None, contract: str,
            largest_page: int) -> None:
    """Start the reference core alone (development and tests only; never in production)."""
    from bot.logs import configure_logging
    from devcore.scenario import ScenarioError
    from devcore.server import build_core, run

    try:  # fail with the scenario's (or the people file's) own words before anything listens
        build_core(scenario, people=people)
    except ScenarioError as exc:
        raise click.ClickException(str(exc)) from None
    configure_logging(level="info", fmt="console")
    try:
        run(scenario=scenario, host=host, port=port, people=people, contract=contract,
            largest_page=largest_page)
    except OSError as exc:  # the address is taken, not this machine's, or not permitted
        # asyncio words it "error while attempting to bind on address (…): …": the errno's own
        reason = (os.strerror(exc.errno) if exc.errno else str(exc) or type(exc).__name__).lower()
        raise click.ClickException(f"cannot listen on {host}:{port}: {reason} (choose another "
                                   "--port or --host)") from None


@main.command()
@click.option("--config", "config", type=click.Path(path_type=Path, exists=True), default=None,
              help="The TOML settings file (default: $CLARIFY_BOT_CONFIG).")
@click.option("--role", type=click.Choice(["all", "web", "worker"]), default="all",
              show_default=True,
              help="web: callbacks (answers made durable); worker: jobs and answer forwarding; "
                   "all: both.")
def serve(config: Path | None, role: str) -> None:
    """Run the bot: callbacks, health and metrics over HTTP, and the job worker."""
    import structlog

    from bot.logs import configure_logging
    from bot.process.service import CannotListen
    from bot.settings import SettingsError, load_settings
    from clarify_bot.app import open_service

    try:
        settings = load_settings(config)
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None
    configure_logging(level=settings.log.level, fmt=settings.log.format, cache=True)

    async def run() -> None:
        try:
            async with open_service(settings) as service:
                loop = asyncio.get_running_loop()
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.add_signal_handler(sig, service.stop)
                await service.run(role=role)
        except SettingsError as exc:
            raise click.ClickException(str(exc)) from None
        except CannotListen as exc:  # one line in the log's own format, no traceback
            structlog.get_logger("clarify.service").error(
                "service.cannot_listen", host=exc.host, port=exc.port, reason=exc.reason,
                error=str(exc))
            raise SystemExit(1) from None

    asyncio.run(run())


@main.command("check-config")
@click.option("--config", "config", type=click.Path(path_type=Path, exists=True), default=None)
@click.option("--json", "as_json", is_flag=True,
              help="Print the effective settings as JSON (no secrets) instead of the summary.")
@click.option("--offline", is_flag=True,
              help="Only the static checks (settings, secrets, files): ask no database, core, "
                   "Slack or Teams.")
def check_config(config: Path | None, as_json: bool, offline: bool) -> None:
    """Check what `serve` checks before it serves, and refuse what it would refuse, in the same
    words: the settings and the secrets they need, then (unless --offline) the installation
    database, the core and its token, Slack's auth.test and Teams' token. Say which secrets are
    set (never their values) and, with --json, print the effective settings."""
    from bot.settings import CONFIG_ENV, SECRET_ENV, SettingsError, load_settings
    from clarify_bot import preflight

    try:
        settings = load_settings(config)
        preflight.static(settings)  # serve's own first step (clarify_bot.app.open_service)
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None
    from bot.logs import configure_logging

    # the core client's own lines (a core it cannot reach) go to stderr, and only errors: the
    # summary says the same in its words, and stdout stays the summary or the JSON alone
    configure_logging(level="error", fmt="console")
    if not offline:
        problems = asyncio.run(preflight.live(settings))
        if problems:
            raise click.ClickException(str(SettingsError(problems)))
    extensions = {"extensions": None, "source": "not asked (--offline)"} if offline else \
        asyncio.run(_extensions_in_use(settings))
    if as_json:
        shown = settings.model_dump(mode="json", exclude={"secrets"})
        shown["core_extensions"] = extensions
        shown["slack_app"] = settings.slack_mode
        click.echo(json.dumps(shown, indent=2, sort_keys=True))
        return
    source = config or (Path(os.environ[CONFIG_ENV]) if os.environ.get(CONFIG_ENV) else None)
    platforms = ", ".join(
        f"{name} ({settings.slack.mode} mode)" if name == "slack" else str(name)
        for name in settings.clarify.channels)
    click.echo(f"valid: {source or 'defaults and the environment (no settings file)'}")
    slack = f"; slack: {settings.slack_mode}" if "slack" in map(str, settings.clarify.channels) \
        else ""
    click.echo(f"  platforms: {platforms}; store: {settings.store.backend}; core: "
               f"{settings.core.url}; clarify.enabled: {str(settings.clarify.enabled).lower()}"
               + slack)
    click.echo("  " + _checked_line(settings, offline))
    offered = extensions["extensions"]
    named = ", ".join(map(str, offered)) if isinstance(offered, list | tuple | set) and offered \
        else "none" if offered is not None else "unknown"
    click.echo(f"  core extensions: {named} ({extensions['source']})")
    click.echo(_hours_line(settings.clarify.hours))
    needed = settings.needed_secrets()
    click.echo("secrets (values never shown):")
    width = max(len(v) for v in SECRET_ENV.values())
    for name, variable in SECRET_ENV.items():
        origin = settings.secrets.origin(name)
        if origin is None and name not in needed:
            continue  # neither set nor needed: an optional one, not worth a line
        said = "needed, " if name in needed else ""
        click.echo(f"  {variable:<{width}}  {said}set from {origin}")
    click.echo("the effective settings: clarify-bot check-config --json")


def _checked_line(settings: Any, offline: bool) -> str:
    """What was asked beyond the file: the dependencies ``serve`` needs, or that none was."""
    if offline:
        return "live checks: skipped (--offline): the database, core, Slack and Teams not asked"
    channels = set(map(str, settings.clarify.channels))
    asked = ["core reachable, token accepted"]
    if "slack" in channels and settings.slack.distributed:
        asked.insert(0, "installation database reachable and current")
    elif "slack" in channels:
        asked.append("Slack auth.test" + (" and the app-level token"
                                          if settings.slack.mode == "socket" else ""))
    if "teams" in channels and settings.teams.app_id is not None and \
            settings.teams.needs_password:
        asked.append("Teams connector token")
    return "live checks passed: " + "; ".join(asked)


def _hours_line(hours: Any) -> str:
    """The summary's working hours: when normal and high questions go out, or that they go at
    any hour (docs/delivery.md, "Working hours")."""
    if not hours.enabled:
        return "  working hours: off (clarify.hours.enabled = false): cards go out at any hour"
    own = ", ".join(t.tenant for t in hours.tenants)
    return (f"  working hours: {hours.days} {hours.start}-{hours.end} in each person's zone "
            f"(else {hours.time_zone})" + (f", tenants' own for {own}" if own else "")
            + "; normal and high cards wait for them")


async def _extensions_in_use(settings: Any) -> dict[str, object]:
    """What the configured core offers beyond the baseline, as the service would find it
    (a few seconds at most: an unreachable core is said so, not waited for)."""
    from bot.process.service import extensions_in_use
    from clarify_bot.app import _core

    async with _core(settings) as core:
        try:
            await asyncio.wait_for(core.detect_extensions(), 5)
        except TimeoutError:
            return {"extensions": None, "source": "the core did not answer in time"}
        found = extensions_in_use(core)
        if core.discovery is not None and core.discovery.detected_at is None:
            found = {"extensions": None, "source": f"cannot reach the core at {settings.core.url}"}
        return found


@main.command()
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    required=True,
    help="Folder to write every card state into, as JSON, plus gallery.html.",
)
def preview(out_dir: Path) -> None:
    """Write every card state in Block Kit and Adaptive Card form, plus an HTML gallery."""
    from cards.preview import write_preview

    try:
        written = write_preview(out_dir)
    except OSError as exc:  # a file in the way, a folder not writable, a full disk
        raise click.ClickException(_cannot_write("--out", out_dir, exc)) from None
    click.echo(f"wrote {len(written)} files to {out_dir}")


def _cannot_write(option: str, path: Path, exc: OSError) -> str:
    """One line naming the option, its path and the part of it that failed, never a file's
    contents."""
    reason = "a file is in the way" if isinstance(exc, FileExistsError) else \
        (exc.strerror or type(exc).__name__).lower()
    failed = exc.filename
    where = "" if failed is None or Path(failed) == path else f" {failed}"
    return f"{option} {path}: cannot write{where or ' it'}: {reason}"


@main.command("teams-package")
@click.option("--config", "config", type=click.Path(path_type=Path, exists=True), default=None,
              help="The TOML settings file (default: $CLARIFY_BOT_CONFIG).")
@click.option("--out", "out", type=click.Path(path_type=Path, dir_okay=False),
              default=Path("clarify-teams-app.zip"), show_default=True,
              help="Where to write the app package (a zip to upload to Teams).")
def teams_package(config: Path | None, out: Path) -> None:
    """Build the Teams app package from the settings, checked against the manifest schema."""
    from bot.settings import SettingsError, load_settings
    from clarify_bot.teams_package import (
        MANIFEST_DIR,
        PackageError,
        build_package,
        unset_package_keys,
    )

    try:
        package = build_package(load_settings(config), out)
    except SettingsError as exc:
        # the package's own keys too, read from the file and the variables: every key it
        # needs is named at once, not one round after another
        table = _teams_table(config)
        unset = [] if table is None else unset_package_keys(table, dict(os.environ))
        raise click.ClickException(str(exc) + ("\nand, for the package:\n  "
                                               + "\n  ".join(unset) if unset else "")) from None
    except OSError as exc:
        if exc.filename is not None and Path(exc.filename).is_relative_to(MANIFEST_DIR):
            raise click.ClickException(f"cannot read {exc.filename}: "
                                       f"{(exc.strerror or type(exc).__name__).lower()}") from None
        raise click.ClickException(_cannot_write("--out", out, exc)) from None
    except PackageError as exc:
        raise click.ClickException("cannot build the Teams app package:\n  "
                                   + "\n  ".join(exc.problems)) from None
    click.echo(f"wrote {package.path} (app {package.manifest['id']}, "
               f"version {package.manifest['version']})")
    click.echo(f"the Azure Bot's messaging endpoint: {package.messaging_endpoint}")


def _teams_table(config: Path | None) -> dict[str, Any] | None:
    """The settings file's [teams] table as written (empty when it has none); None when the
    file cannot be read: the settings error says why, and nothing more is known."""
    import tomllib

    from bot.settings import CONFIG_ENV

    path = config or (Path(os.environ[CONFIG_ENV]) if os.environ.get(CONFIG_ENV) else None)
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("teams") if path else None
    except (OSError, ValueError):
        return None
    return table if isinstance(table, dict) else {}


from clarify_bot.steward import clarify  # noqa: E402  (the group's module loads no core client)

main.add_command(clarify)

from clarify_bot.first_run import init  # noqa: E402  (`clarify-bot init`, docs/quickstart.md)

main.add_command(init)

from clarify_bot.slack_cli import db, slack  # noqa: E402  (a distributed Slack app, docs/slack.md)

main.add_command(db)
main.add_command(slack)

from clarify_bot.store_cli import store  # noqa: E402  (`clarify-bot store`, docs/operations.md)

main.add_command(store)

from clarify_bot.report_cli import report  # noqa: E402  (`clarify-bot report`, docs/operations.md)

main.add_command(report)

if __name__ == "__main__":
    main()
