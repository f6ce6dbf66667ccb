"""`clarify-bot store status|reset`: the store's generation for operators, value-free, and a reset
that asks first and deletes only the bot's own keys."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest
import redis
from click.testing import CliRunner, Result

from bot.store.redis import RedisStore
from clarify_bot.cli import main
from tests.redis_url import TEST_REDIS

URL = f"{TEST_REDIS}/13"
SETTINGS = """
[store]
backend = "{backend}"
[redis]
url = "{url}"
key_prefix = "{prefix}"
[audit]
sink = "jsonl"
path = "{audit}"
"""


@pytest.fixture
def prefix() -> Iterator[str]:
    name = f"cli{uuid4().hex[:8]}"
    yield name
    client = redis.Redis.from_url(URL, decode_responses=True)
    for key in client.scan_iter(match=f"{name}*"):
        client.delete(key)
    client.close()


def settings(tmp_path: Path, prefix: str, *, backend: str = "redis", url: str = URL) -> Path:
    path = tmp_path / "settings.toml"
    path.write_text(SETTINGS.format(backend=backend, url=url, prefix=prefix,
                                    audit=tmp_path / "audit.jsonl"))
    return path


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input)


def test_status_of_a_store_no_process_has_used(tmp_path: Path, prefix: str) -> None:
    result = run("store", "status", "--config", str(settings(tmp_path, prefix)))
    assert result.exit_code == 0, result.output
    assert f"prefix {prefix}" in result.output
    assert "generation: none" in result.output
    assert "holds: 0; reminders: 0; answers waiting for the core: 0" in result.output


def test_status_shows_the_generation_and_counts_never_a_value(tmp_path: Path,
                                                              prefix: str) -> None:
    secret = "zqlease-token-never-shown"

    async def use() -> str:
        from datetime import UTC, datetime

        async with RedisStore.from_url(URL, prefix=prefix) as store:
            gen, _ = await store.generation_start(now=datetime.now(UTC))
            await store.generation_check(now=datetime.now(UTC))
            await store.hold_put("job-1", json.dumps({"named": ["job-1", secret]}),
                                 at=datetime.now(UTC))
            return gen.id

    made = asyncio.run(use())
    config = str(settings(tmp_path, prefix))
    result = run("store", "status", "--config", config)
    assert result.exit_code == 0, result.output
    assert f"generation: {made} (first_use)" in result.output and "epoch 1" in result.output
    assert "holds: 1;" in result.output and secret not in result.output
    shown = json.loads(run("store", "status", "--config", config, "--json").output)
    assert shown["generation"]["id"] == made and shown["generation"]["epoch"] == 1
    assert shown["holds"] == 1 and secret not in json.dumps(shown)


def test_reset_asks_for_the_prefix_and_deletes_nothing_without_it(tmp_path: Path,
                                                                  prefix: str) -> None:
    client = redis.Redis.from_url(URL, decode_responses=True)
    client.hset(f"{prefix}:holds", "job-1", "{}")
    result = run("store", "reset", "--config", str(settings(tmp_path, prefix)), input="nope\n")
    assert result.exit_code == 1
    assert "not confirmed: nothing was deleted" in result.output
    assert client.hlen(f"{prefix}:holds") == 1
    client.close()


def test_reset_deletes_the_bots_keys_only_and_starts_a_new_generation(tmp_path: Path,
                                                                      prefix: str) -> None:
    client = redis.Redis.from_url(URL, decode_responses=True)
    client.hset(f"{prefix}:holds", "job-1", "{}")
    client.zadd(f"{prefix}:reminders:due", {"0|1|0|clr-1": 1})
    client.hset(f"{prefix}:{{outbox}}:entries", "e1", "{}")
    client.set(f"{prefix}:staging:holds", "another deployment's, under a longer prefix")
    client.set(f"{prefix}x:holds", "another deployment's")
    config = str(settings(tmp_path, prefix))
    result = run("store", "reset", "--config", config, input=f"{prefix}\n")
    assert result.exit_code == 0, result.output
    assert f"deleted 3 keys under {prefix}; new generation " in result.output
    assert client.exists(f"{prefix}:holds", f"{prefix}:reminders:due",
                         f"{prefix}:{{outbox}}:entries") == 0
    assert client.exists(f"{prefix}:staging:holds", f"{prefix}x:holds") == 2
    assert client.hget(f"{prefix}:generation", "origin") == "reset"
    [audited] = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert audited["type"] == "store_reset" and audited["extra"]["deleted"] == "3"
    again = run("store", "reset", "--config", config, "--yes")
    assert again.exit_code == 0 and "deleted 1 keys" in again.output  # the generation only
    client.delete(f"{prefix}x:holds")
    client.close()


def test_a_memory_store_has_nothing_to_show(tmp_path: Path, prefix: str) -> None:
    result = run("store", "status", "--config", str(settings(tmp_path, prefix,
                                                              backend="memory")))
    assert result.exit_code == 1 and "store.backend is memory" in result.output


def test_a_store_it_cannot_reach_is_one_value_free_line(tmp_path: Path, prefix: str) -> None:
    url = "redis://127.0.0.1:1/0"
    for command in (["status"], ["reset", "--yes"]):
        result = run("store", *command, "--config", str(settings(tmp_path, prefix, url=url)))
        assert result.exit_code == 1
        assert "cannot reach the store" in result.output and "127.0.0.1:1" not in result.output
        assert "Traceback" not in result.output
