"""A timed campaign's slot: the budget covers fuzzing and the final phase together (or the final phase gets its own
bound), and a campaign whose models outlast the slot still ends when it ends, leaving them to --resume."""
from __future__ import annotations

import io
import shutil
import threading
import time
from pathlib import Path
from typing import Collection, Mapping

import pytest

from memo.artifact import Artifact
from memo.backends.result import ExecutionResult
from memo.campaign.campaign import Campaign
from memo.campaign.config import Budget, CampaignConfig
from memo.campaign.progress import PlainReporter
from memo.campaign.slot import FINAL_ITERATIONS_S, Slot, split_budget
from memo.store import CampaignStore

REPO = Path(__file__).resolve().parents[2]
SMALL_SEEDS = ("lenet5.json", "lstm_sine_wave.json")
REFERENCE_OK = {"artifact_dir": "gone", "reference": "keras-tensorflow", "output_names": ["out"], "seconds": 1.0,
                "backends": {"keras-tensorflow": {"name": "keras-tensorflow", "consumes": "keras", "role": "backend",
                                                  "stages": [{"stage": "load", "status": "ok"},
                                                             {"stage": "execute", "status": "ok"}]}}}


@pytest.mark.parametrize("slot_s, final_triage_s, expected", [
    (600.0, None, (540.0, 60.0)),          # --minutes 10: fuzzing 9 min, final phase 1 min
    (300.0, None, (270.0, 30.0)),          # --minutes 5, the README's first command
    (6 * 3600.0, None, (6 * 3600.0 - 1200.0, 1200.0)),  # a night: the final phase's share is capped
    (60.0, None, (45.0, 15.0)),            # at least 15 s ...
    (20.0, None, (10.0, 10.0)),            # ... but never more than half
    (600.0, 120.0, (600.0, 120.0)),        # --final-triage: its own bound, after the whole budget
    (600.0, 0.0, (600.0, 0.0)),
    (None, None, (None, FINAL_ITERATIONS_S)),  # --iterations only
    (None, 300.0, (None, 300.0)),
])
def test_the_budget_is_split_between_fuzzing_and_the_final_phase(slot_s, final_triage_s, expected) -> None:
    assert split_budget(slot_s, final_triage_s) == expected


def test_the_slot_ends_by_its_end_even_when_fuzzing_stopped_late() -> None:
    slot = Slot(started=1000.0, fuzzing_s=540.0, final_s=60.0)
    assert slot.fuzzing_ends() == 1540.0 and slot.ends() == 1600.0
    assert not slot.fuzzing_over(1539.9) and slot.fuzzing_over(1540.0)
    assert slot.final_deadline(1540.0) == 1600.0
    assert slot.final_deadline(1570.0) == 1600.0, "a last step that waited for an outcome does not push the end"
    assert slot.final_deadline(1200.0) == 1260.0, "fuzzing ended early (iterations): the final phase's own bound"
    assert slot.closing_s() == 20.0, "a third of the final phase, at most 20 s, closes the workers and writes the report"
    unbounded = Slot(started=1000.0, fuzzing_s=None, final_s=300.0)
    assert unbounded.ends() is None and not unbounded.fuzzing_over(1e9)
    assert unbounded.final_deadline(2000.0) == 2300.0
    plan = slot.plan()
    assert plan["fuzzing_s"] == 540.0 and plan["final_s"] == 60.0 and plan["ends_at"] is not None


class HeldModels:
    """An :class:`Executor` whose every model runs until the executor is closed (a model slower than the slot):
    the reference then ran it, and nothing is a finding."""

    def __init__(self) -> None:
        self.closed = threading.Event()
        self.started = 0

    @property
    def backend_names(self) -> list[str]:
        return ["keras-tensorflow"]

    def run(self, artifact: Artifact, backends: Collection[str] | None = None,
            skip: Mapping[str, str] | None = None, library: bool = False) -> ExecutionResult:
        self.started += 1
        self.closed.wait(120)
        return ExecutionResult.from_json(REFERENCE_OK)

    def versions(self) -> dict[str, dict[str, str]]:
        return {}

    def close(self) -> None:
        self.closed.set()


