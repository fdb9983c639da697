"""A worker that passes its request bound inside one model is stopped there (long150f: one worker reached 12.1 GB in
the final pass and left the machine 2.4 GB): the model is recorded as skipped on that backend, with the reason, and
the next model gets a fresh worker. A real worker process, with a plugin that holds the memory it is told to."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from memo.backends.supervisor import MEMORY_BOUND, WorkerCommand, WorkerProcess

pytestmark = pytest.mark.integration

PLUGIN = Path(__file__).resolve().parents[1] / "plugins" / "memory_hog.py"
BOUND_MB = 400


def request(tmp_path: Path, hundreds_mb: int) -> dict[str, object]:
    inputs = tmp_path / f"inputs{hundreds_mb}.npz"
    np.savez(inputs, x=np.full((1, 2), hundreds_mb, np.float32))
    return {"op": "run", "backend": "memory-hog", "model": str(inputs), "inputs": str(inputs),
            "input_names": ["x"], "out": str(tmp_path / "out.npz")}


def test_a_worker_above_its_bound_inside_a_model_is_stopped_and_the_next_model_runs(tmp_path: Path) -> None:
    worker = WorkerProcess(WorkerCommand(group="hog", args=["--plugin", str(PLUGIN)]), tmp_path / "logs",
                           max_rss_mb=BOUND_MB, memory_bound_mb=BOUND_MB)
    try:
        began = time.monotonic()
        over = worker.request(request(tmp_path, 8), 30.0)  # 800 MB, held for 5 s
        stopped_after = time.monotonic() - began
        assert not worker.alive
        within = worker.request(request(tmp_path, 1), 30.0)  # 100 MB: a fresh worker, below the bound
    finally:
        worker.stop()
    failure = over.stages[-1]
    assert (failure.status, failure.exc_type) == ("skipped", MEMORY_BOUND)
    assert f"bound of {BOUND_MB} MB" in failure.message
    assert stopped_after < 5.0  # stopped while it held the memory, not after the model
    assert within.stages[-1].status == "ok" and worker.starts == 2
