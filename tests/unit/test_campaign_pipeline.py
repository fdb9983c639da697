"""The execution pipelines on a stand-in executor: results stored as they finish (out of order), findings
counted in the campaign state's counters, and what was stored but never executed run again on resume."""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Collection, Iterator, Mapping

import pytest

from memo.artifact import Artifact
from memo.backends.executor import Executor
from memo.backends.result import ExecutionResult
from memo.campaign.config import CampaignConfig
from memo.campaign.disk import DiskBudget
from memo.campaign.feedback import Outcome
from memo.campaign.pipeline import Pipeline
from memo.campaign.progress import Reporter
from memo.campaign.stop import StopFlag
from memo.store import CampaignStore, MutantRecord
from tests.unit.triage_store import crash_result, model


class StandIn:
    """An :class:`Executor` whose every run is an onnxruntime crash, held until the test releases it."""

    def __init__(self) -> None:
        self.release: dict[str, threading.Event] = {}
        self.closed = False

    @property
    def backend_names(self) -> list[str]:
        return ["keras-tensorflow", "onnxruntime"]

    def run(self, artifact: Artifact, backends: Collection[str] | None = None,
            skip: Mapping[str, str] | None = None, library: bool = False) -> ExecutionResult:
        self.release.setdefault(artifact.directory.name, threading.Event()).wait(30)
        return ExecutionResult.from_json(crash_result(f"boom in {artifact.directory.name}"))

    def versions(self) -> dict[str, dict[str, str]]:
        return {}

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CampaignStore]:
    store = CampaignStore(tmp_path / "campaigns" / "p", create=True)
    yield store
    store.close()


def _pipeline(store: CampaignStore, root: Path, executor: Executor, jobs: int) -> tuple[Pipeline, dict[str, int]]:
    config = CampaignConfig(name="p", jobs=jobs)
    disk = DiskBudget(store, root, limit=0, per_signature=config.keep_per_signature)
    counters = {"executed": 0, "internal_errors": 0}
    pipeline = Pipeline(config, store, disk, StopFlag(), Reporter(), counters, {}, root)
    pipeline.executors.append(executor)
    for _ in range(jobs):
        pipeline.worker_sets.put(executor)
    return pipeline, counters


def _stored(store: CampaignStore, iteration: int) -> int:
    return store.add_mutant(MutantRecord(iteration, "s", "NLA", "seed:s", "s", {}, model("Dense").dumps(), True,
                                         diverse=True))


def test_executions_are_stored_as_they_finish_and_counted(store: CampaignStore, tmp_path: Path) -> None:
    executor = StandIn()
    pipeline, counters = _pipeline(store, tmp_path / "mutants" / "p", executor, jobs=2)
    try:
        first, second = _stored(store, 0), _stored(store, 1)
        for mutant_id in (first, second):
            pipeline.submit(mutant_id, f"m{mutant_id}", model("Dense"))
        executor.release.setdefault(str(second), threading.Event()).set()
        pipeline.in_flight[1].future.result(timeout=60)
        pipeline.collect()
        assert [row.mutant_id for row in store.executions()] == [second], "the slow first one holds up nothing"
        executor.release.setdefault(str(first), threading.Event()).set()
        pipeline.drain()
    finally:
        pipeline.cancel()
        pipeline.close()
    assert executor.closed and not pipeline.in_flight
    assert sorted(row.mutant_id for row in store.executions()) == [first, second]
    assert counters == {"executed": 2, "internal_errors": 0}
    assert pipeline.findings == {"crash:onnxruntime": 2}


def test_resume_resubmits_what_was_stored_but_never_executed(store: CampaignStore, tmp_path: Path) -> None:
    executor = StandIn()
    pipeline, _ = _pipeline(store, tmp_path / "mutants" / "p", executor, jobs=1)
    try:
        pending = [_stored(store, iteration) for iteration in range(3)]
        for mutant_id in pending:
            executor.release.setdefault(str(mutant_id), threading.Event()).set()
        pipeline.resubmit_unexecuted()
        assert [(e.mutant_id, e.ident) for e in pipeline.in_flight] == list(zip(pending, ["m0", "m1", "m2"]))
        pipeline.drain()
    finally:
        pipeline.cancel()
        pipeline.close()
    assert store.unexecuted_mutants(execute_all=False) == []


class SameCrash(StandIn):
    """Every model: onnxruntime raises the same error, and the reference library ran it."""

    def run(self, artifact: Artifact, backends: Collection[str] | None = None,
            skip: Mapping[str, str] | None = None, library: bool = False) -> ExecutionResult:
        data = crash_result("Loop node has no body")
        data["backends"]["keras-tensorflow"] = {"name": "keras-tensorflow", "consumes": "keras", "role": "backend",
                                                "stages": [{"stage": "execute", "status": "ok"}]}
        return ExecutionResult.from_json(data)


