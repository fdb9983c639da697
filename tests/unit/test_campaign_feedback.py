"""Execution feeds the seed pool: the generation loop with scripted outcomes (no library runs here)."""
from __future__ import annotations

import shutil
import time
from types import SimpleNamespace
from pathlib import Path
from typing import Callable, Iterator

import pytest

from memo.campaign.config import Budget, CampaignConfig
from memo.campaign.feedback import SATURATION_SHARE_EVERY, Awaiting, AwaitingQueue, Outcome, feedback_lag
from memo.campaign.loop import GenerationLoop
from memo.coverage import Coverage, model_coverage
from memo.model.ir import ModelIR
from memo.mutation import DIRECTED_OPERATOR, MutationFailed
from memo.mutation.analysis import recurrent_layers
from memo.seeds import discover_seeds
from memo.store import CampaignStore

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def seeds_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "seeds"
    directory.mkdir()
    shutil.copy(REPO / "seeds" / "lenet5.json", directory / "lenet5.json")
    return directory


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CampaignStore]:
    with CampaignStore(tmp_path / "campaign", create=True) as opened:
        yield opened


def _loop(store: CampaignStore, seeds_dir: Path, *, execute: bool = True, ops: list[str] | None = None,
          library_coverage: str = "") -> GenerationLoop:
    config = CampaignConfig(name="t", seed=4, budget=Budget(iterations=50), seeds_dir=str(seeds_dir),
                            operators=ops or ["NLA", "LConn", "LRemove"], execute=execute, jobs=1,
                            library_coverage=library_coverage)
    loop = GenerationLoop(config, store)
    loop.initialize()
    return loop


class Runs:
    """A stand-in pipeline: records submissions; answers outcomes with ``decide(mutant_id)``."""

    def __init__(self, decide: Callable[[int], Outcome | None]) -> None:
        self.decide = decide
        self.submitted: list[int] = []
        self.asked: list[int] = []
        self.submitted_when_asked: dict[int, int] = {}
        self.traced: list[tuple[str, bool]] = []

    def submit(self, mutant_id: int, ident: str, ir: ModelIR, library: bool = False) -> None:
        self.submitted.append(mutant_id)
        self.traced.append((ident, library))

    def outcome(self, mutant_id: int) -> Outcome | None:
        assert mutant_id in self.submitted, "only a submitted mutant's outcome is awaited"
        self.asked.append(mutant_id)
        self.submitted_when_asked[mutant_id] = len(self.submitted)
        return self.decide(mutant_id)


def _run(loop: GenerationLoop, runs: Runs, steps: int) -> None:
    for _ in range(steps):
        loop.advance(runs.submit, runs.outcome)


def _parents(store: CampaignStore) -> set[str]:
    return {row["parent"] for row in store._rows("SELECT parent FROM mutants WHERE iteration >= 0")}


def test_a_model_the_reference_cannot_run_never_becomes_a_parent_nor_counts(store: CampaignStore,
                                                                            seeds_dir: Path) -> None:
    loop = _loop(store, seeds_dir)
    runs = Runs(lambda mutant_id: Outcome(reference_ran=False))
    _run(loop, runs, 30)
    assert len(runs.submitted) > 5
    assert _parents(store) == {"seed:lenet5"}, "no mutant the reference could not run is a parent"
    assert loop.tracker.models == 1, "only the seed counts"
    assert loop.tracker.covered == model_coverage(loop.seed_pool["lenet5"].ir)
    assert loop.counters["parents"] == 0 and loop.counters["not_parents"] > 0


def test_outcomes_apply_exactly_lag_submissions_later_and_parents_follow(store: CampaignStore,
                                                                        seeds_dir: Path) -> None:
    """The lag counts mutants submitted for execution, not iterations: a mutant that adds no coverage is not
    executed, and at saturation (19 of 20 such) a lag in iterations left about one model in flight."""
    loop = _loop(store, seeds_dir)
    assert loop.lag == feedback_lag(1) == 8
    runs = Runs(lambda mutant_id: Outcome(reference_ran=True))
    _run(loop, runs, 1)  # the seed's own run, awaited before the first mutation
    _run(loop, runs, 4)
    seed_run = runs.submitted[0]
    assert runs.asked == [seed_run], "mutants 0-3 are not due before 8 more submissions"
    _run(loop, runs, 40)
    assert loop.counters["generated"] > len(runs.submitted) - 1, "some mutants were not executed"
    later = [runs.submitted_when_asked[m] - 1 - runs.submitted.index(m) for m in runs.asked if m != seed_run]
    assert later and set(later) == {loop.lag}, "each outcome is applied exactly lag submissions later"
    assert any(not parent.startswith("seed:") for parent in _parents(store)), "executed mutants become parents"
    assert loop.tracker.models > 1


