"""The ``clarify-bot`` console script."""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
def main() -> None:
    """clarify-bot: one-tap clarification of ambiguous dates, as governed evidence."""


@main.command()
@click.option("--out", "out_dir", type=click.Path(path_type=Path), required=True,
              help="Folder to write every card state into, as JSON, plus gallery.html.")
def preview(out_dir: Path) -> None:
    """Write every card state in Block Kit and Adaptive Card form, plus an HTML gallery."""
    from cards.preview import write_preview

    written = write_preview(out_dir)
    click.echo(f"wrote {len(written)} files to {out_dir}")


if __name__ == "__main__":
    main()
