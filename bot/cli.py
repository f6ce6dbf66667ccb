"""The ``clarify-bot`` console script."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click


@click.group()
def main() -> None:
    """clarify-bot: one-tap clarification of ambiguous dates, as governed evidence."""


@main.command()
def demo() -> None:
    """Run the whole loop on embedded defaults: reference core, scenario, answers, escalation."""
    from bot.demo import run_demo
    from bot.logs import configure_logging

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
def devcore(scenario: str, host: str, port: int) -> None:
    """Start the reference core alone (development and tests only; never in production)."""
    from bot.logs import configure_logging
    from devcore.server import run

    configure_logging(level="info")
    run(scenario=scenario, host=host, port=port)


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


if __name__ == "__main__":
    main()
