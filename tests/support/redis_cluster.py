"""Local Redis Cluster and Sentinel set-ups on 127.0.0.1, for the store's tests and the benches.

Real ``redis-server`` processes (Debian's package), each in a working directory of the caller's
choosing, bound to 127.0.0.1 on the ports the caller names. Nothing here is used by the bot.

    from tests.support.redis_cluster import LocalCluster
    with LocalCluster([20201, 20202, 20203], workdir=tmp) as cluster:   # 3 masters
        cluster.url            # "redis+cluster://127.0.0.1:20201,127.0.0.1:20202,..."
    with LocalCluster([20211, 20212, 20213], replica_ports=[20214, 20215, 20216],
                      workdir=tmp) as cluster:                          # 3 masters, 3 replicas
        port = cluster.masters()[0]
        cluster.kill(port)            # SIGKILL a master...
        cluster.wait_healthy()        # ...its replica takes over (node timeout: 1 s)
        cluster.restart(port)         # it comes back as a replica
        cluster.kill_master(port)     # kill + wait for the promotion: the new master's port
        cluster.failover(cluster.replicas()[0])   # or a graceful CLUSTER FAILOVER
        cluster.replica_of(cluster.master_of("clarify:{outbox}:entries"))  # whose slot
    LocalCluster(..., options=("--appendonly", "yes", "--appendfsync", "always"))  # persisting

    LocalSentinel(master_port=..., replica_port=..., sentinel_port=..., workdir=tmp) is the same
    for Sentinel: ``.url`` (redis+sentinel://...), ``.failover()`` (SENTINEL FAILOVER),
    ``.master()``, ``.client(port)``. With ``password=`` the master and replica require it
    (requirepass, masterauth; the sentinel is told it); with ``sentinel_password=`` the sentinel
    requires its own (requirepass in its conf). With ``tls=True`` every server listens for TLS
    only (a self-signed CA made with openssl in the workdir, ``.ca_file``; replication and the
    sentinel's links over TLS too) and ``.url`` is rediss+sentinel://...
    ``free_ports(n, low=, high=)`` finds ports (and bus ports) nothing uses.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

import redis

HOST = "127.0.0.1"
NODE_TIMEOUT_MS = 1000


def free_ports(count: int, *, low: int, high: int) -> list[int]:
    """``count`` ports from ``low`` to ``high`` that nothing listens on, each with its cluster
    bus port (port + 10000) free too: two test runs on one machine do not collide."""
    found: list[int] = []
    for port in range(low, high + 1):
        if all(_free(p) for p in (port, port + 10000)):
            found.append(port)
            if len(found) == count:
                return found
    raise RuntimeError(f"fewer than {count} free ports from {low} to {high}")


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def have_redis_server() -> bool:
    return shutil.which("redis-server") is not None and shutil.which("redis-cli") is not None


def _wait(check: object, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():  # type: ignore[operator]
                return
        except redis.RedisError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"redis set-up: {what} not reached in {timeout:g} s")
        time.sleep(0.05)


def _client(port: int, password: str | None = None, ca_file: Path | None = None
            ) -> redis.Redis:
    return redis.Redis(host=HOST, port=port, password=password, decode_responses=True,
                       socket_timeout=2, ssl=ca_file is not None,
                       ssl_ca_certs=None if ca_file is None else str(ca_file))


def _self_signed(workdir: Path) -> Path:
    """A CA and a certificate for 127.0.0.1 signed by it (node.crt, node.key): the CA's file."""
    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=workdir, check=True, capture_output=True,
                       timeout=60)

    key = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    run("req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
        "-subj", "/CN=clarify-test-ca")
    run("req", *key, "-keyout", "node.key", "-out", "node.csr", "-subj", f"/CN={HOST}")
    (workdir / "node.ext").write_text(f"subjectAltName=IP:{HOST}\n")
    run("x509", "-req", "-in", "node.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "node.crt", "-days", "2", "-extfile", "node.ext")
    return workdir / "ca.crt"


class _Servers:
    """redis-server processes by port, started and killed by this object only."""

    def __init__(self, workdir: Path, *, tls: bool = False) -> None:
        """``tls``: every server listens for TLS only, on its port (``tls_options``)."""
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.ca_file = _self_signed(self.workdir) if tls else None
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.extra: dict[int, list[str]] = {}
        self.passwords: dict[int, str | None] = {}

    def client(self, port: int) -> redis.Redis:
        """A client of the server on ``port``, with the password it was started with."""
        return _client(port, self.passwords.get(port), self.ca_file)

    def listen(self, port: int) -> list[tuple[str, str]]:
        """Where a server listens, as (option, value) pairs: ``port``, or TLS on it."""
        if self.ca_file is None:
            return [("port", str(port))]
        return [("port", "0"), ("tls-port", str(port)),
                ("tls-cert-file", str(self.workdir / "node.crt")),
                ("tls-key-file", str(self.workdir / "node.key")),
                ("tls-ca-cert-file", str(self.ca_file)), ("tls-auth-clients", "no"),
                ("tls-replication", "yes")]

    def spawn(self, port: int, *args: str, password: str | None = None) -> None:
        """A server on ``port``; ``args`` are more options, or a sentinel's conf and --sentinel.
        ``password``: what a client gives it (set in ``args`` or the conf by the caller)."""
        self.extra[port] = list(args)
        self.passwords[port] = password
        listen = [part for option, value in self.listen(port) for part in (f"--{option}", value)]
        command = ["redis-server", *args] if "--sentinel" in args else [
            "redis-server", *listen, "--bind", HOST, "--save", "", "--appendonly", "no",
            "--dir", str(self.workdir), *args]
        log = open(self.workdir / f"redis-{port}.log", "ab")  # noqa: SIM115 - owned by the child
        self.procs[port] = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        _wait(lambda: self.client(port).ping(), timeout=10, what=f"port {port} answering")

    def kill(self, port: int) -> None:
        proc = self.procs.get(port)
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)

    def restart(self, port: int) -> None:
        self.kill(port)
        self.spawn(port, *self.extra[port], password=self.passwords[port])

    def stop(self) -> None:
        for port in list(self.procs):
            proc = self.procs.pop(port)
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)


