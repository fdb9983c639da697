"""What runs on a cluster node: one actor owning that node's warm worker sets.

:class:`NodeRunner` is a plain class; the head turns it into a Ray actor (:mod:`memo.cluster.executor`), so
this module imports no Ray and can be tested without it. An artifact arrives as bytes (no shared file system
is assumed), is written to a node-local folder named like the head's (a sampled backend's choice depends on
that name), runs on one of the node's :class:`DifferentialExecutor` sets exactly as it would on the head,
and everything the run wrote (outputs, converted models) goes back as bytes with the result.
"""
from __future__ import annotations

import os
import queue
import shutil
import socket
import tempfile
import uuid
from pathlib import Path
from typing import Mapping, Sequence

from memo.artifact import artifact_in
from memo.artifact_files import BASE_FILES
from memo.backends.executor import DifferentialExecutor
from memo.campaign.config import PIPELINES_PER_WORKER_SET, WORKER_SET_MEMORY_GB, machine_jobs, worker_replicas
from memo.json_types import JsonObject

Files = dict[str, bytes]


def node_capacity(cpus: float, memory_gb: float) -> tuple[int, int]:
    """(worker sets, models at once) for a node with ``cpus`` cores and ``memory_gb`` for memo: the local
    campaign's rule (:func:`memo.campaign.config.machine_jobs`), one set per PIPELINES_PER_WORKER_SET slots."""
    slots = machine_jobs(int(cpus), memory_gb)
    sets = min(max(1, int(memory_gb // WORKER_SET_MEMORY_GB)), -(-slots // PIPELINES_PER_WORKER_SET))
    return sets, slots


def pack_files(directory: Path, names: Sequence[str] | None = None, *, exclude: Sequence[str] = ()) -> Files:
    """``{relative path: bytes}`` of ``names`` in ``directory`` (default: every file under it, but ``exclude``)."""
    directory = Path(directory)
    if names is not None:
        return {name: (directory / name).read_bytes() for name in names if (directory / name).is_file()}
    return {path.relative_to(directory).as_posix(): path.read_bytes() for path in sorted(directory.rglob("*"))
            if path.is_file() and path.relative_to(directory).as_posix() not in exclude}


def unpack_files(directory: Path, files: Mapping[str, bytes]) -> None:
    """Write ``files`` under ``directory``; a name that would leave it is refused."""
    root = Path(directory).resolve()
    for name, data in files.items():
        path = (root / name).resolve()
        if root not in path.parents:
            raise ValueError(f"file name {name!r} leaves the artifact folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


class NodeRunner:
    """The node's worker sets; ``run`` may be called by several threads at once (a threaded actor)."""

    def __init__(self, backends: Sequence[str] | None, plugins: Mapping[str, bytes], timeout_s: float,
                 safe_mode: bool, cpus: float, memory_gb: float, reference: str | None = None,
                 gpu_precision: str = "strict") -> None:
        self.root = Path(tempfile.mkdtemp(prefix="memo-node-"))
        plugin_paths = []
        for name, data in plugins.items():  # the head's plugin files, written here: nodes share no files
            path = self.root / "plugins" / Path(name).name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            plugin_paths.append(path)
        self.sets, self.slots = node_capacity(cpus, memory_gb)
        per_set = -(-self.slots // self.sets)
        self.executors = [DifferentialExecutor(backends=backends, plugins=plugin_paths, timeout_s=timeout_s,
                                               safe_mode=safe_mode, reference=reference,
                                               gpu_precision=gpu_precision,
                                               replicas=worker_replicas(per_set, memory_gb / self.sets))
                          for _ in range(self.sets)]
        self.free: queue.Queue[DifferentialExecutor] = queue.Queue()
        for slot in range(self.slots):
            self.free.put(self.executors[slot % self.sets])

    def describe(self) -> JsonObject:
        """Who this node is and what it runs (the head's progress line and report show it)."""
        executor = self.executors[0]
        return {"host": socket.gethostname(), "pid": os.getpid(), "sets": self.sets, "slots": self.slots,
                "backends": executor.backend_names, "versions": executor.versions()}

    def run(self, name: str, files: Files, backends: Sequence[str] | None,
            skip: Mapping[str, str] | None) -> tuple[JsonObject, Files]:
        """Run the artifact ``files`` (folder ``name`` on the head) on one worker set: (the result as JSON, with
        this node's folder in its paths, and the files the run wrote)."""
        directory = self.root / uuid.uuid4().hex / name
        executor = self.free.get()
        try:
            unpack_files(directory, files)
            artifact = artifact_in(directory)
            result = executor.run(artifact, backends, skip=skip)
            return result.to_json(), pack_files(directory, exclude=BASE_FILES)
        finally:
            self.free.put(executor)
            shutil.rmtree(directory.parent, ignore_errors=True)

    def close(self) -> None:
        for executor in self.executors:
            try:
                executor.close()
            except Exception:  # a worker that died with its node's troubles: nothing to save
                pass
        shutil.rmtree(self.root, ignore_errors=True)
