"""The core client's CPU per call: over aiohttp (what the bot uses) against httpx's client.

Run: .venv/bin/python bench/core_client.py [--calls 3000] [--concurrency 16]

A server answering every request with a clarification's JSON runs in its own process on
127.0.0.1 (port 0); this process then reads the clarification ``--calls`` times at
``--concurrency`` through ``CoreClient``: once over aiohttp's session (what ships), once with
httpx's client and httpcore's pool as its transport (``HttpxTransport`` below; ``--netbackend``
adds the asyncio socket layer the bot used before, from an earlier checkout's file). Only this
process's CPU time is counted, so the server's share and the machine's load leave it alone; the
rates printed beside it move with the load. Each is run twice, alternating.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bot.core.calls import DEFAULT_LIMITS  # noqa: E402
from bot.core.client import CoreClient  # noqa: E402
from bot.core.http import WireRequest, WireResponse  # noqa: E402
from bot.logs import configure_logging  # noqa: E402

SERVER = """
import json, sys
from aiohttp import web
sys.path.insert(0, sys.argv[1])
from tests.core.conftest import clarification
BODY = json.dumps(clarification()).encode()
async def answer(request):
    await request.read()
    return web.Response(body=BODY, content_type="application/json")
app = web.Application()
app.router.add_route("*", "/{tail:.*}", answer)
async def main():
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(site._server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()
import asyncio
asyncio.run(main())
"""


class HttpxTransport:
    """httpx's client over ``transport`` as the core client's transport: the wire above is the
    client's own; only the sending differs."""

    def __init__(self, transport: httpx.AsyncBaseTransport) -> None:
        self._http = httpx.AsyncClient(transport=transport, follow_redirects=False)

    async def handle(self, request: WireRequest) -> WireResponse:
        response = await self._http.request(request.method, str(request.url),
                                            content=request.content,
                                            headers=dict(request.headers))
        return WireResponse(response.status_code, response.headers, response.content)

    async def aclose(self) -> None:
        await self._http.aclose()


async def measure(name: str, client: CoreClient, calls: int, concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            await client.get_clarification(clarification_id="clar-1")

    await asyncio.gather(*(one() for _ in range(200)))  # connections open, code warm
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one() for _ in range(calls)))
    cpu_ms = (time.process_time() - cpu) * 1000 / calls
    rate = calls / (time.perf_counter() - wall)
    print(f"| {name} | {cpu_ms:.3f} | {rate:,.0f} |")


async def run(url: str, calls: int, concurrency: int, netbackend: str | None) -> None:
    clients = {
        "aiohttp (bot/core/http.py)": CoreClient(base_url=url, token="bench"),
        "httpx client + httpcore pool": CoreClient(
            base_url=url, token="bench",
            transport=HttpxTransport(httpx.AsyncHTTPTransport(limits=DEFAULT_LIMITS))),
    }
    if netbackend:  # an earlier checkout's bot/core/netbackend.py: httpx's pool on asyncio
        spec = importlib.util.spec_from_file_location("netbackend", netbackend)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        clients["httpx client + pool on asyncio sockets"] = CoreClient(
            base_url=url, token="bench",
            transport=HttpxTransport(module.transport(DEFAULT_LIMITS)))
    print("| client | CPU ms per call | calls/s |\n|---|---:|---:|")
    try:
        for _ in range(2):
            for name, client in clients.items():
                await measure(name, client, calls, concurrency)
    finally:
        for client in clients.values():
            await client.aclose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--netbackend", help="an earlier checkout's bot/core/netbackend.py")
    args = parser.parse_args()
    configure_logging(level="warning", cache=True)  # as serve logs: core_request is debug
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(ROOT)], stdout=subprocess.PIPE)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        asyncio.run(run(f"http://127.0.0.1:{port}", args.calls, args.concurrency,
                        args.netbackend))
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
