"""The harness for tests that run the bot, the reference core or a service as real processes.

- ``free_port()``: a port on 127.0.0.1 nothing listens on now; ``port_open(port)`` whether
  something does.
- ``wait_until(condition, what)``: poll a condition another process makes true, in real time
  with a deadline (never the bot's clock: the processes do not run on it).
- ``serve_settings(...)``: a settings file's content for ``clarify-bot serve`` as a dict (one
  workspace, acme, and the test's core, port and fake Slack; every table overridable), and
  ``toml(doc)`` to write it.
- ``Processes`` (the ``processes`` fixture): starts ``clarify-bot serve`` (optionally on a
  clock file the test moves: tests/support/clocked_serve.py) and ``clarify-bot devcore``, and
  kills whatever is still running after the test; ``devcore_url``: a reference core process
  serving the test's contract.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CLARIFY_BOT = str(BIN / "clarify-bot")
ACME_WORKSPACE = {"team_id": "T0ACME", "enterprise_id": "E0ACME", "tenant": "acme"}


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on at this moment."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_open(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port``."""
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


async def wait_until(condition: Callable[[], Any], what: str, seconds: float = 20, *,
                     every: float = 0.05, unless: Callable[[], str | None] | None = None
                     ) -> Any:
    """Poll ``condition`` (sync, or returning an awaitable) until it gives something true, and
    return that. Real time, bounded: for what another process does, never for the bot's clock.
    ``unless`` gives up early with its reason (a process that died, say)."""
    deadline = time.monotonic() + seconds
    while True:
        found = condition()
        if asyncio.iscoroutine(found) or isinstance(found, asyncio.Future):
            found = await found
        if found:
            return found
        reason = unless() if unless is not None else None
        if reason or time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}" + (f"; {reason}" if reason
                                                                     else ""))
        await asyncio.sleep(every)


async def healthy(url: str, http: aiohttp.ClientSession | None = None) -> bool:
    """``url``/healthz answers 200."""
    try:
        if http is None:
            async with aiohttp.ClientSession() as own, own.get(f"{url}/healthz") as got:
                return got.status == 200
        async with http.get(f"{url}/healthz") as got:
            return got.status == 200
    except aiohttp.ClientError:
        return False


# ---------------------------------------------------------------- settings


def serve_settings(*, core: str, port: int, slack_api: str, redis: str | None = None,
                   prefix: str = "", workspaces: bool = True,
                   oauth: Mapping[str, Any] | None = None, **tables: Any) -> dict[str, Any]:
    """``clarify-bot serve``'s settings for a test: Slack only, working hours off (the tests run
    at any real hour), the memory store (or Redis at ``redis`` under ``prefix``), the acme
    workspace (``workspaces=False``: none, as with OAuth installs; ``oauth``: the
    ``[slack.oauth]`` table). ``tables`` are merged in, table by table; a value of None removes
    that key."""
    doc: dict[str, Any] = {
        "clarify": {"enabled": True, "channels": "slack", "hours": {"enabled": False}},
        "core": {"url": core},
        "server": {"host": "127.0.0.1", "port": port},
        "store": {"backend": "memory"},
        "slack": {"api_url": slack_api},
    }
    if redis is not None:
        doc["store"]["backend"] = "redis"
        doc["redis"] = {"url": redis, "key_prefix": prefix}
    if workspaces:
        doc["slack"]["workspaces"] = [dict(ACME_WORKSPACE)]
    if oauth is not None:
        doc["slack"]["oauth"] = dict(oauth)
    return merged(doc, tables)