class LocalCluster:
    """A Redis Cluster of ``ports`` masters (at least 3) and optionally one replica each."""

    def __init__(self, ports: Sequence[int], *, workdir: Path,
                 replica_ports: Sequence[int] = (), options: Sequence[str] = ()) -> None:
        """``options``: more ``redis-server`` arguments for every node, after the defaults (so
        ``("--appendonly", "yes", "--appendfsync", "always")`` makes them persist)."""
        if len(ports) < 3 or (replica_ports and len(replica_ports) != len(ports)):
            raise ValueError("a cluster needs 3+ masters and none or one replica per master")
        self.ports = list(ports)
        self.replica_ports = list(replica_ports)
        self.options = list(options)
        self._servers = _Servers(workdir)

    @property
    def all_ports(self) -> list[int]:
        return self.ports + self.replica_ports

    @property
    def url(self) -> str:
        """The store's URL for this cluster (``redis+cluster://`` with every node as a seed)."""
        return "redis+cluster://" + ",".join(f"{HOST}:{p}" for p in self.all_ports)

    def start(self) -> Self:
        for port in self.all_ports:
            self._servers.spawn(
                port, "--cluster-enabled", "yes",
                "--cluster-config-file", f"nodes-{port}.conf",
                # one workdir: an append-only directory and a snapshot (a replica's full
                # sync loads it) per node, so that two nodes never read each other's
                "--appenddirname", f"appendonly-{port}", "--dbfilename", f"dump-{port}.rdb",
                "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
                # a replica may always take over, however long its master has been away
                "--cluster-replica-validity-factor", "0", *self.options)
        replicas = "1" if self.replica_ports else "0"
        subprocess.run(["redis-cli", "--cluster", "create",
                        *(f"{HOST}:{p}" for p in self.all_ports),
                        "--cluster-replicas", replicas, "--cluster-yes"],
                       check=True, capture_output=True, timeout=60)
        self.wait_healthy()
        return self

    def _nodes(self) -> list[dict[str, str]]:
        for port in self.all_ports:
            try:
                raw = _client(port).execute_command("CLUSTER", "NODES")
            except redis.RedisError:
                continue
            text = raw if isinstance(raw, str) else str(raw)
            rows = []
            for line in text.strip().splitlines():
                parts = line.split()
                rows.append({"id": parts[0], "port": parts[1].split("@")[0].rsplit(":", 1)[1],
                             "flags": parts[2], "master": parts[3],
                             "slots": " ".join(parts[8:])})
            return rows
        raise TimeoutError("no cluster node answers")

    def masters(self) -> list[int]:
        """Ports of the live masters that serve slots."""
        return sorted(int(n["port"]) for n in self._nodes()
                      if "master" in n["flags"] and "fail" not in n["flags"] and n["slots"])

    def replicas(self) -> list[int]:
        return sorted(int(n["port"]) for n in self._nodes()
                      if "slave" in n["flags"] and "fail" not in n["flags"])

    def master_of(self, key: str) -> int:
        """The port of the live master that serves ``key``'s slot."""
        port = self.masters()[0]
        slot = int(_client(port).execute_command("CLUSTER", "KEYSLOT", key))
        for node in self._nodes():
            if "master" not in node["flags"] or "fail" in node["flags"]:
                continue
            for span in node["slots"].split():
                low, _, high = span.partition("-")
                if low.isdigit() and int(low) <= slot <= int(high or low):
                    return int(node["port"])
        raise LookupError("no master serves that slot")

    def replica_of(self, master_port: int, timeout: float = 15) -> int:
        """The port of a live replica of the master on ``master_port``, once the node asked
        knows of one (right after a failover its view of the other masters may lag)."""
        found: list[int] = []

        def known() -> bool:
            nodes = self._nodes()
            ids = [n["id"] for n in nodes if int(n["port"]) == master_port]
            found[:] = [int(n["port"]) for n in nodes
                        if ids and n["master"] == ids[0] and "fail" not in n["flags"]]
            return bool(found)

        _wait(known, timeout=timeout, what=f"a replica of {master_port}")
        return found[0]

    def wait_healthy(self, timeout: float = 30) -> None:
        """Every live node says cluster_state:ok and agrees that all 16384 slots are served."""
        def ok() -> bool:
            live = [p for p in self.all_ports if self._alive(p)]
            for port in live:
                info = _client(port).execute_command("CLUSTER", "INFO")
                text = info if isinstance(info, str) else str(info)
                if "cluster_state:ok" not in text or "cluster_slots_ok:16384" not in text:
                    return False
            if len(self.masters()) != len(self.ports):
                return False
            return all(_client(port).info("replication").get("master_link_status") == "up"
                       for port in self.replicas() if self._alive(port))

        _wait(ok, timeout=timeout, what="cluster_state:ok")

    def _alive(self, port: int) -> bool:
        proc = self._servers.procs.get(port)
        return proc is not None and proc.poll() is None

    def kill(self, port: int) -> None:
        """SIGKILL one node (a master: its replica takes over after the node timeout)."""
        self._servers.kill(port)

    def kill_master(self, port: int, timeout: float = 30) -> int:
        """SIGKILL the master on ``port`` and wait until its replica serves its slots and the
        cluster is healthy again: the port of the new master."""
        replica = self.replica_of(port)
        self.kill(port)
        _wait(lambda: replica in self.masters() and port not in self.masters(),
              timeout=timeout, what="a replica's promotion after its master's kill")
        self.wait_healthy(timeout)
        return replica

    def restart(self, port: int) -> None:
        """Start a killed node again on its old config: it rejoins (as a replica, once failed
        over) and the cluster is healthy again when this returns."""
        self._servers.restart(port)
        self.wait_healthy()

    def failover(self, replica_port: int) -> None:
        """A graceful ``CLUSTER FAILOVER`` on a replica: it becomes its master's master."""
        before = set(self.masters())
        _client(replica_port).execute_command("CLUSTER", "FAILOVER")
        _wait(lambda: replica_port in self.masters() and set(self.masters()) != before,
              timeout=30, what="failover")
        self.wait_healthy()

    def stop(self) -> None:
        self._servers.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


