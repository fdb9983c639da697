"""The float64 truth's maths: scaled errors, conditioning, the decision, and the report section it leads to."""
from __future__ import annotations

import numpy as np
import pytest

from memo.report.sections import UNCHECKED, section_of, status_text
from memo.truth import (CONFIRMED, CONTRADICTED, ILL_CONDITIONED, NOISE, UNDECIDED, Truth, assess, condition,
                        decide, perturb, scaled_error)

T = np.linspace(-2.0, 2.0, 50)
REF = "keras-tensorflow"


def test_scaled_error_is_in_units_of_the_oracles_tolerance() -> None:
    assert scaled_error(T.astype(np.float32), T) < 1e-3
    # atol * s + rtol * |T| with s = max(1, mean |T|) ~ 1.02: an offset of 0.01 is about 5 to 10 tolerances
    assert 4 < scaled_error(T + 0.01, T) < 10
    nan = T.copy()
    nan[3] = np.nan
    assert scaled_error(nan, T) == float("inf") and scaled_error(T, nan) == float("inf")
    assert scaled_error(nan, nan) == 0.0  # the same special value in both: no error
    assert scaled_error(T[:10], T) == float("inf")  # another shape


def test_float16_outputs_get_float16_tolerance() -> None:
    half = T.astype(np.float16)
    assert scaled_error(half, T) <= 1.0
    assert scaled_error(half.astype(np.float32), T) > scaled_error(half, T)


@pytest.mark.parametrize("accused, witness, decision", [
    (50.0, 0.01, CONFIRMED),  # the accused far from float64, the reference close
    (0.01, 50.0, CONTRADICTED),  # float64 sides with the accused
    (0.8, 0.3, NOISE),  # both within the tolerance of float64
    (3.0, 1.5, NOISE),  # a few tolerances: rounding over a deep model, not a defect
    (40.0, 30.0, UNDECIDED),  # both far
    (6.0, 3.0, UNDECIDED),  # past the floor, but not by the factor
])
def test_decision(accused: float, witness: float, decision: str) -> None:
    assert decide({"a": accused, REF: witness}, ["a"], [REF])[0] == decision


def test_each_side_counts_its_best_backend() -> None:
    errors = {"onnxruntime": 30.0, "openvino": 31.0, REF: 0.01, "keras-jax": 25.0}
    assert decide(errors, ["onnxruntime", "openvino"], [REF, "keras-jax"])[0] == CONFIRMED


def test_perturbation_moves_floats_by_a_few_ulps_and_leaves_indices() -> None:
    inputs = {"x": np.full((3, 4), 2.0, np.float32), "ids": np.arange(4)}
    moved = perturb(inputs, 0)
    relative = np.abs(moved["x"] / 2.0 - 1.0)
    assert moved["x"].dtype == np.float64 and np.allclose(relative, 4 * np.finfo(np.float32).eps)
    assert np.array_equal(moved["ids"], inputs["ids"])
    assert not np.array_equal(perturb(inputs, 0)["x"], perturb(inputs, 1)["x"])
    assert np.array_equal(perturb(inputs, 0)["x"], perturb(inputs, 0)["x"])  # deterministic


def _outputs(accused: np.ndarray, reference: np.ndarray) -> dict[str, list[np.ndarray]]:
    return {REF: [reference.astype(np.float32)], "mxnet": [accused.astype(np.float32)]}


def test_a_wrong_library_is_confirmed_and_named() -> None:
    truth = assess(_outputs(T + 0.3, T), [T], [[T * (1 + 1e-7)]], ["mxnet"], [REF], REF)
    assert truth.decision == CONFIRMED and truth.blamed == "accused"
    assert truth.errors["mxnet"] > 10 and truth.errors[REF] < 0.01


def test_an_unstable_result_is_ill_conditioned_whoever_differs() -> None:
    # a 1/x near 0 or a chaotic recurrence: a few ulps of input move the float64 result far
    truth = assess(_outputs(T + 0.3, T), [T], [[T + 5.0]], ["mxnet"], [REF], REF)
    assert truth.decision == ILL_CONDITIONED and "moves by" in truth.reason and truth.blamed is None
    assert condition([T], [[T + 5.0]]) > 1


