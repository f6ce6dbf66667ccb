"""Run the built image as an operator would and check it works: scripts/image-smoke.sh builds
the image, then runs this with its tag.

    .venv/bin/python scripts/image_smoke.py clarify-bot:smoke

Every container uses the host's network (the daemon has no bridge), and every server listens on
127.0.0.1: a Redis (the host's redis-server, its append-only file on), the fake Slack Web API of
the tests (in this process), the reference core (`devcore`, from the image), and the bot from the
image as two containers, `serve --role web` and `serve --role worker` with `worker.health_port`,
its settings from a mounted TOML file and its secrets from a mounted folder
(CLARIFY_BOT_SECRETS_DIR). Checked: `--version`; who the image runs as and what it lacks (pip, a
compiler); /readyz of web and worker; a card delivered to Sarah through the fake Slack and her
signed tap recorded by the core; the image's HEALTHCHECK turning healthy; SIGTERM (docker stop)
ending the web container with code 0 within 10 s; every log line JSON, no traceback, no secret.
Exits 1 on the first check that fails, saying which.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from devslack import BOT_TOKEN, LocalSlack  # noqa: E402
from tests.bot.test_serve import responses_at_core, signed_click  # noqa: E402
from tests.bot.test_service import SECRETS  # noqa: E402
from tests.bot.test_service import _free_port as free_port  # noqa: E402

PEOPLE = ("U0SARAH", "U0AHMED", "U0MARIA", "U0TOM", "U0JONAS", "U0PRIYA")
SETTINGS = """\
[clarify]
enabled = true
channels = "slack"
[core]
url = "http://127.0.0.1:{core}"
[store]
backend = "redis"
[redis]
url = "redis://127.0.0.1:{redis}/0"
[server]
host = "127.0.0.1"
port = {web}
[worker]
health_port = {health}
poll_interval_seconds = 0.2
[slack]
api_url = "{slack}"
mode = "http"
[[slack.workspaces]]
team_id = "T0ACME"
enterprise_id = "E0ACME"
tenant = "acme"
"""


class Failed(Exception):
    pass


def say(text: str) -> None:
    print(f"smoke: {text}", flush=True)


def docker(*args: str, check: bool = True, timeout: float = 120) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout,
                          check=False)
    if check and done.returncode != 0:
        raise Failed(f"docker {' '.join(args[:3])}… exited {done.returncode}: "
                     f"{done.stderr.strip()[-500:]}")
    return done.stdout.strip()


async def until(condition: Callable[[], Any], what: str,
                seconds: float = 60) -> float:
    """Polls until ``condition`` holds; the seconds it took."""
    started = time.monotonic()
    while True:
        result = condition()
        if await result if asyncio.iscoroutine(result) else result:
            return time.monotonic() - started
        if time.monotonic() - started > seconds:
            raise Failed(f"timed out after {seconds:.0f} s waiting for {what}")
        await asyncio.sleep(0.25)


async def get_json(url: str) -> tuple[int, Any]:
    try:
        async with aiohttp.ClientSession() as http, http.get(url) as got:
            return got.status, await got.json(content_type=None)
    except (aiohttp.ClientError, ValueError):
        return 0, None


@contextlib.contextmanager
def redis_server(port: int, folder: Path) -> Any:
    process = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", str(folder),
         "--appendonly", "yes", "--save", ""], stdout=subprocess.DEVNULL)
    try:
        yield process
    finally:
        process.terminate()
        process.wait(10)


@contextlib.asynccontextmanager
async def containers(image: str) -> AsyncIterator[Callable[..., str]]:
    started: list[str] = []

    def run(name: str, *args: str, mounts: tuple[tuple[Path, str], ...] = (),
            env: dict[str, str] | None = None) -> str:
        volumes = [f"--volume={source}:{target}:ro" for source, target in mounts]
        variables = [f"--env={k}={v}" for k, v in (env or {}).items()]
        container = docker("run", "--detach", "--network", "host", "--name", name,
                           "--read-only", "--cap-drop", "ALL",
                           "--security-opt", "no-new-privileges", *volumes, *variables,
                           image, *args)
        started.append(name)
        return container

    try:
        yield run
    finally:
        for name in started:
            docker("rm", "--force", name, check=False)


def listening_on(name: str, port: int) -> list[str]:
    """The IPv4 addresses a container's process listens on at ``port`` (/proc/net/tcp: state
    0A is LISTEN; the address is little-endian hex), read with the image's own python3."""
    table = docker("exec", name, "python3", "-c",
                   "print(open('/proc/net/tcp').read()); print(open('/proc/net/tcp6').read())")
    found = []
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 4 or fields[3] != "0A" or ":" not in fields[1]:
            continue
        address, hex_port = fields[1].rsplit(":", 1)
        if int(hex_port, 16) != port:
            continue
        if len(address) == 8:
            found.append(".".join(str(int(address[i:i + 2], 16)) for i in (6, 4, 2, 0)))
        else:
            found.append("::" if set(address) == {"0"} else f"ipv6:{address}")
    return sorted(set(found))