def _two_outcomes(store: CampaignStore, root: Path, executor: Executor) -> tuple[int, Outcome | None, Outcome | None]:
    """Run two stored mutants one after the other: (the second's id, both outcomes)."""
    pipeline, _ = _pipeline(store, root, executor, jobs=1)
    try:
        first, second = _stored(store, 0), _stored(store, 1)
        for mutant_id in (first, second):
            pipeline.submit(mutant_id, f"m{mutant_id}", model("Dense"))
        one, two = pipeline.outcome(first), pipeline.outcome(second)
    finally:
        pipeline.cancel()
        pipeline.close()
    return second, one, two


def test_outcomes_say_whether_the_reference_ran_and_which_bugs_were_known(store: CampaignStore,
                                                                          tmp_path: Path) -> None:
    root = tmp_path / "mutants" / "p"
    second, one, two = _two_outcomes(store, root, SameCrash())
    assert one is not None and two is not None
    assert one.reference_ran and two.reference_ran
    assert len(one.signatures) == 1 and one.signatures == two.signatures
    assert not one.known and two.known == two.signatures, "the second model re-found the first one's bug"
    disk = DiskBudget(store, root, limit=0)
    disk.load()
    resumed = Pipeline(CampaignConfig(name="p"), store, disk, StopFlag(), Reporter(), {}, {}, root)
    assert resumed.outcome(second) == two, "after a resume the outcome comes from the store"


class SameDecline(StandIn):
    """Every model: tf2onnx declines one op (its ONNX backend is skipped), and the reference ran it."""

    def run(self, artifact: Artifact, backends: Collection[str] | None = None,
            skip: Mapping[str, str] | None = None, library: bool = False) -> ExecutionResult:
        return ExecutionResult.from_json({
            "artifact_dir": str(artifact.directory), "reference": "keras-tensorflow", "output_names": ["out"],
            "backends": {
                "keras-tensorflow": {"name": "keras-tensorflow", "consumes": "keras", "role": "backend",
                                     "stages": [{"stage": "execute", "status": "ok"}]},
                "tf2onnx": {"name": "tf2onnx", "consumes": "keras", "role": "converter",
                            "stages": [{"stage": "convert", "status": "unsupported", "exc_type": "UnconvertedOps",
                                        "message": "tf2onnx has no handler for op Erfc (node 'm/dense/Gelu/Erfc')"}]},
                "onnxruntime": {"name": "onnxruntime", "consumes": "onnx", "role": "backend",
                                "stages": [{"stage": "convert", "status": "skipped", "message": "no onnx file"}]}}})


def test_a_feature_a_converter_declined_before_is_a_known_outcome(store: CampaignStore, tmp_path: Path) -> None:
    _, one, two = _two_outcomes(store, tmp_path / "mutants" / "p", SameDecline())
    assert one is not None and two is not None and one.reference_ran
    assert len(one.signatures) == 1 and not one.known
    assert two.known == one.signatures, "a descendant with Erfc would be unconvertible too"


def test_a_bounded_drain_stores_what_finishes_and_leaves_the_rest_to_resume(store: CampaignStore,
                                                                           tmp_path: Path) -> None:
    executor = StandIn()
    pipeline, counters = _pipeline(store, tmp_path / "mutants" / "p", executor, jobs=2)
    try:
        quick, held = _stored(store, 0), _stored(store, 1)
        executor.release.setdefault(str(quick), threading.Event()).set()
        for mutant_id in (quick, held):
            pipeline.submit(mutant_id, f"m{mutant_id}", model("Dense"))
        began = time.monotonic()
        pipeline.drain(until=began + 1.0)
        waited = time.monotonic() - began
    finally:
        pipeline.cancel()
        executor.release.setdefault(str(held), threading.Event()).set()
        pipeline.close()
    assert 0.9 <= waited < 5.0, f"the drain waited {waited:.1f} s for a 1 s bound"
    assert [row.mutant_id for row in store.executions()] == [quick]
    assert [e.mutant_id for e in pipeline.in_flight] == [held] and counters["executed"] == 1
    assert [m.id for m in store.unexecuted_mutants(execute_all=False)] == [held], "--resume runs it"


def test_generation_waits_for_no_outcome_past_the_end_of_its_fuzzing_time(store: CampaignStore,
                                                                          tmp_path: Path) -> None:
    executor = StandIn()
    pipeline, _ = _pipeline(store, tmp_path / "mutants" / "p", executor, jobs=1)
    pipeline.fuzzing_ends = time.monotonic() + 0.5
    try:
        held = _stored(store, 0)
        pipeline.submit(held, f"m{held}", model("Dense"))
        began = time.monotonic()
        assert pipeline.outcome(held) is None, "the campaign's fuzzing is over: the step is not taken"
        pipeline.collect(limit=1)  # one in flight, the limit reached: it returns all the same
        waited = time.monotonic() - began
    finally:
        pipeline.cancel()
        executor.release.setdefault(str(held), threading.Event()).set()
        pipeline.close()
    assert waited < 5.0, f"generation waited {waited:.1f} s for a model past its fuzzing time"
