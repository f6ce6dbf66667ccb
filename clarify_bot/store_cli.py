"""``clarify-bot store …``: the bot's store, for operators (docs/operations.md, "The store").

- ``store status [--json]``: the store's generation (its id, why it was made, its age), when a
  process last checked it, and how much it holds now (held questions, reminders, answers
  waiting): counts and ids only, never a value.
- ``store reset [--yes]``: delete what the bot keeps under its key prefix and start a new
  generation. Every running process notices (``clarify_store_data_lost_total{kind="reset"}``),
  and its worker gives back the holds it remembers. Asks for the prefix to be typed unless
  ``--yes``.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

_CONFIG = click.option("--config", "config", type=click.Path(path_type=Path, exists=True),
                       default=None, help="The TOML settings file (default: $CLARIFY_BOT_CONFIG).")
# the kinds of key the store writes under its prefix (bot.store.keys), and those of earlier
# releases (bot.store.migrate): a reset deletes these and nothing else, so a prefix that is the
# start of another deployment's (``clarify`` and ``clarify:staging``) never loses that one's keys
KINDS = frozenset({"person", "digest", "batches", "reminders", "holds", "generation", "cards",
                   "conv", "notices", "once", "rate", "limit", "latest", "{outbox}", "slot",
                   "adm", "cap", "win", "batch", "outbox", "order", "order-lease"})


def _settings(config: Path | None) -> Any:
    from bot.settings import SettingsError, load_settings

    try:
        settings = load_settings(config)
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None
    if settings.store.backend != "redis":
        raise click.ClickException("store.backend is memory: each process keeps its own store, "
                                   "which lives and ends with it (nothing to show or reset)")
    return settings


def _open(settings: Any) -> Any:
    from bot.store.connect import BadRedisUrl
    from bot.store.redis import RedisStore

    try:
        return RedisStore.from_url(
            settings.redis.url, prefix=settings.redis.key_prefix.rstrip(":"),
            password=settings.secrets.value("redis_password"),
            sentinel_password=settings.secrets.value("redis_sentinel_password"),
            max_connections=4)
    except BadRedisUrl as exc:
        raise click.ClickException(f"redis.url: {exc}") from None


def _unavailable(settings: Any) -> click.ClickException:
    return click.ClickException(
        f"cannot reach the store (Redis, prefix {settings.redis.key_prefix.rstrip(':')}): check "
        "redis.url and REDIS_PASSWORD; nothing was changed")


async def _status(settings: Any) -> dict[str, Any]:
    from bot.store.errors import StoreError

    now = datetime.now(UTC)
    async with _open(settings) as store:
        try:
            gen = await store.generation_read()
            census = await store.census()
        except StoreError:
            raise _unavailable(settings) from None
    found: dict[str, Any] = {"prefix": settings.redis.key_prefix.rstrip(":"),
                             "holds": census.holds, "reminders": census.reminders,
                             "answers_waiting": census.answers}
    if gen is None:
        found["generation"] = None
        return found
    found["generation"] = {
        "id": gen.id, "origin": gen.origin, "created_at": gen.created_at.isoformat(),
        "age_seconds": int((now - gen.created_at).total_seconds()), "epoch": gen.epoch,
        "checked_at": None if gen.checked_at is None else gen.checked_at.isoformat(),
        "since_check_seconds": None if gen.checked_at is None
        else int((now - gen.checked_at).total_seconds())}
    return found


@click.group()
def store() -> None:
    """The bot's store (Redis): its generation, and a reset (docs/operations.md)."""


@store.command()
@_CONFIG
@click.option("--json", "as_json", is_flag=True, help="Print it as JSON.")
def status(config: Path | None, as_json: bool) -> None:
    """The store's generation, its age, the last check and what it holds (counts only)."""
    settings = _settings(config)
    found = asyncio.run(_status(settings))
    if as_json:
        click.echo(json.dumps(found, indent=2, sort_keys=True))
        return
    gen = found["generation"]
    click.echo(f"store: redis, prefix {found['prefix']}")
    if gen is None:
        click.echo("  generation: none (no process has used this store since it was emptied, "
                   "or it is new)")
    else:
        checked = "never" if gen["checked_at"] is None else \
            f"{gen['checked_at']} ({gen['since_check_seconds']} s ago)"
        click.echo(f"  generation: {gen['id']} ({gen['origin']}), made {gen['created_at']} "
                   f"({_age(gen['age_seconds'])} ago), epoch {gen['epoch']}")
        click.echo(f"  last check: {checked}")
    click.echo(f"  holds: {found['holds']}; reminders: {found['reminders']}; answers waiting "
               f"for the core: {found['answers_waiting']}")


def _age(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    if seconds < 172800:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} days"


async def _reset(settings: Any) -> tuple[int, str]:
    from bot.store.errors import StoreError

    prefix = settings.redis.key_prefix.rstrip(":")
    async with _open(settings) as opened:
        redis = opened._redis
        deleted = 0
        try:
            async for name in redis.scan_iter(match=f"{prefix}:*", count=500):
                kind = str(name)[len(prefix) + 1:].split(":", 1)[0]
                if kind in KINDS:
                    deleted += int(await redis.delete(name))
            gen = await opened.generation_reset(now=datetime.now(UTC))
        except (StoreError, Exception) as exc:
            if isinstance(exc, click.ClickException):
                raise
            raise _unavailable(settings) from None
    return deleted, gen.id


@store.command()
@_CONFIG
@click.option("--yes", is_flag=True, help="Do not ask for the prefix to be typed.")
def reset(config: Path | None, yes: bool) -> None:
    """Delete what the bot keeps in Redis under its prefix and start a new generation."""
    settings = _settings(config)
    prefix = settings.redis.key_prefix.rstrip(":")
    if not yes:
        click.echo(f"This deletes every key of the bot under prefix {prefix}: held questions, "
                   "reminders, delivery records and answers waiting for the core. Running "
                   "processes notice it and give back the holds they remember; the rest is "
                   "lost (docs/operations.md).")
        typed = click.prompt("type the prefix to go on", default="", show_default=False)
        if typed != prefix:
            raise click.ClickException("not confirmed: nothing was deleted")
    deleted, generation = asyncio.run(_reset(settings))
    _audit(settings, deleted, generation)
    click.echo(f"deleted {deleted} keys under {prefix}; new generation {generation}")


def _audit(settings: Any, deleted: int, generation: str) -> None:
    """The reset in the bot's audit (the configured sink): who did it is the operator's own
    record; here what and when."""
    from bot.audit import AuditEvent, JsonLinesSink

    if settings.audit.sink != "jsonl" or settings.audit.path is None:
        return  # stdout: the command's own output says it
    JsonLinesSink(path=settings.audit.path).write(AuditEvent(
        type="store_reset", at=datetime.now(UTC), clarification_id="", occurrence=generation,
        message="An operator reset the bot's store (clarify-bot store reset).",
        extra={"generation": generation, "deleted": str(deleted)}))