class LocalSentinel:
    """A master, one replica and one sentinel watching them as ``name``; the data nodes and the
    sentinel each require a password when one is given."""

    def __init__(self, *, master_port: int, replica_port: int, sentinel_port: int,
                 workdir: Path, name: str = "clarify", password: str | None = None,
                 sentinel_password: str | None = None, tls: bool = False) -> None:
        self.master_port, self.replica_port = master_port, replica_port
        self.sentinel_port, self.name = sentinel_port, name
        self.password, self.sentinel_password = password, sentinel_password
        self._servers = _Servers(workdir, tls=tls)
        self.ca_file = self._servers.ca_file

    @property
    def url(self) -> str:
        """The store's URL: ``redis+sentinel://`` (``rediss+`` over TLS) with the sentinel and
        the master's name."""
        scheme = "redis" if self.ca_file is None else "rediss"
        return f"{scheme}+sentinel://{HOST}:{self.sentinel_port}/{self.name}"

    def client(self, port: int) -> redis.Redis:
        """A client of the master, the replica or the sentinel, with the password it needs."""
        return self._servers.client(port)

    def start(self) -> Self:
        auth = ("--requirepass", self.password, "--masterauth", self.password) \
            if self.password else ()
        self._servers.spawn(self.master_port, *auth, password=self.password)
        self._servers.spawn(self.replica_port, "--replicaof", HOST, str(self.master_port), *auth,
                            password=self.password)
        conf = self._servers.workdir / f"sentinel-{self.sentinel_port}.conf"
        conf.write_text(
            "".join(f"{option} {value}\n" for option, value in
                    self._servers.listen(self.sentinel_port)) + f"bind {HOST}\n"
            + (f"requirepass {self.sentinel_password}\n" if self.sentinel_password else "")
            + f"sentinel monitor {self.name} {HOST} {self.master_port} 1\n"
            + (f"sentinel auth-pass {self.name} {self.password}\n" if self.password else "")
            + f"sentinel down-after-milliseconds {self.name} 1000\n"
            f"sentinel failover-timeout {self.name} 5000\n")
        self._servers.spawn(self.sentinel_port, str(conf), "--sentinel",
                            password=self.sentinel_password)
        _wait(lambda: self._replica_synced(), timeout=30, what="replica in sync")
        _wait(lambda: self._sentinel_sees_replica(), timeout=30, what="sentinel ready")
        return self

    def _replica_synced(self) -> bool:
        info = self.client(self.replica_port).info("replication")
        return bool(info.get("master_link_status") == "up")

    def _sentinel_sees_replica(self) -> bool:
        replicas = self.client(self.sentinel_port).execute_command(
            "SENTINEL", "REPLICAS", self.name)
        return bool(replicas)

    def master(self) -> int:
        host_port = self.client(self.sentinel_port).execute_command(
            "SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.name)
        return int(host_port[1])

    def failover(self) -> int:
        """``SENTINEL FAILOVER``: returns the new master's port once it has taken over."""
        before = self.master()
        self.client(self.sentinel_port).execute_command("SENTINEL", "FAILOVER", self.name)
        _wait(lambda: self.master() != before
              and self.client(self.master()).info("replication").get("role") == "master",
              timeout=30, what="sentinel failover")
        return self.master()

    def stop(self) -> None:
        self._servers.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