def test_a_campaign_whose_models_outlast_its_slot_ends_with_the_slot(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # mutants/ and reports/ are relative to the working directory
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for name in SMALL_SEEDS:
        shutil.copy(REPO / "seeds" / name, seeds / name)
    fuzzing_s, final_s = split_budget(8.0, None)
    config = CampaignConfig(name="slot", budget=Budget(seconds=fuzzing_s), triage_budget_s=final_s, jobs=2,
                            seeds_dir=str(seeds))
    log = io.StringIO()
    executor = HeldModels()
    started = time.monotonic()
    campaign = Campaign(tmp_path / "campaigns" / "slot", config, PlainReporter(stream=log, every_s=1.0),
                        executor=executor, started=started)
    summary = campaign.run()
    took = time.monotonic() - started
    assert summary["stopped_because"] == "budget spent"
    assert took < 8.0 + 3.0, f"the slot was 8 s, the campaign took {took:.1f} s"
    assert executor.started >= 1, "models were in flight at the end"
    with CampaignStore(tmp_path / "campaigns" / "slot") as store:
        assert store.unexecuted_mutants(execute_all=False), "the models still running are left to --resume"
    lines = log.getvalue().splitlines()
    assert "fuzzing 4 s, final triage up to 4 s, ends by" in lines[1]
    assert lines[-1].split("] ", 1)[1].startswith("memo: campaign slot budget spent")
    assert any("; final phase: " in line and " models in flight, " in line for line in lines), \
        "the final phase shows its progress"


def test_a_final_pass_ends_its_units_a_tail_before_the_slot_and_starts_no_script_that_would_outlast_it(
        tmp_path: Path) -> None:
    """long150c: the final pass ended 15 s past its end (a unit outlasts the budget it started within), and the
    campaign 4 s past its 150-minute slot. A pass with a hard end budgets its units to end a unit's tail before
    it, and starts a script check (imports, then the model's runs) only when its own limit fits."""
    from memo.triage.session import SCRIPT_START_S, Session

    with CampaignStore(tmp_path / "c", create=True) as store:
        store.set_meta("config", {"timeout_s": 30.0})
        now = time.monotonic()
        free = Session(store, None, 20.0)  # the background pass: a soft budget only
        assert free.deadline == pytest.approx(now + 20.0, abs=1.0) and free.has_room(15.0, free.script_limit_s(runs=4))
        hard = Session(store, None, 600.0, hard_end=now + 100.0)
        assert hard.unit_tail_s() == 2 * 30.0 + 15.0
        assert hard.deadline == pytest.approx(now + 100.0 - hard.unit_tail_s(), abs=1.0), "the budget ends before"
        assert hard.script_limit_s() == 30.0 + SCRIPT_START_S < 100.0
        assert hard.has_room(15.0, hard.script_limit_s()), "an inference script ends by the hard end"
        assert not hard.has_room(15.0, hard.script_limit_s(runs=4)), "a training script (four runs) would not"
        assert not hard.has_room(30.0, 1.0), "the budget's own minimum still holds"


def test_a_pass_given_the_campaigns_float64_workers_leaves_them_warm(tmp_path: Path) -> None:
    """Each triage pass (a background pass, each 60-second slice of the final pass) started its own float64 worker
    for its first truth (float64-jax's start: 5.7 s, measured under load). A campaign's passes share its runner: a pass uses the runner it is given and leaves it running; a pass without one stops its own."""
    from memo.triage.session import Session
    from memo.triage.truth import TruthRunner

    class Worker:  # stands for a started float64 worker: records whether the pass stopped it
        stopped = False

        def stop(self) -> None:
            self.stopped = True

    with CampaignStore(tmp_path / "c", create=True) as store:
        shared, worker = TruthRunner(tmp_path / "logs"), Worker()
        shared._workers["keras-jax"] = worker  # type: ignore[assignment]
        session = Session(store, None, 10.0, truth=shared)
        assert session.truth_runner() is shared
        session.close()
        assert not worker.stopped, "the campaign's worker stays warm for the next pass"
        own = Session(store, None, 10.0)
        own.truth_runner()._workers["keras-jax"] = worker  # type: ignore[assignment]
        own.close()
        assert worker.stopped, "a pass's own worker ends with it"