def merged(base: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``changes`` merged into its tables recursively; None removes a key."""
    out = dict(base)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def toml(doc: Mapping[str, Any]) -> str:
    """A settings document as TOML: tables, arrays of tables, strings, numbers, booleans and
    lists of those (what the settings use; tomllib reads it back equal)."""
    lines: list[str] = []
    _table(lines, [], doc)
    return "\n".join(lines).lstrip("\n") + "\n"


def _table(lines: list[str], path: list[str], doc: Mapping[str, Any]) -> None:
    tables = [(k, v) for k, v in doc.items() if isinstance(v, Mapping)]
    arrays = [(k, v) for k, v in doc.items() if isinstance(v, list) and v
              and all(isinstance(x, Mapping) for x in v)]
    nested = {k for k, _ in tables} | {k for k, _ in arrays}
    plain = [(k, v) for k, v in doc.items() if k not in nested]
    if path and (plain or not nested):
        lines.append(f"[{'.'.join(path)}]")
    lines.extend(f"{k} = {_value(v)}" for k, v in plain)
    for key, value in tables:
        _table(lines, [*path, key], value)
    for key, items in arrays:
        for item in items:
            lines.append(f"[[{'.'.join([*path, key])}]]")
            lines.extend(f"{k} = {_value(v)}" for k, v in item.items())


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str | Path):
        return json.dumps(str(value))
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"no TOML for {value!r}")


def plain_env(**more: str) -> dict[str, str]:
    """PATH and HOME from the test's environment, and ``more``: nothing else leaks in."""
    return {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/"), **more}


# ---------------------------------------------------------------- processes


@dataclass
class BotProcess:
    """A ``clarify-bot serve`` process: its port (web server, or a worker's health port), the
    file its stderr (JSON lines) goes to."""

    process: asyncio.subprocess.Process
    port: int
    stderr: Path
    url: str = field(init=False)

    def __post_init__(self) -> None:
        self.url = f"http://127.0.0.1:{self.port}"

    def lines(self) -> list[dict[str, Any]]:
        """Every stderr line, parsed: a line that is not one JSON object fails the test."""
        return [json.loads(line) for line in self.stderr.read_text().splitlines()]

    def events(self) -> list[str]:
        return [line["event"] for line in self.lines()]

    def logged(self, event: str) -> list[dict[str, Any]]:
        """The stderr lines of ``event``."""
        return [line for line in self.lines() if line.get("event") == event]

    async def metric(self, name: str) -> float:
        """A metric's value on the process's /metrics, summed over its labels (0 while it
        reports none); ``name`` may carry labels (``name{label="x"}``)."""
        async with aiohttp.ClientSession() as http, http.get(f"{self.url}/metrics") as got:
            text = await got.text()
        return sum(float(line.split()[-1]) for line in text.splitlines()
                   if line.startswith((f"{name} ", f"{name}{{")))

    async def terminate(self) -> tuple[int, float]:
        """SIGTERM; the exit code and the seconds it took."""
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(self.process.wait(), 30)
        return code, time.monotonic() - started

    async def sigkill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()
        assert self.process.returncode == -signal.SIGKILL


@dataclass
class Processes:
    """Starts processes for one test, in its ``tmp_path``; ``close()`` kills what still runs."""

    tmp_path: Path
    started: list[asyncio.subprocess.Process] = field(default_factory=list)

    async def spawn(self, *command: str, stdout: Any = asyncio.subprocess.DEVNULL,
                    stderr: Any = asyncio.subprocess.DEVNULL, env: Mapping[str, str] | None = None,
                    cwd: Path | None = None) -> asyncio.subprocess.Process:
        process = await asyncio.create_subprocess_exec(
            *command, stdout=stdout, stderr=stderr, env=None if env is None else dict(env),
            cwd=cwd)
        self.started.append(process)
        return process

    async def serve(self, settings: Mapping[str, Any] | str, *, env: Mapping[str, str],
                    role: str = "all", name: str | None = None, port: int | None = None,
                    clock_file: Path | None = None, stdout: bool = False) -> BotProcess:
        """``clarify-bot serve --role ROLE`` on ``settings`` (a dict written as TOML, or the
        text), with exactly ``env``; on ``clock_file``'s time when given. Its stderr goes to
        NAME.stderr, its stdout (the audit sink's lines) to NAME.stdout when ``stdout``."""
        name = name or f"serve-{len(self.started)}"
        config = self.tmp_path / f"{name}.toml"
        config.write_text(settings if isinstance(settings, str) else toml(settings))
        if port is None:
            port = (settings.get("server", {}).get("port", 0)
                    if isinstance(settings, Mapping) else 0)
        args = ["serve", "--config", str(config), "--role", role]
        if clock_file is None:
            command, cwd = [CLARIFY_BOT, *args], None
        else:
            command = [sys.executable, "-m", "tests.support.clocked_serve", str(clock_file),
                       *args]
            cwd, env = ROOT, {**env, "PYTHONPATH": str(ROOT)}
        stderr = self.tmp_path / f"{name}.stderr"
        out: Any = (self.tmp_path / f"{name}.stdout").open("wb") if stdout \
            else asyncio.subprocess.DEVNULL
        process = await self.spawn(*command, stdout=out, stderr=stderr.open("wb"), env=env,
                                   cwd=cwd)
        return BotProcess(process, int(port or 0), stderr)

    async def devcore(self, *args: str) -> tuple[str, asyncio.subprocess.Process]:
        """``clarify-bot devcore --port 0 ARGS``: its URL (from the line it prints first) and
        its process, whose stdout the caller may read on."""
        process = await self.spawn(CLARIFY_BOT, "devcore", "--port", "0", *args,
                                   stdout=asyncio.subprocess.PIPE)
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
        return line.split("listening on ")[1].split()[0], process

    async def close(self, *, gently: bool = False) -> None:
        """Kill (``gently``: SIGTERM, then up to 15 s) every process still running."""
        for process in self.started:
            with contextlib.suppress(ProcessLookupError):
                process.terminate() if gently else process.kill()
        for process in self.started:
            try:
                await asyncio.wait_for(process.wait(), 15)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        self.started.clear()


@pytest.fixture
async def processes(tmp_path: Path) -> AsyncIterator[Processes]:
    """Processes started for the test, killed after it."""
    running = Processes(tmp_path)
    try:
        yield running
    finally:
        await running.close()


@pytest.fixture
async def devcore_url(contract: str, tmp_path: Path) -> AsyncIterator[str]:
    """The reference core in its own process (``clarify-bot devcore``), on a port it picked,
    serving ``contract``."""
    own = Processes(tmp_path)
    try:
        url, _ = await own.devcore("--contract", contract)
        yield url
    finally:
        await own.close()
