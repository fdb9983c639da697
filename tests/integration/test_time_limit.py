"""What the per-model time limit counts, on a real worker process (a plugin without a DL library): not the
worker's start-up, and twice the limit for a backend's first model since its worker started."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memo.backends.supervisor import WorkerCommand, WorkerProcess

pytestmark = pytest.mark.integration

PLUGIN = Path(__file__).resolve().parents[1] / "plugins" / "slow_model.py"
LIMIT_S = 2.0
SLOW_S = 3.0  # longer than the limit, shorter than twice the limit


def test_start_up_is_not_counted_and_only_a_first_model_gets_the_grace(tmp_path: Path) -> None:
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, x=np.ones((1, 2), np.float32))
    worker = WorkerProcess(WorkerCommand(group="slow", args=["--plugin", str(PLUGIN)],
                                         env={"MEMO_TEST_SLOW_S": str(SLOW_S)}), tmp_path / "logs")
    request = {"op": "run", "backend": "slow-model", "model": str(inputs), "inputs": str(inputs),
               "input_names": ["x"], "out": str(tmp_path / "out.npz")}
    try:
        # the worker starts for this request (SLOW_S of start-up), then its first model takes SLOW_S: within 2x
        statuses = [worker.request(request, LIMIT_S).stages[-1].status]
        assert worker.starts == 1
        statuses.append(worker.request(request, LIMIT_S).stages[-1].status)  # the same worker's second model
        statuses.append(worker.request(request, LIMIT_S).stages[-1].status)  # a fresh worker's first model again
        assert worker.starts == 2
    finally:
        worker.stop()
    assert statuses == ["ok", "hang", "ok"]