@pytest.mark.parametrize("truth_values, reference, reason", [
    (np.full(4, np.nan), np.zeros(4, np.float32), "NaN/Inf in float64"),
    (np.full(4, 1e33), np.full(4, 1e33, np.float32), "overflow"),
    (np.arange(4.0), np.arange(4), "indices or booleans"),
])
def test_other_ill_conditioned_results(truth_values: np.ndarray, reference: np.ndarray, reason: str) -> None:
    outputs = {REF: [reference], "mxnet": [reference + 1]}
    truth = assess(outputs, [truth_values], [], ["mxnet"], [REF], REF)
    assert truth.decision == ILL_CONDITIONED and reason in truth.reason


def test_a_zero_both_sides_miss_is_a_cancellations_residue_but_one_the_witness_computes_is_not() -> None:
    # a bias gradient behind a batch normalization: exactly zero in float64 whatever the inputs, so perturbing them
    # shows nothing; both libraries leave rounding residue, the accused sixteen times more
    zero = np.zeros(64)
    residue = np.linspace(-0.0035, 0.0035, 64)
    both_miss = assess(_outputs(residue * 16, residue), [zero], [[zero]], ["mxnet"], [REF], REF)
    assert both_miss.decision == ILL_CONDITIONED and "cancellation" in both_miss.reason
    assert both_miss.errors[REF] > 1
    witness_exact = assess(_outputs(residue * 16, zero), [zero], [[zero]], ["mxnet"], [REF], REF)
    assert witness_exact.decision == CONFIRMED
    not_zero = assess(_outputs(T + 0.3, T + 0.005), [T], [[T]], ["mxnet"], [REF], REF)
    assert not_zero.decision == CONFIRMED


def test_truth_round_trips_through_json_with_infinite_errors() -> None:
    truth = Truth(decision=CONFIRMED, errors={"a": float("inf"), "b": 0.5}, accused=["a"], witnesses=["b"])
    data = truth.to_json()
    assert data["errors"]["a"] == "inf"
    assert Truth.from_json(data).errors == truth.errors


def _entry(**values: object) -> dict[str, object]:
    entry: dict[str, object] = {"kind": "inconsistency", "reproduces": True, "reduced_layers": 1,
                                "original_layers": 6, "occurrences": 1, "first_seen": 0.0,
                                "minimal": {"reproduces": True, "lines": 20}}
    entry.update(values)
    return entry


@pytest.mark.parametrize("decision, section", [
    (CONFIRMED, "ready"), (CONTRADICTED, "truth-blames-other"), (ILL_CONDITIONED, "ill-conditioned"),
    (NOISE, "noise"), (UNDECIDED, "undecided"), ("unavailable", "undecided"),
])
def test_only_a_confirmed_numeric_finding_is_ready_to_file(decision: str, section: str) -> None:
    assert section_of(_entry(truth={"decision": decision, "blamed": REF})) == section


def test_a_numeric_finding_without_truth_is_not_ready_and_crashes_need_none() -> None:
    entry = _entry()
    entry["section"] = section_of(entry)
    assert entry["section"] == "not-ready" and status_text(entry) == "float64 truth not computed yet"
    assert section_of(_entry(kind="crash")) == "ready"
    assert section_of(_entry(kind="crash", upstream={"status": "retired"})) == "retired"
    assert section_of(_entry(kind="crash", upstream={"status": "maintenance"})) == "ready"
    # torch.onnx's legacy TorchScript exporter (Keras's export calls it for a dynamic batch): kept apart as well
    from memo.backends.documented import upstream_of

    legacy = upstream_of("torch.onnx")
    assert legacy.status == "legacy" and legacy.tracker and not legacy.record_only  # its issue text stays PyTorch's
    assert section_of(_entry(kind="crash", upstream={"status": legacy.status})) == "retired"
    assert section_of(_entry(kind="crash", documented={"behaviour": "b"})) == "documented"
    contradicted = _entry(truth={"decision": CONTRADICTED, "blamed": REF})
    contradicted["section"] = section_of(contradicted)
    assert status_text(contradicted) == f"float64 blames {REF}"


