"""Library coverage through the execution pipelines on a stand-in executor: the lines go to the store's library
tables (not into the stored result), and with feedback a mutant's new lines are decided in the order generation
takes the outcomes, whichever execution finished first."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Collection, Iterator, Mapping

import pytest

from memo.artifact import Artifact
from memo.backends.result import BackendResult, ExecutionResult, LibraryLines, StageResult
from memo.campaign.config import CampaignConfig
from memo.campaign.disk import DiskBudget
from memo.campaign.pipeline import Pipeline
from memo.campaign.progress import Reporter
from memo.campaign.stop import StopFlag
from memo.store import CampaignStore, MutantRecord
from tests.unit.triage_store import model

# what each model (by its folder's name: the mutant id) reaches in tf2onnx
LINES = {"1": {"tf2onnx/tfonnx.py": [1, 2]}, "2": {"tf2onnx/tfonnx.py": [2, 3], "tf2onnx/handler.py": [9]}}


class Reaching:
    """An :class:`Executor` whose runs all pass and reach :data:`LINES`; a run waits until the test releases it."""

    def __init__(self) -> None:
        self.release = {name: threading.Event() for name in LINES}

    @property
    def backend_names(self) -> list[str]:
        return ["keras-tensorflow"]

    def run(self, artifact: Artifact, backends: Collection[str] | None = None,
            skip: Mapping[str, str] | None = None, library: bool = False) -> ExecutionResult:
        name = artifact.directory.name
        self.release[name].wait(30)
        reference = BackendResult("keras-tensorflow", "keras", stages=[StageResult("execute", "ok")])
        converter = BackendResult("tf2onnx", "keras", "converter", [StageResult("convert", "ok")],
                                  library={"tf2onnx": LibraryLines(100, LINES[name])})
        return ExecutionResult(str(artifact.directory), "keras-tensorflow",
                               backends={"keras-tensorflow": reference, "tf2onnx": converter})

    def versions(self) -> dict[str, dict[str, str]]:
        return {}

    def close(self) -> None:
        pass


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CampaignStore]:
    store = CampaignStore(tmp_path / "campaigns" / "p", create=True)
    yield store
    store.close()


def test_new_library_lines_follow_the_order_outcomes_are_taken(store: CampaignStore, tmp_path: Path) -> None:
    root = tmp_path / "mutants" / "p"
    config = CampaignConfig(name="p", jobs=2, library_coverage="feedback")
    pipeline = Pipeline(config, store, DiskBudget(store, root, limit=0), StopFlag(), Reporter(),
                        {"executed": 0, "internal_errors": 0}, {}, root)
    executor = Reaching()
    pipeline.executors.append(executor)
    for _ in range(2):
        pipeline.worker_sets.put(executor)
    try:
        ids = [store.add_mutant(MutantRecord(i, "s", "NLA", "seed:s", "s", {}, model("Dense").dumps(), True,
                                             diverse=True)) for i in range(2)]
        assert [str(i) for i in ids] == list(LINES)
        for mutant_id in ids:
            pipeline.submit(mutant_id, f"m{mutant_id}", model("Dense"))
        executor.release["2"].set()  # the second model finishes first
        pipeline.in_flight[1].future.result(timeout=60)
        pipeline.collect()
        executor.release["1"].set()
        first, second = pipeline.outcome(ids[0]), pipeline.outcome(ids[1])
    finally:
        pipeline.cancel()
        pipeline.close()
    assert first is not None and second is not None
    assert (first.library_new, second.library_new) == (2, 2), "the first taken has lines 1-2, the second 3 and 9"
    stored = {(row[1], row[2]) for row in store.library.lines()}
    assert stored == {("tf2onnx/tfonnx.py", 1), ("tf2onnx/tfonnx.py", 2), ("tf2onnx/tfonnx.py", 3),
                      ("tf2onnx/handler.py", 9)}
    assert [(c.library, c.covered, c.total) for c in store.library.counts()] == [("tf2onnx", 4, 100)]
    row = store.execution(ids[0])
    assert row is not None and "library" not in row.result["backends"]["tf2onnx"], "the store's result has no lines"