def test_no_outcome_means_no_step(store: CampaignStore, seeds_dir: Path) -> None:
    loop = _loop(store, seeds_dir)
    runs = Runs(lambda mutant_id: None)  # the campaign is stopping
    _run(loop, runs, 10)
    assert loop.iteration == 0 and loop.counters["generated"] == 0


def test_a_known_bug_keeps_a_model_out_of_the_pool_unless_its_parent_showed_it(store: CampaignStore,
                                                                             seeds_dir: Path) -> None:
    old = frozenset({"bug-a"})
    loop = _loop(store, seeds_dir)
    runs = Runs(lambda mutant_id: Outcome(True) if mutant_id == runs.submitted[0] else Outcome(True, old, old))
    _run(loop, runs, 25)
    assert _parents(store) == {"seed:lenet5"}, "a mutant re-finding a known bug its parent did not show"

    other = CampaignStore(store.directory.parent / "inherited", create=True)
    try:
        inherited = _loop(other, seeds_dir)
        seed_first = Runs(lambda mutant_id: Outcome(True, signatures=old, known=old if mutant_id > 1 else frozenset()))
        _run(inherited, seed_first, 25)
        assert inherited.seed_pool["lenet5"].ident != "seed:lenet5", "the seed showed the bug: inheriting it is fine"
    finally:
        other.close()


def test_an_injection_never_becomes_a_parent(store: CampaignStore, seeds_dir: Path) -> None:
    loop = _loop(store, seeds_dir, execute=False, ops=["NaN"])
    for _ in range(12):
        loop.advance(lambda *args: None)
    assert loop.counters["diverse"] > 0
    assert _parents(store) == {"seed:lenet5"}


def test_a_mutant_above_the_compute_bound_never_becomes_a_parent(store: CampaignStore, seeds_dir: Path) -> None:
    loop = _loop(store, seeds_dir, execute=False)
    loop.config.max_parent_cost = 1  # every mutant of lenet5 costs more
    for _ in range(12):
        loop.advance(lambda *args: None)
    assert loop.counters["diverse"] > 0
    assert _parents(store) == {"seed:lenet5"}


def test_a_mutant_gathering_recurrent_layers_past_the_bound_never_becomes_a_parent(store: CampaignStore,
                                                                                   seeds_dir: Path) -> None:
    """Libraries unroll recurrent layers: a lineage must not gather them, but a seed that has many still evolves."""
    stock = next(seed for seed in discover_seeds(REPO / "seeds") if seed.name == "lstm_stock_price").ir
    loop = _loop(store, seeds_dir)
    lenet = loop.seed_pool["lenet5"].ir
    assert recurrent_layers(stock) == 3 and recurrent_layers(lenet) == 0
    loop.config.max_parent_recurrent = 2

    def may_be_parent(model: ModelIR, parent: ModelIR) -> bool:
        return loop._may_be_parent(SimpleNamespace(ir=model, cost=1), parent)  # type: ignore[arg-type]

    assert not may_be_parent(stock, lenet), "three recurrent layers where the parent had none"
    assert may_be_parent(stock, stock), "as many as its parent: the seed's own lineage"
    assert may_be_parent(lenet, stock)
    loop.config.max_parent_recurrent = 3
    assert may_be_parent(stock, lenet)
    loop.config.max_parent_recurrent = 0  # no bound
    assert may_be_parent(stock, lenet)