def test_a_reduced_crash_whose_minimal_script_reproduces_is_ready_though_repro_py_was_not_checked() -> None:
    # f35: three reduced bugs whose campaign ran out of time before checking repro.py, their minimal scripts
    # checked by `memo report --issue-scripts`, stood in "not ready"
    unchecked = _entry(kind="crash", reproduces=None, minimal={"reproduces": True, "lines": 20})
    assert section_of(unchecked) == "ready"
    assert section_of(_entry(kind="crash", reproduces=None, minimal=None)) == "not-ready", "nothing checked"
    failed = _entry(kind="crash", reproduces=False, minimal={"reproduces": True, "lines": 20})
    assert section_of(failed) == "not-reproducing", "repro.py's own failure to reproduce still decides"
    numeric = _entry(reproduces=None, minimal={"reproduces": True, "lines": 20})
    numeric["section"] = section_of(numeric)
    assert numeric["section"] == "not-ready" and status_text(numeric) == "float64 truth not computed yet"


def test_a_reduced_bug_not_ready_is_said_to_wait_for_its_first_missing_step() -> None:
    # t64: a reduced training crash whose scripts had not run read "float64 truth not computed yet", which no crash needs
    def status(**values: object) -> str:
        entry = _entry(**values)
        entry["section"] = section_of(entry)
        assert entry["section"] == "not-ready", entry
        return status_text(entry)

    not_run = "reduced; its repro.py not run in a fresh process yet"
    assert status(kind="training-crash", reproduces=None, minimal=None) == not_run
    assert status(kind="training-crash", reproduces=None) == not_run  # its minimal script, from the database, checked
    assert status(kind="crash", minimal=None) == UNCHECKED
    assert status(kind="training-crash", minimal=None) == UNCHECKED  # t70: its repro.py checked, no minimal script
    assert status(kind="crash", reproduces=None, minimal={"reproduces": False, "lines": 12, "reason": "exit 0"}) == \
        "minimal script does not reproduce (exit 0)"
    assert status() == "float64 truth not computed yet"  # a numeric bug with its scripts checked
    assert status(kind="crash", newest_pending=True) == "not rechecked on the newest code yet"


def test_only_a_checked_minimal_script_that_reproduces_makes_an_entry_ready_to_file() -> None:
    # issue 38, "fileable by default": memo's repro.py reproducing is not enough, the maintainer gets the minimal script
    unchecked = _entry(kind="crash", minimal=None)
    unchecked["section"] = section_of(unchecked)
    assert unchecked["section"] == "not-ready" and status_text(unchecked) == UNCHECKED
    failing = _entry(kind="crash", minimal={"reproduces": False, "lines": 14, "reason": "the script exited 0"})
    failing["section"] = section_of(failing)
    assert status_text(failing) == "minimal script does not reproduce (the script exited 0)"
    none = _entry(kind="hang", minimal={"reproduces": False, "lines": 0, "reason": "a hang needs a clock"})
    none["section"] = section_of(none)
    assert none["section"] == "not-ready" and status_text(none) == "no minimal script: a hang needs a clock"
    unknown = _entry(kind="crash", reproduces=None, minimal={"reproduces": False, "lines": 9, "reason": "exited 0"})
    unknown["section"] = section_of(unknown)
    assert status_text(unknown) == "minimal script does not reproduce (exited 0)", "repro.py not checked either"
    nothing = _entry(kind="crash", reproduces=None, minimal=None)
    nothing["section"] = section_of(nothing)
    assert status_text(nothing) == UNCHECKED
    retired = _entry(kind="crash", upstream={"status": "retired"}, minimal=None)
    # t60's reader: an MXNet entry "not ready for want of a checked minimal script" read as if a check would make
    # it fileable; no tracker takes it, reduced or not
    assert section_of(retired) == "retired"
    assert section_of(_entry(kind="crash", upstream={"status": "retired"}, reproduces=False)) == "not-reproducing"
    assert section_of(_entry(kind="crash")) == "ready"


