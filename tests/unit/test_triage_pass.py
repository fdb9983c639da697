"""A triage pass without execution time: dedup, bug folders and scripts from the campaign's own artifacts;
idempotence; the background thread never raises."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from memo.bug_files import Reduction
from memo.triage import start_background_triage, triage_campaign
from tests.unit.triage_store import add_finding, make_campaign, model


def _crash_in_jax(artifact_dir: str) -> dict:
    return {"artifact_dir": artifact_dir, "reference": "keras-tensorflow", "backends": {"keras-jax": {
        "name": "keras-jax", "consumes": "keras", "stages": [{"stage": "execute", "status": "error",
                                                               "exc_type": "XlaRuntimeError", "message": "boom"}]}}}


def test_a_pass_without_budget_writes_folders_and_scripts_from_the_original_artifact(tmp_path: Path) -> None:
    from memo.artifact import prepare_artifact

    ir = model("Dense", "ReLU")
    artifact = prepare_artifact(ir, tmp_path / "mutants" / "1", seed=1)
    (artifact.directory / "outputs").mkdir()
    np.savez(artifact.outputs_path("keras-tensorflow"), out_0=np.zeros((2, 4), np.float32))
    with make_campaign(tmp_path / "campaigns" / "c") as store:
        add_finding(store, 9, ir, _crash_in_jax(str(artifact.directory)),
                    [("crash", "keras-jax", "execute", "XlaRuntimeError: boom")], str(artifact.directory))
        summary = triage_campaign(store, time_budget_s=0)
        # four signatures; the unlocalized NaN bucket awaits localization and is not triaged as a bug
        assert summary.bugs == 4 and summary.new == 3 and summary.scripts == 1 and summary.reduced == 0
        jax_bug = next(bug for bug in store.triage.load_bugs() if bug.library == "keras-jax" and bug.kind == "crash")
        folder = Path(jax_bug.bug_dir)
        # a crash's script compares no outputs: no expected.npz (only numeric bugs' folders hold one)
        assert sorted(p.name for p in folder.iterdir()) == ["bug.json", "inputs.npz", "ir.json", "model.keras",
                                                             "repro.py"]
        script = (folder / "repro.py").read_text()
        assert 'EXPECTED_TYPE = "XlaRuntimeError"' in script and '"jax"' in script
        assert jax_bug.reduction["status"].startswith("not reduced") and jax_bug.reproduces is None
        others = [bug for bug in store.triage.load_bugs() if bug.id != jax_bug.id]
        # no artifact and no time to rebuild one: not reduced yet, a later pass rebuilds it from the IR
        assert all(bug.reduction == {"status": Reduction.NOT_REDUCED} and bug.bug_dir is None for bug in others
                   if not bug.unlocalized)
        assert [bug.kind for bug in others if bug.unlocalized] == ["nan"]
        again = triage_campaign(store, time_budget_s=0)
        assert again.scripts == 0 and (folder / "repro.py").read_text() == script
    from memo.report import write_report

    html = write_report(tmp_path / "campaigns" / "c", tmp_path / "c.html").read_text()
    assert "not reduced" in html and "await localization" in html and 'EXPECTED_TYPE = &#34;XlaRuntimeError&#34;' in html


def test_background_triage_finishes_and_swallows_errors(tmp_path: Path) -> None:
    make_campaign(tmp_path / "c").close()
    thread = start_background_triage(tmp_path / "c", time_budget_s=0)
    thread.join(60)
    assert not thread.is_alive()
    from memo.store import CampaignStore

    with CampaignStore(tmp_path / "c") as store:
        assert len(store.triage.load_bugs()) == 3
    broken = start_background_triage(tmp_path / "missing", time_budget_s=0)
    broken.join(60)
    assert not broken.is_alive() and not (tmp_path / "missing").exists()


def test_a_pass_with_less_time_than_one_step_starts_nothing_and_leaves_the_bugs_pending(tmp_path: Path) -> None:
    """A step started with a second left ran both of a big model's runs and overran the campaign's slot."""
    from memo.triage import MIN_STEP_S, pending_bugs

    ir = model("Dense", "ReLU")
    with make_campaign(tmp_path / "campaigns" / "c") as store:
        add_finding(store, 9, ir, _crash_in_jax(str(tmp_path / "gone")),
                    [("crash", "keras-jax", "execute", "XlaRuntimeError: boom")], None)
        summary = triage_campaign(store, time_budget_s=MIN_STEP_S - 1)
        assert summary.new == 0 and summary.reduced == 0 and summary.scripts == 0
        assert "keras-jax" in [bug.library for bug in pending_bugs(store)], "left to the next pass"
        assert all(bug.bug_dir is None and not bug.reduction for bug in pending_bugs(store))


def test_every_kind_of_unit_with_work_gets_an_equal_share_of_triage_time() -> None:
    from memo.triage.turns import UNIT_KINDS, TurnClock

    clock = TurnClock(None)
    assert clock.order() == list(UNIT_KINDS)  # nothing spent yet: the declared order
    clock.ran("bug", 60.0)  # a reduction of a minute: every other kind goes before the next bug
    assert clock.order()[-1] == "bug"
    localizations = 0
    while clock.order()[0] != "bug":  # only bugs and localizations have work
        idle = clock.order()[:clock.order().index("localization")]
        clock.ran("localization", 6.0, [kind for kind in idle if kind != "localization"])
        localizations += 1
    assert 10 <= localizations <= 11, "about ten 6-s localizations for one 60-s reduction, not one"
    # a kind without work is brought up to the time of the kind that ran: work arriving later gets its share,
    # not every turn until its counter has caught up
    assert clock.spent["truth"] >= clock.spent["localization"] - 6.0
    assert min(clock.spent.values()) == 0.0
    # the counters survive the store (JSON) and ignore what is not a counter
    assert TurnClock(clock.as_meta()).spent == clock.spent
    assert TurnClock("bug").spent == TurnClock(None).spent == TurnClock({"bug": -3, "x": 9}).spent


def test_a_backlog_of_bugs_takes_a_larger_share_until_it_is_down_again() -> None:
    """long150b: 4 bugs waiting after the first hour, 16 at the end of fuzzing, on equal shares."""
    from memo.triage.turns import TurnClock, weight

    def reductions_per_other_unit(waiting: int) -> int:
        clock = TurnClock(None)
        bugs = 0
        for _ in range(40):  # bugs and scripts have work, 60-s reductions and 60-s checks
            kind = next(kind for kind in clock.order() if kind in ("bug", "script"))
            idle = clock.order()[:clock.order().index(kind)]
            clock.ran(kind, 60.0, idle, waiting if kind == "bug" else 0)
            bugs += kind == "bug"
        return round(bugs / (40 - bugs))

    assert reductions_per_other_unit(0) == reductions_per_other_unit(4) == 1  # an equal share up to 4 waiting
    assert reductions_per_other_unit(16) == 4
    assert weight("bug", 16) == 4.0 and weight("bug", 2) == 1.0 and weight("newest", 50) == 1.0
    assert weight("localization", 16) == 2.0


def test_a_pass_charges_the_time_of_its_units_to_their_kind(tmp_path: Path) -> None:
    from memo.triage.turns import SPENT_META, TURN_META

    ir = model("Dense", "ReLU")
    with make_campaign(tmp_path / "campaigns" / "c") as store:
        add_finding(store, 9, ir, _crash_in_jax(str(tmp_path / "gone")),
                    [("crash", "keras-jax", "execute", "XlaRuntimeError: boom")], str(tmp_path / "gone"))
        store.set_meta(TURN_META, {"bug": 100.0, "localization": 0.0})  # bugs had much more time than the rest
        triage_campaign(store, time_budget_s=0)
        spent = store.get_meta(TURN_META)
        # only the bug's unit had work: it ran although its kind had the most time, and the idle kinds caught up
        assert spent["bug"] > max(value for kind, value in spent.items() if kind != "bug")
        # where the time went, absolute and cumulative: only bug units so far
        recorded = store.get_meta(SPENT_META)
        assert list(recorded) == ["bug"] and recorded["bug"]["units"] >= 1 and recorded["bug"]["seconds"] >= 0


def test_a_timed_phase_adds_its_wall_seconds_to_the_store_also_when_it_raises(tmp_path: Path) -> None:
    import time

    import pytest

    from memo.store import CampaignStore
    from memo.triage.turns import PHASES_META, timed

    with CampaignStore(tmp_path / "c", create=True) as store:
        with timed(store, "reduction"):
            time.sleep(0.05)
        with pytest.raises(ValueError), timed(store, "reduction"):
            raise ValueError("a reduction that fails is still time spent")
        with timed(store, "script check"):
            pass
        phases = store.get_meta(PHASES_META)
    assert set(phases) == {"reduction", "script check"}
    assert phases["reduction"]["units"] == 2 and phases["reduction"]["seconds"] >= 0.05
    assert phases["script check"]["units"] == 1 and phases["script check"]["seconds"] < 0.05


def test_a_units_laps_add_the_seconds_between_marks_to_one_phase_each(tmp_path: Path) -> None:
    """long150d: training bug units took 100 s each with no figure for their parts."""
    import time

    from memo.store import CampaignStore
    from memo.triage.turns import PHASES_META, Laps

    with CampaignStore(tmp_path / "c", create=True) as store:
        laps = Laps(store, "training bug:")
        time.sleep(0.05)
        laps.lap("start run")
        laps.lap("reduction")
        phases = store.get_meta(PHASES_META)
    assert set(phases) == {"training bug: start run", "training bug: reduction"}
    assert phases["training bug: start run"]["seconds"] >= 0.05 > phases["training bug: reduction"]["seconds"]


def test_triage_time_spent_adds_up_per_kind() -> None:
    from memo.triage.turns import add_spent

    spent = add_spent(None, "bug", 60.0)
    spent = add_spent(spent, "bug", 30.5)
    spent = add_spent(spent, "final scripts", 47.0, units=8)
    assert spent == {"bug": {"units": 2, "seconds": 90.5}, "final scripts": {"units": 8, "seconds": 47.0}}
    assert add_spent({"bug": "junk", "x": {"units": 1, "seconds": -4}}, "x", -1.0) == {"x": {"units": 2,
                                                                                             "seconds": 0.0}}
