"""A closed executor's workers are retired: a request still on its way (a converter's next model in a thread that
outlived the campaign) is answered at once, instead of starting the library again and keeping memo from exiting
for its start-up (seen at the end of a 3-minute campaign: 19 s between the summary line and the exit)."""
from __future__ import annotations

import time
from pathlib import Path

from memo.backends.supervisor import WorkerCommand, WorkerProcess

PLUGIN = Path(__file__).resolve().parents[1] / "plugins" / "numpy_echo.py"


def test_a_retired_worker_is_not_started_again(tmp_path: Path) -> None:
    worker = WorkerProcess(WorkerCommand(group="echo", args=["--plugin", str(PLUGIN)]), tmp_path / "logs")
    worker.retire()
    began = time.monotonic()
    reply = worker.request({"op": "run", "backend": "numpy-echo"}, 5.0)
    assert time.monotonic() - began < 1.0
    assert worker.starts == 0 and not worker.alive
    assert [(stage.stage, stage.status) for stage in reply.stages] == [("start", "skipped")]
    assert "closed" in reply.stages[0].message


def test_the_request_bound_is_a_share_of_memory_never_below_recycling_and_can_be_set(monkeypatch) -> None:
    import psutil
    import pytest

    from memo.backends.supervisor import request_memory_bound
    from memo.defaults import WORKER_MEMORY_SHARE, WORKER_MEMORY_VARIABLE
    from memo.errors import UsageError

    monkeypatch.delenv(WORKER_MEMORY_VARIABLE, raising=False)
    share = int(psutil.virtual_memory().total / 2**20 * WORKER_MEMORY_SHARE)
    assert request_memory_bound(100) == max(100, share)
    assert request_memory_bound(share + 1) == share + 1
    monkeypatch.setenv(WORKER_MEMORY_VARIABLE, "1234")
    assert request_memory_bound(3000) == 1234
    monkeypatch.setenv(WORKER_MEMORY_VARIABLE, "lots")
    with pytest.raises(UsageError, match=WORKER_MEMORY_VARIABLE):
        request_memory_bound(3000)