def logs(name: str) -> list[str]:
    done = subprocess.run(["docker", "logs", name], capture_output=True, text=True, timeout=60,
                          check=False)
    return done.stderr.splitlines()


def json_lines_only(name: str, lines: list[str], forbidden: list[str]) -> None:
    for line in lines:
        try:
            json.loads(line)
        except ValueError:
            raise Failed(f"{name}: a log line that is not JSON: {line[:120]!r}") from None
    text = "\n".join(lines)
    if "Traceback" in text or '"exception"' in text:
        raise Failed(f"{name}: a traceback in the log")
    for value in forbidden:
        if value in text:
            raise Failed(f"{name}: a secret in the log")


async def smoke(image: str) -> None:
    version = docker("run", "--rm", "--network", "host", image, "--version")
    say(f"{image}: {version}")
    who = docker("run", "--rm", "--network", "host", "--entrypoint", "sh", image, "-c",
                 "id -u; command -v pip pip3 gcc cc make || true")
    uid, *present = who.splitlines()
    if uid == "0" or present:
        raise Failed(f"runs as uid {uid}; build tools present: {present}")
    say(f"runs as uid {uid}; no pip, no compiler")

    work = Path(tempfile.mkdtemp(prefix="clarify-smoke-"))
    ports = {"core": free_port(), "redis": free_port(), "web": free_port(),
             "health": free_port()}
    given = {**SECRETS, "CLARIFY_BOT_ACTION_SIGNING_KEY": secrets.token_urlsafe(32)}
    secret_dir = _secrets_folder(work, given)
    suffix = secrets.token_hex(3)
    names = {role: f"clarify-smoke-{role}-{suffix}" for role in ("core", "web", "worker")}
    try:
        async with LocalSlack() as slack, containers(image) as run:
            for person in PEOPLE:
                slack.add_user(person)
            _readable(work / "clarify-bot.toml", SETTINGS.format(slack=slack.url, **ports))
            with redis_server(ports["redis"], work):
                run(names["core"], "devcore", "--host", "127.0.0.1", "--port",
                    str(ports["core"]), env={"CLARIFY_HEALTH_PORT": str(ports["core"])})
                core = f"http://127.0.0.1:{ports['core']}"
                took = await until(lambda: _ok(f"{core}/healthz"), "the reference core")
                say(f"reference core (devcore) up in {took:.1f} s")
                bot_env = {"CLARIFY_BOT_CONFIG": "/etc/clarify-bot/clarify-bot.toml",
                           "CLARIFY_BOT_SECRETS_DIR": "/run/secrets/clarify-bot"}
                mounts = ((work / "clarify-bot.toml", "/etc/clarify-bot/clarify-bot.toml"),
                          (secret_dir, "/run/secrets/clarify-bot"))
                run(names["web"], "serve", "--role", "web", mounts=mounts,
                    env={**bot_env, "CLARIFY_HEALTH_PORT": str(ports["web"])})
                run(names["worker"], "serve", "--role", "worker", mounts=mounts,
                    env={**bot_env, "CLARIFY_HEALTH_PORT": str(ports["health"])})
                web = f"http://127.0.0.1:{ports['web']}"
                worker = f"http://127.0.0.1:{ports['health']}"
                for role, url in (("web", web), ("worker", worker)):
                    took = await until(functools.partial(_ready, url), f"{role} /readyz 200")
                    status, body = await get_json(f"{url}/readyz")
                    say(f"{role}: /readyz {status} {json.dumps(body['checks'], sort_keys=True)}"
                        f" after {took:.1f} s")
                listening = listening_on(names["web"], ports["web"])
                if listening != ["127.0.0.1"]:  # the mounted file's server.host, not 0.0.0.0
                    raise Failed(f"web listens on {listening}, not the settings' 127.0.0.1")
                say("web listens on 127.0.0.1 only: the mounted settings file's server.host")
                took = await until(lambda: slack.dm_of("U0SARAH"), "a card in Sarah's DM")
                card = slack.dm_of("U0SARAH")[-1]
                say(f"worker delivered a card to U0SARAH {took:.1f} s later "
                    f"({len(card.blocks)} blocks; {len(slack.calls_to('chat.postMessage'))} "
                    "chat.postMessage calls in all)")
                clarification = str((card.metadata or {})["event_payload"]["delivery"]
                                    ).split("|")[0]
                body, headers = signed_click(slack, "U0SARAH")
                async with aiohttp.ClientSession() as http, http.post(
                        f"{web}/slack/events", data=body, headers=headers) as acked:
                    if acked.status != 200:
                        raise Failed(f"the tap was answered {acked.status}")

                async def recorded() -> bool:
                    return ("p-sarah", 0) in await responses_at_core(core, clarification)

                took = await until(recorded, "the core to record Sarah's tap")
                say(f"web acknowledged Sarah's tap; the worker forwarded it; the core recorded "
                    f"it {took:.1f} s later")
                took = await until(lambda: _health(names["web"]) == "healthy",
                                   "the image's HEALTHCHECK", 90)
                say(f"docker HEALTHCHECK: web healthy after {took:.1f} s more; worker "
                    f"{_health(names['worker'])}")
                started = time.monotonic()
                docker("stop", "--time", "10", names["web"])
                stopped = time.monotonic() - started
                code = docker("inspect", "--format", "{{.State.ExitCode}}", names["web"])
                if code != "0" or stopped >= 10:
                    raise Failed(f"docker stop: exit code {code} after {stopped:.1f} s")
                say(f"docker stop web: exit code 0 in {stopped:.1f} s")
                forbidden = [*given.values(), BOT_TOKEN]
                for role in ("web", "worker"):
                    lines = logs(names[role])
                    json_lines_only(role, lines, forbidden)
                    say(f"{role}: {len(lines)} log lines, all JSON, no traceback, no secret")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _readable(path: Path, text: str) -> None:
    """A file the image's user (uid 10001) can read through a bind mount."""
    path.write_text(text)
    path.chmod(0o644)


def _secrets_folder(work: Path, given: dict[str, str]) -> Path:
    """One file per secret, named like its variable (CLARIFY_BOT_SECRETS_DIR)."""
    folder = work / "secrets"
    folder.mkdir()
    for name, value in given.items():
        _readable(folder / name, value + "\n")
    folder.chmod(0o755)
    work.chmod(0o755)
    return folder


async def _ok(url: str) -> bool:
    return (await get_json(url))[0] == 200


async def _ready(url: str) -> bool:
    status, body = await get_json(f"{url}/readyz")
    return status == 200 and body["status"] == "ok"


def _health(name: str) -> str:
    return docker("inspect", "--format", "{{.State.Health.Status}}", name, check=False)


def main() -> int:
    from bot.logs import configure_logging

    configure_logging(level="warning")  # the core client's own lines are not the smoke's
    image = sys.argv[1] if len(sys.argv) > 1 else "clarify-bot:smoke"
    try:
        asyncio.run(smoke(image))
    except Failed as exc:
        say(f"FAILED: {exc}")
        return 1
    say("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
