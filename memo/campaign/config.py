"""A campaign's settings, stored in its database so that ``--resume`` continues with the same ones."""
from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any
from pathlib import Path

import psutil

from memo.defaults import (DEFAULT_DIRECTED_SHARE, DEFAULT_MAX_PARENT_COST, DEFAULT_MAX_PARENT_LAYERS,
                           DEFAULT_MAX_PARENT_RECURRENT, DEFAULT_TIMEOUT_S, DEFAULT_TRAIN_BUDGET, DEFAULT_TRAIN_SHARE,
                           LIBRARY_TRACE_EVERY)
from memo.errors import UsageError
from memo.json_types import JsonObject

# Pipelines sharing one set of warm workers: while one model converts, others run on the Keras backends.
# A set costs about 8 GB; memory allows one set per WORKER_SET_MEMORY_GB. tf2onnx (trace, freeze, two
# conversions) is the slowest library per model, so a set shared by several pipelines runs two tf2onnx
# workers where memory allows: they keep the cores busier for a few GB more (docs/benchmarks.md, "Campaign").
PIPELINES_PER_WORKER_SET = 3
WORKER_SET_MEMORY_GB = 12
SHARED_SET_REPLICAS = {"tf2onnx": 2}
REPLICA_MEMORY_GB = 16

# Artifacts kept per bug signature, and the default budget for a campaign's mutants/NAME folder
# (memo.campaign.disk keeps the rest of its logic; these are here because the configuration stores them).
KEEP_PER_SIGNATURE = 2
LIBRARY_COVERAGE_MODES: tuple[str, ...] = ("", "measure", "feedback")  # CampaignConfig.library_coverage
DEFAULT_MAX_DISK = 2 * 2**30


@dataclass
class Budget:
    """When to stop: after ``seconds`` of fuzzing or ``iterations`` mutants, whichever comes first."""

    seconds: float | None = None
    iterations: int | None = None

    def __post_init__(self) -> None:
        if self.seconds is None and self.iterations is None:
            raise UsageError("give a budget: --hours, --minutes or --iterations")
        if (self.seconds is not None and self.seconds <= 0) or (self.iterations is not None and self.iterations <= 0):
            raise UsageError("the budget must be positive")

    def exhausted(self, elapsed: float, iterations: int) -> bool:
        return ((self.seconds is not None and elapsed >= self.seconds)
                or (self.iterations is not None and iterations >= self.iterations))

    def remaining(self, elapsed: float) -> float | None:
        return None if self.seconds is None else max(0.0, self.seconds - elapsed)


