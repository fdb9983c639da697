"""The head's side of a cluster campaign: an :class:`memo.backends.executor.Executor` whose worker sets live on
the cluster's nodes.

Every live node with CPUs gets one :class:`memo.cluster.node.NodeRunner` actor (``num_cpus=0``: memo accounts
for cores itself, from the node's resources, by the local campaign's rule) pinned to it. A model takes a free
slot of some node; its artifact goes as bytes, and the result and the files the run wrote come back into the
head's artifact folder, so the oracle, the store and triage see exactly what a local run leaves.

Faults: a node that dies or leaves (its actor unreachable) loses nothing: the models it was running go to
another node, once; a model during which two nodes were lost is itself a finding (a crash of the reference at
stage ``node``). A node that joins gets an actor and takes work within seconds. With no node at all for
:data:`NO_NODE_GRACE_S`, :class:`ClusterLost` stops the campaign cleanly (``--resume`` continues it).
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection, Mapping, Sequence

from memo.artifact import Artifact
from memo.artifact_files import BASE_FILES
from memo.backends import CONVERTERS, REFERENCE, load_spec
from memo.backends.cuda import STRICT
from memo.backends.executor import ExecutionAbandoned, backend_selection
from memo.backends.result import BackendResult, ExecutionResult, StageResult
from memo.cluster import CLUSTER_LOST
from memo.cluster.connect import ClusterSession, NodeInfo
from memo.cluster.node import NodeRunner, node_capacity, pack_files, unpack_files
from memo.errors import UsageError, one_line
from memo.json_types import JsonObject

NO_NODE_GRACE_S = 120.0  # with no node for this long, the campaign stops (and --resume continues it)
READY_TIMEOUT_S = 300.0  # the first node's actor must answer within this
POLL_S = 2.0  # how often the node list is read (joins, departures)
REJOIN_AFTER_S = 10.0  # a live node whose actor was lost gets a new one after this
RETRY_START_AFTER_S = 120.0  # ... and one where memo's workers could not start, after this
COULD_NOT_START = "could not start"
NODE_STAGE = "node"  # the stage of a model whose nodes were lost under it


class ClusterLost(ExecutionAbandoned):
    """No node has been available for :data:`NO_NODE_GRACE_S`: the campaign stops cleanly."""

    stop_campaign = True


@dataclass
class Node:
    info: NodeInfo
    actor: Any
    sets: int
    slots: int
    ready: bool = False
    lost: str | None = None
    executed: int = 0
    in_flight: int = 0
    rerun: int = 0  # models this node ran again after another node was lost under them
    started_at: float = field(default_factory=time.monotonic)
    description: JsonObject = field(default_factory=dict)
    lost_before: str | None = None  # why this node's previous actor was lost, while its new one starts

    def state(self) -> str:
        """``ready``, ``starting``, or ``lost: why``: a node whose new actor has not started yet is still lost."""
        if self.lost:
            return f"lost: {self.lost}"
        if self.ready:
            return "ready"
        return f"lost: {self.lost_before} (a new actor is starting)" if self.lost_before else "starting"

    def retry_after_s(self) -> float:
        """How long a lost node that Ray still lists waits before it gets a new actor."""
        return RETRY_START_AFTER_S if (self.lost or "").startswith(COULD_NOT_START) else REJOIN_AFTER_S

    def status(self) -> JsonObject:
        return {"node": self.info.node_id[:12], "host": self.info.host, "cpus": self.info.cpus,
                "memory_gb": round(self.info.memory_gb, 1), "worker_sets": self.sets, "slots": self.slots,
                "executed": self.executed, "in_flight": self.in_flight, "rerun": self.rerun,
                "state": self.state()}


class ClusterExecutor:
    """Runs artifacts on the cluster's nodes; ``run`` may be called from several threads at once."""

    def __init__(self, session: ClusterSession, *, backends: Sequence[str] | None = None,
                 plugins: Sequence[Path] = (), timeout_s: float = 30.0, safe_mode: bool = True,
                 stopping: Callable[[], bool] = lambda: False, reference: str | None = None,
                 gpu_precision: str = STRICT) -> None:
        names, infos = backend_selection(backends, plugins)
        self._names = [*names, *(info.name for info in infos)]
        self.reference = reference or (REFERENCE if REFERENCE in self._names else self._names[0])
        if self.reference not in self._names:
            raise UsageError(f"reference {self.reference!r} is not one of the selected backends")
        self._gpu_precision = gpu_precision
        self.session = session
        self.ray = session.ray
        self._backends = list(backends) if backends is not None else None
        self._plugins = {Path(p).name: Path(p).read_bytes() for p in plugins}
        self.timeout_s = timeout_s
        self._safe_mode = safe_mode
        self._stopping = stopping
        self._call_timeout_s = 10 * timeout_s + 300.0  # the node's own supervisor enforces the per-model limits
        self._nodes: dict[str, Node] = {}
        self._slots: queue.Queue[str] = queue.Queue()  # a node id per free slot
        self._lock = threading.RLock()
        self._closed = threading.Event()
        self._no_node_since: float | None = None
        self.refresh()
        self._wait_ready()
        self._monitor = threading.Thread(target=self._watch, name="memo-cluster-monitor", daemon=True)
        self._monitor.start()

    # ------------------------------------------------------------------ what the campaign reads
    @property
    def backend_names(self) -> list[str]:
        return list(self._names)

    def versions(self) -> dict[str, dict[str, str]]:
        """The first ready node's versions (every node should run the same install)."""
        with self._lock:
            for node in self._nodes.values():
                if node.ready and node.description.get("versions"):
                    return dict(node.description["versions"])
        return {}

    def slots(self) -> int:
        """Models the ready nodes run at once."""
        with self._lock:
            return sum(node.slots for node in self._nodes.values() if node.ready and not node.lost)

    def status(self) -> JsonObject:
        """The address, and one row per node this campaign used: host, worker sets, slots, executed, state."""
        with self._lock:
            return {"address": self.session.address, "nodes": [node.status() for node in self._nodes.values()]}

    # ------------------------------------------------------------------ nodes
    def refresh(self) -> None:
        """Start an actor on every live node that has none; forget nodes that left."""
        try:
            live = {info.node_id: info for info in self.session.nodes()}
        except Exception:  # the head lost its cluster connection for a moment: try again next poll
            return
        with self._lock:
            for node_id, node in self._nodes.items():
                if node_id not in live and not node.lost:
                    self._lose(node, "left the cluster")
            for node_id, info in live.items():
                known = self._nodes.get(node_id)
                if known is None or (known.lost and time.monotonic() - known.started_at > known.retry_after_s()):
                    self._start_node(info, previous=known)
            pending = [node for node in self._nodes.values() if not node.ready and not node.lost]
        for node in pending:
            self._check_ready(node)
        with self._lock:
            alive = any(node.ready and not node.lost for node in self._nodes.values())
            self._no_node_since = None if alive else (self._no_node_since or time.monotonic())

    def _start_node(self, info: NodeInfo, previous: Node | None) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        sets, slots = node_capacity(info.cpus, info.memory_gb)
        actor = self.ray.remote(NodeRunner).options(
            num_cpus=0, max_concurrency=slots + 4, max_restarts=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(info.node_id, soft=False),
        ).remote(self._backends, self._plugins, self.timeout_s, self._safe_mode, info.cpus, info.memory_gb,
                 self.reference, self._gpu_precision)
        node = Node(info=info, actor=actor, sets=sets, slots=slots)
        if previous is not None:  # a node that came back: its counts go on
            node.executed, node.rerun = previous.executed, previous.rerun
            node.lost_before = previous.lost or previous.lost_before
        node.description = {"pending": actor.describe.remote()}
        self._nodes[info.node_id] = node

    def _check_ready(self, node: Node, timeout_s: float = 0.0) -> None:
        pending = node.description.get("pending")
        if pending is None:
            return
        done, _ = self.ray.wait([pending], timeout=timeout_s)
        if not done:
            return
        try:
            description = self.ray.get(pending)
        except Exception as exc:  # the actor could not start there (missing install, no memory)
            with self._lock:
                node.description = {}
                self._lose(node, f"{COULD_NOT_START}: {one_line(exc)}")
            return
        with self._lock:
            node.description = description
            node.sets, node.slots = int(description["sets"]), int(description["slots"])
            node.ready = True
            for _ in range(node.slots):
                self._slots.put(node.info.node_id)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            with self._lock:
                nodes = list(self._nodes.values())
                if any(node.ready for node in nodes):
                    return
                problems = [f"{node.info.host}: {node.lost}" for node in nodes if node.lost]
            if nodes and all(node.lost for node in nodes):
                self.close()
                raise UsageError(f"--cluster {self.session.address}: no node could start memo's workers "
                                 f"({'; '.join(problems)})")
            for node in nodes:
                self._check_ready(node, timeout_s=1.0)
            if not nodes:
                time.sleep(POLL_S)
                self.refresh()
        self.close()
        raise UsageError(f"--cluster {self.session.address}: no node with CPUs became ready in "
                         f"{READY_TIMEOUT_S:.0f} s")

    def _watch(self) -> None:
        while not self._closed.wait(POLL_S):
            self.refresh()

    def _lose(self, node: Node, reason: str) -> None:
        """Take ``node`` out of service (its free slots are dropped as they come up) and end its actor."""
        with self._lock:
            if node.lost:
                return
            node.lost = reason
            node.started_at = time.monotonic()
        try:
            self.ray.kill(node.actor, no_restart=True)
        except Exception:  # the actor or its node is gone already
            pass

    # ------------------------------------------------------------------ one model
    def run(self, artifact: Artifact, backends: Collection[str] | None = None,
            skip: Mapping[str, str] | None = None, library: bool = False) -> ExecutionResult:
        # ``library`` is ignored: the nodes do not measure library coverage (docs/coverage.md)
        selected = set(self._names if backends is None else backends)
        unknown = selected - set(self._names)
        if unknown:
            raise UsageError(f"backend {sorted(unknown)[0]!r} is not one this executor runs")
        files = pack_files(artifact.directory, BASE_FILES)
        wanted = sorted(backends) if backends is not None else None
        losses: list[str] = []
        while True:
            node = self._take_slot()
            try:
                call = node.actor.run.remote(artifact.directory.name, files, wanted, dict(skip or {}))
                result_json, written = self.ray.get(call, timeout=self._call_timeout_s)
            except self.ray.exceptions.RayTaskError:
                self._give_back(node)
                raise  # a defect of memo's own code on the node: the pipeline records it
            except Exception as exc:  # the node or its actor is gone (or wedged past the time limit)
                self._lose(node, one_line(exc)[:300])
                self._give_back(node)
                if self._stopping() or self._closed.is_set():
                    raise ExecutionAbandoned("the campaign stopped while the model ran") from exc
                losses.append(f"{node.info.host} ({type(exc).__name__})")
                if len(losses) >= 2:
                    return self._lost_twice(artifact, losses, selected)
                continue
            with self._lock:
                node.executed += 1
                node.rerun += bool(losses)
            self._give_back(node)
            return bring_back(artifact, result_json, written)

    def _take_slot(self) -> Node:
        while True:
            if self._closed.is_set() or self._stopping():
                raise ExecutionAbandoned("the campaign is stopping")
            try:
                node_id = self._slots.get(timeout=0.5)
            except queue.Empty:
                with self._lock:
                    since = self._no_node_since
                if since is not None and time.monotonic() - since > NO_NODE_GRACE_S:
                    raise ClusterLost(f"{CLUSTER_LOST}: no node for {NO_NODE_GRACE_S:.0f} s")
                continue
            with self._lock:
                node = self._nodes.get(node_id)
                if node is None or node.lost or not node.ready:
                    continue  # the slot of a node that is gone
                node.in_flight += 1
                return node

    def _give_back(self, node: Node) -> None:
        with self._lock:
            node.in_flight -= 1
            if not node.lost and self._nodes.get(node.info.node_id) is node:
                self._slots.put(node.info.node_id)

    def _lost_twice(self, artifact: Artifact, losses: list[str], selected: set[str]) -> ExecutionResult:
        """A model during which two nodes were lost: a finding in itself (reported as the reference crashing
        at stage ``node``), not run a third time."""
        message = f"the cluster node running this model was lost twice: {'; '.join(losses)}"
        ir = artifact.read_ir()
        result = ExecutionResult(artifact_dir=str(artifact.directory), reference=self.reference,
                                 output_names=list(ir.outputs))
        for name in sorted(selected | {self.reference}):
            status = "crash" if name == self.reference else "skipped"
            text = message if name == self.reference else f"not run: {message}"
            result.backends[name] = BackendResult(name=name, consumes="keras", stages=[
                StageResult(stage=NODE_STAGE, status=status, message=text)])
        return result

    # ------------------------------------------------------------------ end
    def close(self) -> None:
        """Stop every node's workers, end the actors, disconnect (a ``local:N`` cluster is shut down)."""
        if self._closed.is_set():
            return
        self._closed.set()
        with self._lock:
            nodes = [node for node in self._nodes.values() if not node.lost]
        try:
            closing = {node.actor.close.remote(): node for node in nodes}
            done, _ = self.ray.wait(list(closing), num_returns=len(closing), timeout=10.0) if closing else ([], [])
        except Exception:  # nodes already gone: their workers went with them
            closing, done = {}, []
        self._lose_silent({ref: node for ref, node in closing.items() if node.ready}, set(done))
        for node in nodes:
            try:
                self.ray.kill(node.actor, no_restart=True)
            except Exception:
                pass
        self.session.close()

    def _lose_silent(self, closing: Mapping[Any, Node], done: set[Any]) -> None:
        """Mark lost the ready nodes whose actors did not close: a node removed after its last model, which Ray
        had not yet declared dead, would otherwise stand in the report as ready."""
        for ref, node in closing.items():
            answered = ref in done
            if answered:
                try:
                    self.ray.get(ref)
                except Exception:
                    answered = False
            if not answered:
                with self._lock:
                    node.lost = node.lost or "did not answer when the campaign ended"


def bring_back(artifact: Artifact, result_json: JsonObject, written: Mapping[str, bytes]) -> ExecutionResult:
    """The node's result with the head's paths, and the files the run wrote in the head's artifact folder
    (after deleting what earlier runs of the same members wrote there, as a local run does)."""
    node_dir = str(result_json["artifact_dir"])
    head_dir = str(artifact.directory)
    result = ExecutionResult.from_json({**result_json, "artifact_dir": head_dir})
    for name, backend in result.backends.items():
        if backend.status == "skipped":
            continue
        if name in CONVERTERS:
            artifact.path_for(load_spec(name).produces).unlink(missing_ok=True)
        else:
            artifact.outputs_path(name).unlink(missing_ok=True)
        if backend.outputs_path and backend.outputs_path.startswith(node_dir):
            backend.outputs_path = head_dir + backend.outputs_path[len(node_dir):]
    unpack_files(artifact.directory, written)
    return result
