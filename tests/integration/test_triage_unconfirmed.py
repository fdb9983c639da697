"""A bug other than a hang is not run again before its reduction: the reduction's candidates show it, and a bug none
of them shows is settled by the final check of its unreduced model ("not shown again", unconfirmed). t62: the check
before each reduction took twice the reductions' own time. A bug that merges into an earlier one on its reduced
model gets no script check of its own (the earlier entry's script is the one filed)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from triage_fixtures import chain, record_campaign  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PLUGIN = Path(__file__).resolve().parents[1] / "plugins" / "crash_once.py"


def _triage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, always: bool, models: int = 1):
    from memo.backends.executor import DifferentialExecutor
    from memo.triage import triage_campaign
    from memo.triage.turns import PHASES_META

    monkeypatch.setenv("MEMO_TEST_CRASH_ONCE_DIR", str(tmp_path))
    monkeypatch.setenv("MEMO_TEST_CRASH_ALWAYS", "1" if always else "0")
    monkeypatch.chdir(tmp_path)
    irs = [chain("relu", (4,), [("Dense", {"units": 3}), ("ReLU", {}), ("Dense", {"units": 2})]),
           chain("dense", (4,), [("Dense", {"units": 3}), ("Dense", {"units": 2})])][:models]
    with DifferentialExecutor(backends=[], plugins=[PLUGIN], timeout_s=30.0) as executor:
        with record_campaign(Path("campaigns/f"), Path("mutants"), executor, irs, backends=[]) as store:
            store.set_meta("config", {**store.get_meta("config"), "plugins": [str(PLUGIN)]})
            assert [row.verdict.kind for row in store.verdicts()] == ["crash"] * models
            summary = triage_campaign(store, executor=executor, time_budget_s=240)
            return store.triage.load_bugs(), summary, store.get_meta(PHASES_META) or {}


def test_a_crash_no_candidate_shows_is_unconfirmed_by_its_final_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memo.bug_files import Reduction

    (bug,), summary, phases = _triage(tmp_path, monkeypatch, always=False)
    assert Reduction.of(bug.reduction) is Reduction.NOT_AGAIN, (bug.reduction, summary.errors)
    assert bug.reduced_layers == bug.original_layers == 3
    assert "start check" not in phases and phases["reduction"]["units"] == 1, phases
    assert bug.reproduces is False  # its script, run fresh, no longer crashes either


def test_a_steady_crash_is_reduced_without_a_check_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memo.bug_files import Reduction

    (bug,), summary, phases = _triage(tmp_path, monkeypatch, always=True)
    assert Reduction.of(bug.reduction) is Reduction.DONE, (bug.reduction, summary.errors)
    assert bug.reduced_layers == 1 and bug.reproduces is True, (bug.reduction, summary.errors)
    assert "start check" not in phases and phases["script check"]["units"] == 1, phases
    # the last candidate that crashed is the reduced model: its run is the folder's, with no final run again
    assert "final check" not in phases, phases
    assert (Path(str(bug.bug_dir)) / "model.keras").exists()


def test_a_bug_merged_on_its_reduced_model_gets_no_script_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import memo.triage.passes as passes

    real_rekey = passes.rekey

    def merging(store, bug):  # as if the two reduced models' root-cause keys were equal: the later merges
        changed = real_rekey(store, bug)
        others = [other.id for other in store.triage.load_bugs() if other.id != bug.id and other.bug_dir
                  and not other.merged_into]
        if others and bug.bug_dir:
            store.triage.update_bug(bug.id, merged_into=others[0])
        return changed

    monkeypatch.setattr(passes, "rekey", merging)
    bugs, summary, phases = _triage(tmp_path, monkeypatch, always=True, models=2)  # with and without a ReLU
    assert len(bugs) == 2 and all(bug.reduced_layers == 1 for bug in bugs), ([b.reduction for b in bugs], summary.errors)
    (merged,) = [bug for bug in bugs if bug.merged_into]
    (entry,) = [bug for bug in bugs if not bug.merged_into]
    assert merged.merged_into == entry.id and summary.merged == 1
    assert entry.reproduces is True and merged.reproduces is None
    assert phases["script check"]["units"] == 1 and phases["reduction"]["units"] == 2, phases