def test_when_the_directed_operator_cannot_mutate_the_model_the_chosen_operator_does(
        store: CampaignStore, seeds_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At saturation Target found nothing to realize in any model: half the iterations stored only its failure."""
    import memo.campaign.loop as loop_module
    real_mutate = loop_module.mutate

    def mutate(ir: ModelIR, operator: str, *args: object, **kwargs: object) -> object:
        if operator == DIRECTED_OPERATOR:
            raise MutationFailed("Target: no uncovered item could be realized in this model")
        return real_mutate(ir, operator, *args, **kwargs)

    monkeypatch.setattr(loop_module, "mutate", mutate)
    loop = _loop(store, seeds_dir, execute=False, ops=["NLA", "LConn", DIRECTED_OPERATOR])
    loop.config.directed_share = 0.5
    fell_back: list[tuple[int, tuple[str, str]]] = []
    original = loop.strategy.fall_back
    loop.strategy.fall_back = lambda: fell_back.append((loop.iteration, original())) or fell_back[-1][1]  # type: ignore[method-assign]
    for _ in range(30):
        loop.advance(lambda *args: None)
    rows = {row["iteration"]: row for row in store._rows("SELECT iteration, operator, valid, error FROM mutants")}
    assert len(fell_back) >= 5
    for iteration, (slot, operator) in fell_back:
        assert rows[iteration]["operator"] == operator != DIRECTED_OPERATOR and rows[iteration]["valid"]
    directed = loop.strategy.state.seeds[("lenet5", DIRECTED_OPERATOR)]
    assert directed.selected >= len(fell_back) and directed.diverse == 0 and directed.reward == 0


def test_without_execution_the_pool_updates_at_once(store: CampaignStore, seeds_dir: Path) -> None:
    loop = _loop(store, seeds_dir, execute=False)
    assert loop.lag == 0
    for _ in range(20):
        loop.advance(lambda *args: None)
    assert not len(loop.awaiting)
    assert any(not parent.startswith("seed:") for parent in _parents(store))


def test_awaiting_round_trips_and_claims() -> None:
    item = Awaiting(mutant_id=3, iteration=7, due=11, slot="s", ident="m7", seed="s", ir_json="{}",
                    coverage=Coverage(types={"Dense"}, pairs={("Dense", "ReLU")}), candidate=True,
                    parent_signatures=frozenset({"x"}))
    queue = AwaitingQueue.from_json(AwaitingQueue([item]).to_json())
    assert queue.items == [item]
    assert queue.due(10) == [] and queue.due(11) == [item]
    assert queue.claimed().pairs == {("Dense", "ReLU")}
    assert item.becomes_parent(Outcome(True, frozenset({"x"}), frozenset({"x"})))
    assert not item.becomes_parent(Outcome(True, frozenset({"y"}), frozenset({"y"})))
    assert not item.becomes_parent(Outcome(False))


def _stored(store: CampaignStore) -> list[dict]:
    return store._rows("SELECT id, iteration, slot, operator, parent, ir, diverse FROM mutants ORDER BY id")


def test_a_resume_generates_again_exactly_the_mutants_stored_after_the_saved_state(tmp_path: Path,
                                                                                  seeds_dir: Path) -> None:
    """The state is saved with each mutant sent to execution and every STATE_EVERY iterations otherwise; a
    campaign killed in between resumes from the saved state and regenerates the same mutants."""
    decide = lambda mutant_id: Outcome(reference_ran=mutant_id % 3 != 0)  # noqa: E731
    with CampaignStore(tmp_path / "killed", create=True) as killed_store:
        killed, before_kill = _loop(killed_store, seeds_dir), Runs(decide)
        steps = 40
        _run(killed, before_kill, steps)
        while killed_store.load_state()[0] == killed.iteration - 1:  # stop where the last mutants went unsaved
            _run(killed, before_kill, 1)
            steps += 1
        saved_at = killed_store.load_state()[0]  # then a kill -9: no checkpoint
        stored_at_kill = _stored(killed_store)
        unsaved = [row for row in stored_at_kill if row["iteration"] > saved_at]
        assert unsaved and not any(row["diverse"] for row in unsaved), "the tail after the state went nowhere"
        assert len(killed_store.load_state()[1]["awaiting"]) > 0
    with CampaignStore(tmp_path / "whole", create=True) as whole_store:
        _run(_loop(whole_store, seeds_dir), Runs(decide), steps + 15)
        expected = _stored(whole_store)
    with CampaignStore(tmp_path / "killed") as reopened:
        resumed = GenerationLoop(killed.config, reopened)
        resumed.restore()
        assert resumed.iteration == saved_at + 1
        assert len(_stored(reopened)) == len(stored_at_kill) - len(unsaved)
        runs = Runs(decide)
        runs.submitted = [row["id"] for row in _stored(reopened)]  # submitted before the kill
        _run(resumed, runs, 15 + len(unsaved))
        assert _stored(reopened) == expected


def test_the_clock_stops_when_fuzzing_does(store: CampaignStore, seeds_dir: Path) -> None:
    """Draining the models in flight and the final triage are not fuzzing time: a five-minute campaign's report
    said it lasted 8 min 28 s and halved its rates."""
    loop = _loop(store, seeds_dir)
    loop.elapsed_before = 60.0
    loop.start_clock()
    time.sleep(0.05)
    loop.stop_clock()
    stopped = loop.elapsed()
    time.sleep(0.1)
    loop.stop_clock()  # a second stop (the finally after the normal end) moves nothing
    assert loop.elapsed() == stopped and 60.04 < stopped < 60.5
    loop.checkpoint()
    assert store.load_state()[1]["elapsed"] == stopped
    loop.start_clock()  # a resume's clock runs again
    time.sleep(0.02)
    assert loop.elapsed() > 60.0 + 0.01


def test_library_coverage_traces_every_seed_and_one_executed_mutant_in_three(store: CampaignStore, seeds_dir: Path,
                                                                              tmp_path: Path) -> None:
    from memo.campaign.feedback import SEED_IDENT

    loop = _loop(store, seeds_dir, library_coverage="measure")
    runs = Runs(lambda mutant_id: Outcome(reference_ran=True))
    _run(loop, runs, 40)
    seeds = [traced for ident, traced in runs.traced if ident.startswith(SEED_IDENT)]
    mutants = [traced for ident, traced in runs.traced if not ident.startswith(SEED_IDENT)]
    assert seeds and all(seeds), "the seeds are the baseline: always traced"
    assert len(mutants) >= 6 and mutants[2::3] == [True] * len(mutants[2::3])
    assert not any(mutants[0::3]) and not any(mutants[1::3])
    off = Runs(lambda mutant_id: Outcome(reference_ran=True))
    with CampaignStore(tmp_path / "campaigns" / "off", create=True) as other:
        _run(_loop(other, seeds_dir), off, 10)
    assert not any(traced for _, traced in off.traced), "without --library-coverage nothing is traced"


def test_only_the_models_a_campaign_runs_are_stored_with_their_ir(store: CampaignStore, seeds_dir: Path,
                                                                  tmp_path: Path) -> None:
    """A mutant that adds no coverage is never run nor a parent: its row keeps the operator and the delta, not the
    model (campaign long150: such mutants were 3-10x the executed ones, their IR two thirds of the store). Without
    execution (``--no-execute``) the mutants are the product, and every valid one keeps its IR."""
    runs = Runs(lambda mutant_id: Outcome(reference_ran=True))
    _run(_loop(store, seeds_dir), runs, 80)
    rows = store._rows("SELECT id, valid, diverse, ir FROM mutants WHERE iteration >= 0")
    skipped = [row for row in rows if row["valid"] and row["id"] not in runs.submitted]
    assert skipped and all(row["ir"] is None for row in skipped)
    assert all(row["ir"] for row in rows if row["id"] in runs.submitted)
    # at saturation, one in SATURATION_SHARE_EVERY mutants that add no coverage runs anyway: the search's bound
    not_diverse = [row for row in rows if row["valid"] and not row["diverse"]]
    assert len(not_diverse) >= SATURATION_SHARE_EVERY
    assert sum(row["id"] in runs.submitted for row in not_diverse) == len(not_diverse) // SATURATION_SHARE_EVERY
    with CampaignStore(tmp_path / "generated", create=True) as generated:
        _run(_loop(generated, seeds_dir, execute=False), runs, 40)
        valid = generated._rows("SELECT ir FROM mutants WHERE iteration >= 0 AND valid = 1")
    assert valid and all(row["ir"] for row in valid)
