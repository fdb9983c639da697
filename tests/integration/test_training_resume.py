"""A training bug whose reduction a pass cuts short, continued by the next pass on the real workers.

long150d retried four unfinished training reductions 33 times in all: each retry trained the finding's whole model
again, probed it again, restarted the reducer's passes and its rejected candidates, then judged the unfinished model
by float64 and checked its script, and ran out of time where the retry before it had. Here the first pass's
reduction is given no time; the folder it leaves is the next pass's start and carries no float64 truth nor script
check; the next pass does not probe that model again, finishes the reduction, and judges and checks the result."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memo.bug_files import read_bug_file
from memo.model.ir import ModelIR
from memo.triage import training_bug
from tests.conftest import triaged_training_store
from tests.integration.test_training_bug_triage import BACKENDS, SEED, spectral_model


@pytest.fixture(scope="module")
def passes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from memo.triage import triage_campaign
    from memo.triage.pending import unchecked_scripts

    reduced: list[int] = []
    probed: list[int] = []
    reduce_bug, forward_first = training_bug.reduce_bug, training_bug.forward_first

    def cut_short(ir: ModelIR, check: Any, **options: Any) -> Any:
        reduced.append(len(ir.body))
        return reduce_bug(ir, check, **{**options, "budget_s": 0.0} if len(reduced) == 1 else options)

    def counted(session: Any, bug: Any, reference: str, ir: ModelIR, inputs: Any) -> Any:
        probed.append(len(ir.body))
        return forward_first(session, bug, reference, ir, inputs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(training_bug, "reduce_bug", cut_short)
        patch.setattr(training_bug, "forward_first", counted)
        store, first = triaged_training_store(tmp_path_factory.mktemp("training-resume"), spectral_model(), BACKENDS,
                                              SEED, 300.0, inference=False)
        bug = next(bug for bug in store.triage.load_bugs() if bug.kind.startswith("training-"))
        after_first = {"bug": bug, "data": read_bug_file(Path(str(bug.bug_dir))), "probed": list(probed),
                       "truths": training_bug.pending_training_truths(store), "unchecked": unchecked_scripts(store)}
        second = triage_campaign(store, time_budget_s=300.0, next_python="none")
    return {"store": store, "first": first, "second": second, "after_first": after_first, "reduced": reduced,
            "probed": probed}


def test_a_cut_short_training_reduction_leaves_a_start_without_truth_or_script_check(passes: dict[str, Any]) -> None:
    first = passes["after_first"]
    bug, data = first["bug"], first["data"]
    assert passes["first"].errors == []
    assert bug.reduction["status"] == "timeout" and bug.reduced_layers == 3, bug.reduction
    assert "truth" not in data and bug.reproduces is None  # judged once, on the model it ends with
    assert first["truths"] == [] and first["unchecked"] == []  # nor by a later pass's truth or script unit
    assert first["probed"] == [3]
    assert data["reduction"][training_bug.PROBED_KEY]  # the model reached was probed without a cut


def test_the_next_pass_continues_without_probing_that_model_again_and_finishes_the_bug(
        passes: dict[str, Any]) -> None:
    assert passes["second"].errors == []
    bug = next(bug for bug in passes["store"].triage.load_bugs() if bug.kind.startswith("training-"))
    assert passes["reduced"] == [3, 3]
    assert passes["probed"] == [3, 1]  # not the 3 layers again: the reduced model only
    assert bug.reduction["status"] == "done" and bug.reduced_layers == 1 and bug.original_layers == 3
    data = read_bug_file(Path(str(bug.bug_dir)))
    assert data["truth"]["decision"] == "confirmed", data["truth"]
    assert bug.reproduces is True
