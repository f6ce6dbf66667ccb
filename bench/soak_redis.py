"""The soak's Redis and its fault (bench/soak.py ``--redis standalone|cluster``).

- standalone: one ``redis-server`` with its append-only file fsynced on every write; the fault is
  a SIGKILL and a start again on that file 0.5-2 s later.
- cluster: three masters and three replicas (tests/support/redis_cluster.py), every node with
  the same append-only file settings; the fault is a SIGKILL of a master, a wait until its replica
  serves its slots (the cluster has failed over), and the killed node started again on its files
  0.5-2 s later, when it rejoins as the new master's replica. The masters killed take turns: the
  one serving the answer outbox's slot, then one serving a person's keys (another master), and so
  on.
"""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
from collections.abc import Callable

from delivery import World, _redis
from soak_world import reader

from bot.store.keys import Keys
from tests.support.redis_cluster import LocalCluster, free_ports

PERSIST = ("--appendonly", "yes", "--appendfsync", "always")


class StandaloneRedis:
    label = "Redis killed (SIGKILL) and restarted"

    def __init__(self, world: World, port: int) -> None:
        self.world, self.port = world, port
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        data = self.world.logs / "redis"
        data.mkdir(exist_ok=True)
        self.proc = self.world.start("redis", [
            "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
            "--dir", str(data), "--save", "", *PERSIST])

    async def up(self) -> None:
        for _ in range(100):
            try:
                if (await _redis(self.port, "PING")) == "+PONG":
                    return
            except OSError:
                pass
            await asyncio.sleep(0.1)

    async def fault(self, rng: random.Random, prefix: str) -> str:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.world.procs.remove(self.proc)
        await asyncio.sleep(rng.uniform(0.5, 2.0))
        self.start()
        return self.label

    def stop(self) -> None:
        """Stopped with the world's other processes."""


class ClusterRedis:
    """Three masters, three replicas, on free ports (with free bus ports) in ``low``..``high``."""

    def __init__(self, world: World, low: int, high: int) -> None:
        ports = free_ports(6, low=low, high=high)
        self.cluster = LocalCluster(ports[:3], replica_ports=ports[3:],
                                    workdir=world.logs / "cluster", options=PERSIST)
        self.kills = 0
        self.log: list[str] = []  # what each fault did, for the report

    @property
    def url(self) -> str:
        return self.cluster.url

    def start(self) -> None:
        self.cluster.start()

    async def up(self) -> None:
        await asyncio.to_thread(self.cluster.wait_healthy)

    def _victim(self, prefix: str) -> tuple[str, int]:
        keys = Keys(prefix)
        outbox = self.cluster.master_of(keys.outbox_entries)
        if self.kills % 2 == 0:
            return "the outbox", outbox
        for n in range(200):  # a person whose keys live on another master
            port = self.cluster.master_of(keys.person(reader(n)))
            if port != outbox:
                return "a person's keys", port
        return "the outbox", outbox

    async def fault(self, rng: random.Random, prefix: str) -> str:
        what, port = await asyncio.to_thread(self._victim, prefix)
        self.kills += 1
        started = asyncio.get_running_loop().time()
        promoted = await asyncio.to_thread(self.cluster.kill_master, port)
        took = asyncio.get_running_loop().time() - started
        await asyncio.sleep(rng.uniform(0.5, 2.0))
        await asyncio.to_thread(self.cluster.restart, port)
        self.log.append(f"master {port} ({what}) killed, replica {promoted} promoted after "
                        f"{took:.1f} s, {port} rejoined as its replica")
        return f"Redis Cluster master of {what} killed (SIGKILL), failed over, rejoined"

    def stop(self) -> None:
        self.cluster.stop()


def redis_for(kind: str, world: World, port: Callable[[], int], base_port: int) -> \
        StandaloneRedis | ClusterRedis:
    if kind == "cluster":
        return ClusterRedis(world, base_port + 80, base_port + 99)
    return StandaloneRedis(world, port())

