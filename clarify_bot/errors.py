"""One line per error: click's usage errors and, for ``clarify --json``, every refusal as the
JSON error object (docs/operations.md, "Stewards and operators")."""

from __future__ import annotations

import json
from typing import Any

import click


class OneLineError(click.ClickException):
    """A usage error (a bad ``--date``, an unknown option) or any other refusal, shown as one
    line ("Error: … (see `… --help`)") rather than click's usage block, or, for
    ``clarify --json``, as the JSON error object every other refusal of it is."""

    def __init__(self, message: str, *, exit_code: int, command: str, code: str,
                 json_out: bool) -> None:
        super().__init__(" ".join(message.split()))
        self._exit_code = exit_code
        self.command, self.code, self.json_out = command, code, json_out

    @property  # click's own is a class variable: this one is each refusal's
    def exit_code(self) -> int:  # type: ignore[override]
        return self._exit_code

    def show(self, file: Any = None) -> None:
        if self.json_out:
            click.echo(json.dumps({"command": self.command, "error": {
                "code": self.code, "status": 0, "message": self.message}}, sort_keys=True))
        else:
            click.echo(f"Error: {self.message}", err=True, file=file)


def _json_wanted(ctx: click.Context | None) -> bool:
    """Whether ``clarify --json`` was given: its context object says (``steward.Ctx``)."""
    while ctx is not None:
        if isinstance(getattr(ctx.obj, "json", None), bool):
            return bool(ctx.obj.json)
        if ctx.params.get("json_out"):
            return True
        ctx = ctx.parent
    return False


def one_line(exc: click.ClickException, ctx: click.Context) -> click.ClickException:
    """A usage error as one line (or JSON); another refusal as JSON where --json asks for it,
    else as it was (a settings error lists its problems one a line)."""
    at = getattr(exc, "ctx", None) or ctx
    json_out = _json_wanted(at)
    if isinstance(exc, click.UsageError):
        path = at.command_path if at is not None else "clarify-bot"
        return OneLineError(f"{exc.format_message()} (see `{path} --help`)",
                            exit_code=exc.exit_code, command=at.info_name or "clarify-bot",
                            code="USAGE", json_out=json_out)
    if not json_out:
        return exc
    return OneLineError(exc.format_message(), exit_code=exc.exit_code,
                        command=at.invoked_subcommand or at.info_name or "clarify-bot",
                        code="REFUSED", json_out=json_out)


class OneLineGroup(click.Group):
    """A command group whose every error is one line, or JSON with --json (``one_line``; its
    context knows whether --json was given): ``clarify`` and, with usage errors too, the root."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OneLineError:
            raise
        except click.ClickException as exc:
            shown = one_line(exc, ctx)
            if shown is exc:
                raise
            raise shown from None
