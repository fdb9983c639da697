"""Which pending bug triage reduces first (issue 38, item 5): one per root guess before the likely duplicates, a
partly reduced one before a never-tried one of the same guess. Pure logic on bug records; no library runs here."""
from __future__ import annotations

from memo.store import BugRow
from memo.triage.bug_reduction import REDUCER_VERSION
from memo.triage.reduce_order import Backlog, backlog_of, reduce_again, root_guess, triage_order

SYMBOLIC = ["torch/onnx/_internal/torchscript_exporter/symbolic_helper.py:_parse_arg",
            "torch/onnx/_internal/torchscript_exporter/symbolic_helper.py:<listcomp>"]


def _bug(bug_id: str, occurrences: int = 1, frames: list[str] | None = None, message: str = "m",
         **values: object) -> BugRow:
    parts = {"kind": "crash", "library": "keras-export", "stage": "convert", "exception": "SymbolicValueError",
             "frames": SYMBOLIC if frames is None else frames, "message": message}
    fields: dict[str, object] = {"id": bug_id, "kind": "crash", "library": "keras-export", "stage": "convert",
                                 "parts": parts, "first_verdict": 1, "first_mutant": 1, "first_seen": 0.0,
                                 "last_seen": 0.0, "occurrences": occurrences}
    fields.update(values)
    return BugRow(**fields)  # type: ignore[arg-type]


def test_the_operator_a_message_names_tells_apart_failures_with_the_same_frames() -> None:
    cast = _bug("a", message="Failed to export a node '%N = onnx::Cast[to=N](%N)' (in list node prim::ListConstruct)")
    gather = _bug("b", message="Failed to export a node '%N = onnx::Gather[axis=N](%N)'")
    other_layer = _bug("c", message="Failed to export '%N = onnx::Cast[to=N](%N)' (prim::ListConstruct) in Dense")
    assert root_guess(cast) != root_guess(gather) and root_guess(cast) == root_guess(other_layer)
    assert root_guess(_bug("d", frames=[], message="x")) != root_guess(_bug("e", frames=[], message="y"))


def test_distinct_root_guesses_come_before_likely_duplicates() -> None:
    frequent = _bug("frequent", occurrences=9)
    duplicate = _bug("duplicate", occurrences=5)
    rare = _bug("rare", frames=["torch/nn/functional.py:embedding"])
    order = [bug.id for bug in triage_order([duplicate, rare, frequent], [])]
    assert order == ["frequent", "rare", "duplicate"]


def test_a_retired_librarys_bugs_are_reduced_after_every_other() -> None:
    """t60: 4 of the 30 bugs left waiting were MXNet's (retired: no tracker would take them)."""
    mxnet = _bug("mxnet", occurrences=40, library="mxnet", frames=["mxnet/contrib/onnx/onnx2mx/_op_translations.py:x"])
    duplicate = _bug("duplicate", occurrences=5)
    frequent = _bug("frequent", occurrences=9)
    order = [bug.id for bug in triage_order([mxnet, duplicate, frequent], [])]
    assert order == ["frequent", "duplicate", "mxnet"]


def test_a_reduced_bug_takes_its_guess_and_a_partly_reduced_one_goes_before_a_new_one() -> None:
    reduced = _bug("reduced", bug_dir="/x", reduction={"status": "done"})
    merged = _bug("merged", frames=["other"], bug_dir="/x", reduction={"status": "done"}, merged_into="reduced")
    new = _bug("new", occurrences=3)
    other = _bug("other", frames=["other"])
    assert [bug.id for bug in triage_order([new, other], [reduced, merged, new, other])] == ["other", "new"]
    partly = _bug("partly", bug_dir="/x", reduction={"status": "timeout"})
    assert [bug.id for bug in triage_order([new, partly], [new, partly])] == ["partly", "new"]


def test_partly_reduced_bugs_take_turns_by_the_reduction_time_they_had() -> None:
    """long150d: two unfinished training reductions of 20 and 22 occurrences went first by their counts in every
    pass for 100 minutes; a bug of one occurrence whose reduction had less time waited behind them to the end."""
    busy = _bug("busy", occurrences=22, bug_dir="/x", reduction={"status": "timeout", "seconds": 240.0})
    rare = _bug("rare", frames=["other"], bug_dir="/x", reduction={"status": "timeout", "seconds": 30.0})
    new = _bug("new", frames=["third"])
    assert [bug.id for bug in triage_order([busy, rare, new], [busy, rare, new])] == ["new", "rare", "busy"]


def test_a_bug_adopted_with_an_older_reduction_is_reduced_again_as_a_partly_reduced_one() -> None:
    known = {"status": "known: M-0006, reduced model and script copied from the bug database", "reduced_layers": 4}
    stale = _bug("stale", bug_dir="/x", reduction=known)
    current = _bug("current", bug_dir="/x", reduction={**known, "reducer": REDUCER_VERSION})
    assert reduce_again(stale) and not reduce_again(current)
    assert not reduce_again(_bug("training", kind="training-nan", bug_dir="/x", reduction=known))
    new = _bug("new", occurrences=3)
    # an adopted bug as it stays takes its guess; one to reduce again is ordered as a partly reduced one
    assert [bug.id for bug in triage_order([new], [current, new])] == ["new"]
    assert [bug.id for bug in triage_order([new, stale], [new, stale])] == ["stale", "new"]