def test_a_reduction_its_time_limit_cut_short_is_not_ready_to_file() -> None:
    unfinished = _entry(kind="crash", reduction={"status": "timeout"}, reduced_layers=20, original_layers=23)
    unfinished["section"] = section_of(unfinished)
    assert unfinished["section"] == "not-ready"
    assert status_text(unfinished) == "reduction unfinished (20 of 23 layers left)"
    assert section_of(_entry(kind="crash", reduction={"status": "reduced"}, reduced_layers=1,
                             original_layers=23)) == "ready"


def test_the_truth_never_shares_kernels_with_the_accused() -> None:
    from memo.truth import truth_engines

    torch_based = frozenset({"onnx2pytorch", "torch"})
    assert truth_engines([torch_based]) == ["float64-jax"]  # torch's bicubic kernel would side with it
    assert truth_engines([frozenset({"keras", "jax", "jaxlib"})]) == ["float64-torch"]
    assert truth_engines([frozenset({"openvino"})]) == ["float64-jax", "float64-torch"]
    # accused on both: no engine is independent, both are used (and must agree)
    assert truth_engines([torch_based, frozenset({"jax"})]) == ["float64-jax", "float64-torch"]


def test_engines_apart_measures_in_tolerances() -> None:
    from memo.truth import engines_apart

    assert engines_apart([T], [T]) == 0.0
    assert engines_apart([T], [T + 0.05]) > 1.0
    assert engines_apart([T], [T, T]) == float("inf")


def test_with_two_engines_each_error_is_to_the_nearest_semantics() -> None:
    from memo.truth import assess_runs

    other = T * 1.1  # another engine's semantics of an implementation-defined operation (a cubic coefficient)
    runs = {"float64-jax": ([T], [[T]]), "float64-torch": ([other], [[other]])}
    # wrong under both semantics: confirmed
    assert assess_runs(_outputs(T + 1.0, T), runs, ["mxnet"], [REF], REF).decision == CONFIRMED
    # the accused follows the other engine: an implementation choice, not a precision verdict
    truth = assess_runs(_outputs(other, T), runs, ["mxnet"], [REF], REF)
    assert truth.decision == UNDECIDED and "implementation choice" in truth.reason
    # one engine unstable is enough to make it ill-conditioned
    unstable = {"float64-jax": ([T], [[T]]), "float64-torch": ([T], [[T + 5.0]])}
    assert assess_runs(_outputs(T + 1.0, T), unstable, ["mxnet"], [REF], REF).decision == ILL_CONDITIONED


def test_saved_arrays_round_trip(tmp_path) -> None:
    from memo.triage.truth import load_arrays, save_arrays

    runs = {"float64-jax": ([T], [[T], [T * 2]]), "float64-torch": ([T + 1], [[T], [T]])}
    outputs = _outputs(T + 0.3, T)
    assert save_arrays(tmp_path / "truth.npz", outputs, runs)
    loaded_outputs, loaded_runs = load_arrays(tmp_path / "truth.npz")
    assert set(loaded_outputs) == set(outputs) and list(loaded_runs) == list(runs)
    assert np.array_equal(loaded_runs["float64-jax"][1][1][0], T * 2)
    assert np.array_equal(loaded_runs["float64-torch"][0][0], T + 1)


def test_special_values_inside_the_model_make_it_a_special_value_question() -> None:
    from memo.truth import assess_runs

    runs = {"float64-jax": ([T], [[T]])}
    plain = assess_runs(_outputs(T + 1.0, T), runs, ["mxnet"], [REF], REF)
    inside = assess_runs(_outputs(T + 1.0, T), runs, ["mxnet"], [REF], REF, special_inside=True)
    assert plain.decision == CONFIRMED
    assert inside.decision == ILL_CONDITIONED and "NaN or Inf inside" in inside.reason
