"""Reaching a Ray cluster: ``auto`` (the cluster ``ray start`` made), ``HOST:PORT`` or ``ray://HOST:PORT``, or
``local:N`` (a head and N worker nodes started on this machine, for tests and trials).

Ray is imported here, inside :class:`ClusterSession` only, so that a local campaign never starts it.
"""
from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from memo.campaign.config import total_memory_gb
from memo.errors import UsageError, one_line
from memo.json_types import JsonObject

_LOCAL = re.compile(r"^local:(\d+)$")
_ADDRESS = re.compile(r"^(auto|(ray://)?[\w.\-]+:\d+)$")
HELP = "auto, HOST:PORT, ray://HOST:PORT or local:N"


@dataclass(frozen=True)
class NodeInfo:
    """A live node that can take work (one with CPUs: a ``local:N`` head has none)."""

    node_id: str
    host: str
    cpus: float
    memory_gb: float


def parse_address(address: str) -> int | None:
    """The node count of ``local:N``, None for a real cluster's address; a :class:`UsageError` for anything else."""
    text = address.strip()
    local = _LOCAL.match(text)
    if local:
        count = int(local.group(1))
        if not 1 <= count <= 16:
            raise UsageError(f"--cluster {address}: a local test cluster has 1 to 16 nodes")
        return count
    if not _ADDRESS.match(text):
        raise UsageError(f"--cluster {address!r}: expected {HELP}")
    return None


_WATCHDOG = """
import os, sys, time, psutil
head = psutil.Process(int(sys.argv[1]))
seen = {}
while True:
    try:
        if head.status() == psutil.STATUS_ZOMBIE:
            break
        for child in head.children(recursive=True):
            if child.pid != os.getpid():
                seen[child.pid] = child
    except psutil.Error:
        break
    time.sleep(1.0)
for process in seen.values():
    try:
        process.kill()  # psutil checks the creation time: a reused pid is left alone
    except psutil.Error:
        pass
"""


def _reap_when_gone() -> None:
    """Make a ``local:N`` cluster end with this process, however it ends: after a ``kill -9`` Ray's fate sharing
    takes its raylets down but leaves agent processes behind (about 0.5 GB for two nodes). A small watchdog
    outside the cluster notes this process's descendants every second and kills them once it is gone."""
    subprocess.Popen([sys.executable, "-c", _WATCHDOG, str(os.getpid())], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def _ray_messages_to_stderr() -> None:
    """Ray's driver prints what the cluster reports (a raylet that died, a worker's error) to stdout, where
    ``memo fuzz --json`` writes its events: every such message goes to stderr instead."""
    from ray._private import worker

    original = worker.print_to_stdstream
    if getattr(original, "memo_stderr", False):
        return

    def to_stderr(data: JsonObject, ignore_prefix: bool) -> None:
        original({**data, "is_err": True}, ignore_prefix)

    to_stderr.memo_stderr = True  # type: ignore[attr-defined]
    worker.print_to_stdstream = to_stderr


def _probe(address: str, timeout_s: float = 5.0) -> None:
    """Fail within seconds where Ray would wait minutes for a cluster that is not there: the address must
    accept a TCP connection (``auto`` is first read from the file ``ray start`` leaves)."""
    target = address.removeprefix("ray://")
    if target == "auto":
        from ray._private.services import canonicalize_bootstrap_address  # Ray's own reading of "auto"

        target = canonicalize_bootstrap_address("auto") or target  # ConnectionError when no cluster runs here
    host, _, port = target.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise ConnectionError(f"nothing answers at {target} ({exc.strerror or exc})") from exc


class ClusterSession:
    """A connection to a Ray cluster, started on this machine for ``local:N``; :meth:`close` ends what it began."""

    def __init__(self, address: str) -> None:
        self.address = address.strip()
        local_nodes = parse_address(self.address)
        # Set before Ray is imported: no usage reports; a test cluster stays on 127.0.0.1 (Ray would otherwise
        # bind the machine's external address).
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        if local_nodes is not None:
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        import ray

        _ray_messages_to_stderr()
        logging.getLogger("ray").setLevel(logging.WARNING)  # its INFO lines (addresses, start-up) are noise here
        self.ray = ray
        self.local: Any = None  # ray.cluster_utils.Cluster of a local:N cluster
        self.local_nodes: list[Any] = []
        try:
            if local_nodes is not None:
                self._start_local(local_nodes)
                target = self.local.address
            else:
                target = self.address
                _probe(target)
            ray.init(address=target, logging_level=logging.ERROR, log_to_driver=False,
                     configure_logging=True)
        except UsageError:
            self.close()
            raise
        except Exception as exc:  # Ray's ConnectionError, a timeout...: one line, and nothing left running
            self.close()
            hint = " (start one with `ray start --head`)" if self.address == "auto" else ""
            raise UsageError(f"--cluster {self.address}: cannot connect to a Ray cluster: {one_line(exc)}{hint}") from exc

    def _start_local(self, count: int) -> None:
        """A head with no CPUs (it runs no worker set) and ``count`` nodes sharing this machine's cores and memory."""
        from ray.cluster_utils import Cluster

        _reap_when_gone()
        cores = os.cpu_count() or 1
        memory = int(total_memory_gb() * 2**30 * 0.9 / count)
        self.local = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
        for _ in range(count):
            self.add_local_node(num_cpus=max(1, cores // count), memory=memory)

    def add_local_node(self, **node_args: Any) -> Any:
        """Start one more node of a ``local:N`` cluster (tests use it to add and remove nodes)."""
        if self.local is None:
            raise UsageError("only a local:N cluster can add nodes from memo")
        node = self.local.add_node(**node_args)
        self.local_nodes.append(node)
        return node

    def nodes(self) -> list[NodeInfo]:
        """The live nodes with CPUs, as Ray lists them now."""
        found = []
        for entry in self.ray.nodes():
            resources = entry.get("Resources") or {}
            if not entry.get("Alive") or resources.get("CPU", 0) <= 0:
                continue
            found.append(NodeInfo(node_id=entry["NodeID"],
                                  host=str(entry.get("NodeManagerHostname") or entry.get("NodeManagerAddress")),
                                  cpus=float(resources["CPU"]), memory_gb=float(resources.get("memory", 0)) / 2**30))
        return found

    def close(self) -> None:
        """Disconnect; a ``local:N`` cluster is shut down."""
        try:
            if self.ray.is_initialized():
                self.ray.shutdown()
        except Exception:  # disconnecting from a cluster that went away
            pass
        if self.local is not None:
            try:
                self.local.shutdown()
            except Exception:  # nodes already gone
                pass
            self.local = None