def test_the_report_names_the_reduced_entry_a_bug_not_reduced_likely_duplicates() -> None:
    from memo.report.triage_figures import mark_likely_duplicates
    from memo.report.sections import status_text

    reduced = _bug("reduced", bug_dir="/x", reduction={"status": "done"})
    twin, other = _bug("twin", occurrences=4), _bug("other", frames=["torch/nn/functional.py:embedding"])
    entries: list[dict[str, object]] = [{"id": bug.id} for bug in (reduced, twin, other)]
    mark_likely_duplicates(entries, [reduced, twin, other])  # type: ignore[arg-type]
    assert [entry.get("likely_duplicate_of") for entry in entries] == [None, "reduced", None]
    entry = {**entries[1], "section": "not-ready", "reproduces": None, "reduction": {"status": "not reduced"}}
    assert status_text(entry) == "not reduced: likely a duplicate of reduced (the same failure site)"  # type: ignore


def test_training_differences_and_mxnet_operators_are_told_apart() -> None:
    """r48's reader: an optimizer difference on float16 weights alone was called a likely duplicate of the one on
    mixed precisions, and two MXNet bind errors in other operators of the Min-broadcast one."""
    def training(bug_id: str, weights: str) -> BugRow:
        parts = {"kind": "training-inconsistency", "library": "keras-torch", "stage": "optimizer", "weights": weights}
        return _bug(bug_id, kind="training-inconsistency", library="keras-torch", stage="optimizer", parts=parts)

    assert root_guess(training("a", "float32 among mixed precisions")) != root_guess(training("b", "float16"))
    assert root_guess(training("c", "float16")) == root_guess(training("d", "float16"))
    bind = ["mxnet/symbol/symbol.py:simple_bind", "mxnet/module/executor_group.py:_bind_ith_exec"]
    head = "simple_bind error. Arguments: INPUTS MXNetError: Error in operator NAME: [TIME] PATH:N: Check failed: "
    minimum = _bug("m", frames=bind, message=head + "assign(&dattr, vec.at(i)): Incompatible attr in node NAME at "
                                                    "N-th input: expected SHAPE, got SHAPE")
    take = _bug("t", frames=bind, message=head + "(*in_attrs)SHAPE != N (N vs. N) : Index type must be set for take "
                                                 "operator")
    assert root_guess(minimum) == root_guess(_bug("n", frames=bind, message=minimum.parts["message"]))
    assert root_guess(minimum) != root_guess(take)


def test_an_adopted_training_forward_difference_left_large_is_triaged_again() -> None:
    known = {"status": "known: M-0181, reduced model and script copied from the bug database",
             "original_layers": 29, "reduced_layers": 17, "reducer": 2}
    forward = _bug("t", kind="training-inconsistency", stage="forward", bug_dir="/tmp/t", reduction=known)
    assert reduce_again(forward)
    assert not reduce_again(_bug("s", kind="training-inconsistency", stage="forward", bug_dir="/tmp/t",
                                 reduction={**known, "reduced_layers": 2}))
    assert not reduce_again(_bug("g", kind="training-inconsistency", stage="gradients", bug_dir="/tmp/t",
                                 reduction=known))
    from memo.triage.bug_reduction import TRIED_AGAIN
    assert not reduce_again(_bug("f", kind="training-inconsistency", stage="forward", bug_dir="/tmp/t",
                                 reduction={**known, TRIED_AGAIN: "triage failed"}))


def test_the_backlog_counts_distinct_fileable_bugs_apart_from_likely_duplicates_and_retired_ones() -> None:
    """long150c: 34 bugs waiting, of which 10 distinct and fileable."""
    reduced = _bug("reduced", bug_dir="/x", reduction={"status": "done"})
    same_as_reduced = _bug("same_as_reduced", occurrences=7)
    rare = _bug("rare", frames=["torch/nn/functional.py:embedding"])
    rare_again = _bug("rare_again", frames=["torch/nn/functional.py:embedding"], message="other words")
    mxnet = _bug("mxnet", library="mxnet", frames=["mxnet/contrib/onnx/onnx2mx/_op_translations.py:x"])
    pending = triage_order([mxnet, rare_again, same_as_reduced, rare], [reduced])
    waiting = backlog_of(pending, [reduced, *pending])
    assert waiting == Backlog(distinct=1, duplicates=2, unfileable=1) and waiting.total == 4
    assert backlog_of(pending, []) == Backlog(distinct=2, duplicates=1, unfileable=1), "nothing reduced yet"


def test_a_bug_unit_s_share_of_triage_counts_the_distinct_bugs_waiting_not_the_likely_duplicates() -> None:
    """long150g at minute 95: 46 bugs waiting, 9 distinct; counted whole, their weight held 58 findings waiting for
    localization."""
    from memo.triage.pending import distinct_waiting
    from memo.triage.turns import weight

    reduced = _bug("reduced", bug_dir="/x", reduction={"status": "done"})
    duplicates = [_bug(f"same{i}") for i in range(12)]
    rare = _bug("rare", frames=["torch/nn/functional.py:embedding"])
    pending = triage_order([*duplicates, rare], [reduced])
    every = [reduced, *pending]
    assert distinct_waiting(pending, every) == 1
    assert weight("bug", distinct_waiting(pending, every)) == 1.0 < weight("bug", len(pending))
