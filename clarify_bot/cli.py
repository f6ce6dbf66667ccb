"""The ``clarify-bot`` console script."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import click


@click.group()
def main() -> None:
    """clarify-bot: one-tap clarification of ambiguous dates, as governed evidence."""


@main.command()
def demo() -> None:
    """Run the whole loop on embedded defaults: reference core, scenario, answers, escalation."""
    from bot.logs import configure_logging
    from devcore.demo import run_demo

    configure_logging(level="warning")
    asyncio.run(run_demo(echo=click.echo))


@main.command()
@click.option(
    "--scenario",
    default="acme",
    show_default=True,
    help="A bundled scenario name or the path of a scenario TOML file.",
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8700, show_default=True, type=int)
@click.option("--people", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="A TOML file mapping the scenario's people to real Slack/Teams ids "
                   "(docs/quickstart.md).")
@click.option("--contract", type=click.Choice(["full", "baseline"]), default="full",
              show_default=True,
              help="baseline: serve only what every core offers (no extensions, no OpenAPI "
                   "document), to try the bot against a core as specified "
                   "(docs/core-contract.md).")
def devcore(scenario: str, host: str, port: int, people: Path | None, contract: str) -> None:
    """Start the reference core alone (development and tests only; never in production)."""
    from bot.logs import configure_logging
    from devcore.scenario import ScenarioError
    from devcore.server import build_core, run

    try:  # fail with the scenario's (or the people file's) own words before anything listens
        build_core(scenario, people=people)
    except ScenarioError as exc:
        raise click.ClickException(str(exc)) from None
    configure_logging(level="info", fmt="console")
    run(scenario=scenario, host=host, port=port, people=people, contract=contract)


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
    from bot.service import CannotListen
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
def check_config(config: Path | None) -> None:
    """Validate the settings and the secrets they need; print the effective values (no secrets)."""
    from bot.settings import SettingsError, load_settings

    try:
        settings = load_settings(config)
        settings.require_secrets()
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None
    shown = settings.model_dump(mode="json", exclude={"secrets"})
    shown["slack_app"] = settings.slack_mode
    shown["core_extensions"] = asyncio.run(_extensions_in_use(settings))
    click.echo(json.dumps(shown, indent=2, sort_keys=True))


async def _extensions_in_use(settings: Any) -> dict[str, object]:
    """What the configured core offers beyond the baseline, as the service would find it
    (a few seconds at most: an unreachable core is said so, not waited for)."""
    from bot.service import extensions_in_use
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

    written = write_preview(out_dir)
    click.echo(f"wrote {len(written)} files to {out_dir}")


@main.command("teams-package")
@click.option("--config", "config", type=click.Path(path_type=Path, exists=True), default=None,
              help="The TOML settings file (default: $CLARIFY_BOT_CONFIG).")
@click.option("--out", "out", type=click.Path(path_type=Path, dir_okay=False),
              default=Path("clarify-teams-app.zip"), show_default=True,
              help="Where to write the app package (a zip to upload to Teams).")
def teams_package(config: Path | None, out: Path) -> None:
    """Build the Teams app package from the settings, checked against the manifest schema."""
    from bot.settings import SettingsError, load_settings
    from clarify_bot.teams_package import PackageError, build_package

    try:
        package = build_package(load_settings(config), out)
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None
    except PackageError as exc:
        raise click.ClickException("cannot build the Teams app package:\n  "
                                   + "\n  ".join(exc.problems)) from None
    click.echo(f"wrote {package.path} (app {package.manifest['id']}, "
               f"version {package.manifest['version']})")
    click.echo(f"the Azure Bot's messaging endpoint: {package.messaging_endpoint}")


from clarify_bot.steward import clarify  # noqa: E402  (the group's module loads no core client)

main.add_command(clarify)

from clarify_bot.first_run import init  # noqa: E402  (`clarify-bot init`, docs/quickstart.md)

main.add_command(init)

from clarify_bot.slack_cli import db, slack  # noqa: E402  (a distributed Slack app, docs/slack.md)

main.add_command(db)
main.add_command(slack)

if __name__ == "__main__":
    main()