@dataclass
class CampaignConfig:
    name: str
    seed: int = 0
    budget: Budget = field(default_factory=lambda: Budget(iterations=100))
    backends: list[str] | None = None          # None: every default backend
    plugins: list[str] = field(default_factory=list)
    seeds_dir: str = "seeds"
    search: str = "mh"
    operators: list[str] | None = None          # None: MEMO's seven operators plus memo's own
    execute_all: bool = False
    execute: bool = True                        # False: generate and measure coverage only (ablations, dry runs)
    jobs: int = 1
    timeout_s: float = DEFAULT_TIMEOUT_S
    safe_mode: bool = True
    reduce_seeds: bool = True
    max_parent_layers: int = DEFAULT_MAX_PARENT_LAYERS  # a larger diverse mutant is not kept as a parent (0: no bound)
    max_parent_cost: int = DEFAULT_MAX_PARENT_COST  # above these estimated multiply-adds, not a parent (0: no bound)
    max_parent_recurrent: int = DEFAULT_MAX_PARENT_RECURRENT  # with more recurrent layers, not a parent (0: no bound)
    triage_budget_s: float = 120.0
    max_disk_bytes: int = DEFAULT_MAX_DISK      # bytes of kept artifacts under mutants/NAME (0: no budget)
    keep_per_signature: int = KEEP_PER_SIGNATURE  # full artifacts kept per bug signature
    feedback_lag: int | None = None  # iterations before an execution feeds generation (None: from --jobs; 0: never)
    directed_share: float = DEFAULT_DIRECTED_SHARE  # mutations made by the directed operator on MH's chosen model
    reference: str | None = None  # the backend the others are compared with (None: keras-tensorflow)
    gpu_precision: str = "strict"  # GPU backends in strict float32, or "tf32" (memo.backends.cuda)
    bugs_db: str | None = None  # the bug database triage records into and adopts known bugs from (None: none)
    # the newest-code interpreter a reproducing bug is rerun with before it is ready ("": none; memo.newest)
    next_python: str = ""
    # --library-coverage: "" (off), "measure" (lines of the libraries' code reached, in the store and the report) or
    # "feedback" (also: a mutant reaching new lines becomes a parent candidate; docs/coverage.md)
    library_coverage: str = ""
    # ... traced on every seed and on one executed mutant in this many (1: all); the extra mutants library feedback
    # executes are always traced (memo.campaign.feedback.library_traced)
    library_every: int = LIBRARY_TRACE_EVERY
    # --train-share: the training check (memo.training, docs/training.md) on this share of the executed models the
    # reference ran (0: none), chosen by artifact name; its findings are stored as verdicts, never fed to generation
    train_share: float = DEFAULT_TRAIN_SHARE  # the training check on this share of executed models (0: none)
    # --train-budget: the checks' seconds at most this share of the inference runs' seconds (memo.training.selection)
    train_budget: float = DEFAULT_TRAIN_BUDGET

    def __post_init__(self) -> None:
        if not 0.0 <= self.train_share <= 1.0:
            raise UsageError(f"--train-share must be a share between 0 and 1 (got {self.train_share:g})")
        if not self.train_budget > 0:
            raise UsageError(f"--train-budget must be a positive share of the inference time (got {self.train_budget:g})")
        if self.library_every < 1:
            raise UsageError(f"--library-coverage-every must be 1 or more (got {self.library_every})")
        if self.library_coverage not in LIBRARY_COVERAGE_MODES:
            raise UsageError(f"--library-coverage must be one of {', '.join(LIBRARY_COVERAGE_MODES[1:])}"
                             f" (got {self.library_coverage!r})")

    def to_json(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_json(cls, data: JsonObject) -> "CampaignConfig":
        data = dict(data)
        data["budget"] = Budget(**data["budget"])
        # stored before the bound existed: such a campaign ran unbounded, and resumes the same way
        data.setdefault("max_parent_layers", 0)
        data.setdefault("max_parent_cost", 0)
        data.setdefault("max_parent_recurrent", 0)
        data.setdefault("feedback_lag", 0)  # stored before execution fed generation: resumes without it
        data.setdefault("directed_share", 0.0)  # stored before the directed share: MH's operator every time
        data.setdefault("library_every", 1)  # stored before tracing was sampled: every model traced
        data.setdefault("train_share", 0.0)  # stored before the training check: resumes without it
        return cls(**data)


def default_name(seed: int) -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-s{seed}"


def total_memory_gb() -> float:
    return psutil.virtual_memory().total / 2**30


def machine_jobs(cores: int, memory_gb: float) -> int:
    """Pipelines for a machine (or a cluster node) with ``cores`` and ``memory_gb``: one per core plus one (a
    pipeline also waits on files and pipes), at most PIPELINES_PER_WORKER_SET per worker set memory allows."""
    worker_sets = max(1, int(memory_gb // WORKER_SET_MEMORY_GB))
    return max(1, min(max(1, cores) + 1, PIPELINES_PER_WORKER_SET * worker_sets))


def default_jobs() -> int:
    """Pipelines for this machine (:func:`machine_jobs`)."""
    return machine_jobs(os.cpu_count() or 1, total_memory_gb())


def worker_replicas(jobs: int, memory_gb: float | None = None) -> dict[str, int] | None:
    """Extra workers for a worker set shared by several pipelines, where memory (this machine's, or
    ``memory_gb``) allows them."""
    shared = min(jobs, PIPELINES_PER_WORKER_SET) > 1
    memory = total_memory_gb() if memory_gb is None else memory_gb
    return SHARED_SET_REPLICAS if shared and memory >= REPLICA_MEMORY_GB else None
