"""A real Redis Cluster of the test's own: N masters (``redis-server --cluster-enabled yes``) on free
loopback ports, joined with ``redis-cli --cluster create``, each with its own append-only file, and
optionally a replica per master (``--cluster-replicas 1``).

For failover tests: :meth:`RedisClusterProcesses.lag` makes a master's replica fall behind (it
stalls and its link is dropped, so writes reach the master only), :meth:`kill` is a SIGKILL, and
:meth:`wait_for_master` waits until a replica has been promoted in its master's place."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path

import redis
from redis.cluster import RedisCluster as SyncCluster

from .private_redis import REDIS_SERVER, free_port

REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"
BUS_OFFSET = 10_000
"""A cluster node also listens on its port + 10000 (the cluster bus), which must be a valid port too."""


class RedisClusterProcesses:
    """``start()`` a cluster of ``masters`` nodes; ``kill(port)``, ``restart(port)`` one; ``close()``."""

    def __init__(
        self, directory: Path, masters: int = 3, replicas: int = 0, node_timeout_ms: int = 2000
    ) -> None:
        self.directory = directory
        self.masters = masters
        self.replicas = replicas
        self.node_timeout_ms = node_timeout_ms
        self.ports: list[int] = []
        for _ in range(masters * (1 + replicas)):
            self.ports.append(free_port(BUS_OFFSET, self.ports))  # the node's port and its bus
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        """The service's URL for this cluster: any node; the client discovers the others."""
        return f"redis+cluster://127.0.0.1:{self.ports[0]}/0"

    def start(self) -> None:
        for port in self.ports:
            self._start_node(port)
        nodes = [f"127.0.0.1:{port}" for port in self.ports]
        replicas = ["--cluster-replicas", str(self.replicas)]
        subprocess.run(
            [REDIS_CLI, "--cluster", "create", *nodes, *replicas, "--cluster-yes"],
            check=True,
            capture_output=True,
            timeout=60,
        )
        deadline = time.monotonic() + 30
        while not self._healthy():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the cluster on ports {self.ports} did not become healthy")
            time.sleep(0.1)

    def _start_node(self, port: int) -> None:
        node_dir = self.directory / f"node-{port}"
        node_dir.mkdir(parents=True, exist_ok=True)
        self.processes[port] = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(node_dir),
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                str(self.node_timeout_ms),
                "--save",
                "",
                "--appendonly",
                "yes",
                "--logfile",
                "redis.log",
                "--repl-diskless-sync-delay",
                "0",  # a replica syncs at once
                "--enable-debug-command",
                "local",  # DEBUG SLEEP: tests stall a server (a lagging replica, say)
            ],
            stdout=subprocess.DEVNULL,
        )
        client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + 10
        try:
            while True:
                try:
                    client.ping()
                    return
                except redis.exceptions.ConnectionError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.02)
        finally:
            client.close()

    def _healthy(self) -> bool:
        """Every running node sees the cluster ``ok`` with every node, and every replica's link up."""
        for port in self.processes:
            try:
                with redis.Redis(host="127.0.0.1", port=port) as node:
                    info = node.cluster("info")
                    replication = node.info("replication")
            except redis.exceptions.ConnectionError:
                return False
            if info.get("cluster_state") != "ok" or int(info.get("cluster_known_nodes", 0)) != len(
                self.ports
            ):
                return False
            if replication.get("role") == "slave" and replication.get("master_link_status") != "up":
                return False
        return True

    def role(self, port: int) -> str:
        """``master`` or ``slave``, as the node says."""
        with redis.Redis(host="127.0.0.1", port=port) as node:
            return str(node.info("replication")["role"])

    def replica_of(self, master: int) -> int:
        """The port of a replica of the master on ``master``."""
        with redis.Redis(host="127.0.0.1", port=master) as node:
            replication = node.info("replication")
        if int(replication.get("connected_slaves", 0)) < 1:
            raise RuntimeError(f"the master on {master} has no connected replica: {replication}")
        return int(replication["slave0"]["port"])

    def lag(self, master: int, seconds: float) -> threading.Thread:
        """Make the replica of ``master`` fall behind for ``seconds``: it stalls (``DEBUG SLEEP``, so
        it neither reads nor reconnects) and the master drops its link (``CLIENT KILL TYPE replica``),
        so every write from now on is on the master only, until the replica wakes and resyncs.
        Returns the thread running the sleep (join it)."""
        replica = self.replica_of(master)

        def stall() -> None:
            with redis.Redis(host="127.0.0.1", port=replica, socket_timeout=seconds + 10) as node:
                node.execute_command("DEBUG", "SLEEP", seconds)

        sleeper = threading.Thread(target=stall)
        sleeper.start()
        time.sleep(0.05)  # the replica is asleep
        with redis.Redis(host="127.0.0.1", port=master) as node:
            node.client_kill_filter(_type="replica")
        return sleeper

    def wait_for_master(self, port: int, timeout: float = 30.0) -> None:
        """Wait until the node on ``port`` is a master and every live node sees the cluster ``ok``."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.role(port) == "master" and all(self._state(p) == "ok" for p in self.processes):
                    return
            except redis.exceptions.ConnectionError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"node {port} did not become a master of an ok cluster")
            time.sleep(0.05)

    def _state(self, port: int) -> str:
        with redis.Redis(host="127.0.0.1", port=port) as node:
            return str(node.cluster("info").get("cluster_state"))

    def client(self) -> SyncCluster:
        """A synchronous cluster client, for a test to look inside."""
        return SyncCluster(host="127.0.0.1", port=self.ports[0])

    def node_of(self, key: str) -> int:
        """The port of the master that holds ``key``'s slot."""
        with self.client() as cluster:
            node = cluster.get_node_from_key(key)
            return int(node.port)

    def kill(self, port: int) -> None:
        process = self.processes.pop(port, None)
        if process is not None:
            process.kill()
            process.wait(10)

    def restart(self, port: int) -> None:
        """Start a killed node again on its data (its append-only file and nodes.conf)."""
        self._start_node(port)
        deadline = time.monotonic() + 30
        while not self._healthy():
            if time.monotonic() > deadline:
                raise RuntimeError(f"node {port} did not rejoin the cluster")
            time.sleep(0.1)

    def close(self) -> None:
        for port in list(self.processes):
            self.kill(port)
