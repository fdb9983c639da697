"""Whom a bug is filed against is decided once, by triage (memo.triage.blame), and stored with the bug; the report
renders it (tests/unit/test_onnx_reference.py follows one decision into the report)."""
from __future__ import annotations

import json
from pathlib import Path

from memo.backends.documented import upstream_of

from memo.store import BugRow
from memo.triage.blame import decide
from memo.triage.signature import FailureDetails

# an OpenVINO plugin failure that Keras on OpenVINO reports (campaign p30)
PLUGIN = ("Exception from src/inference/src/cpp/core.cpp:117:\nException from src/inference/src/dev/plugin.cpp:54:"
          "\nCheck 'active.size() != reg_pool.size()' failed at src/common/snippets/src/lowered/pass/"
          "assign_registers.cpp:201:\nCan't allocate registers for a snippet: not enough registers")


def _bug(kind: str, library: str) -> BugRow:
    return BugRow(f"{kind}-{library}-0", kind, library, "execute", {"kind": kind, "library": library}, 1, 1, 0.0, 0.0, 1)


def test_a_crash_reported_from_inside_the_library_under_a_backend_is_filed_against_that_library() -> None:
    blame = decide(_bug("crash", "keras-openvino"), [], FailureDetails("RuntimeError", PLUGIN), None)
    assert blame == {"library": "openvino", "reported_by": "keras-openvino", "opinion": None, "refusal": None}
    own = decide(_bug("crash", "keras-openvino"), [], FailureDetails("RuntimeError", "a Keras error"), None)
    assert own["library"] == "keras-openvino" and own["reported_by"] is None


def test_the_onnx_reference_evaluators_opinion_moves_a_numeric_bug() -> None:
    blame = decide(_bug("inconsistency", "onnx2torch"), [], FailureDetails(), "tf2onnx")
    assert blame["library"] == "tf2onnx" and blame["reported_by"] == "onnx2torch" and blame["opinion"] == "tf2onnx"


# Every keras-export bug folder of campaigns m40 and n40 (tests/corpus/bugs/): who each is filed against, by where in
# Keras's export stack it arises. torch.onnx's own failures: a symbolic function crashing (854d28faff: squeeze ->
# _get_const) and an invalid node it wrote (a97aa25f99: ReduceMax on a rank-0 input). Keras's: torch.onnx refusing
# a value Keras's code traced (SymbolicValueError: not constant, a Generator constant, memory_format), and failures
# inside torch.nn under Keras's layer call.
KERAS_EXPORT_FOLDERS = {
    "854d28faff": "torch.onnx", "a97aa25f99": "torch.onnx",
    "65a337de54": "keras-export", "29156d8f9f": "keras-export", "c7007cde43": "keras-export",
    "e8fc34bfa7": "keras-export", "6cf387dadf": "keras-export", "6de5ba0de8": "keras-export",
    "b2823094c4": "keras-export", "cc1a54ba10": "keras-export", "382bc26d01": "keras-export",
    "5ac8f16133": "keras-export",
}
BUGS = Path(__file__).resolve().parents[1] / "corpus" / "bugs"


def _recorded(folder: Path) -> tuple[BugRow, list[BugRow], FailureDetails, None]:
    info = json.loads((folder / "bug.json").read_text())
    parts = info["signature"]
    row = BugRow(info["id"], info["kind"], info["library"], info["stage"], parts, 1, 1, 0.0, 0.0, 1)
    return row, [], FailureDetails(info["exception"], info["error_message"]), None  # decide's arguments


def test_a_keras_export_crash_is_filed_where_in_the_export_stack_it_arises() -> None:
    blamed = {key: decide(*_recorded(BUGS / f"crash-keras-export-{key}"))["library"] for key in KERAS_EXPORT_FOLDERS}
    assert blamed == KERAS_EXPORT_FOLDERS


def test_torch_onnx_is_filed_at_pytorchs_tracker() -> None:
    upstream = upstream_of("torch.onnx")
    assert upstream.tracker == "https://github.com/pytorch/pytorch/issues" and upstream.form.project == "PyTorch"


def test_a_keras_core_crash_seen_on_keras_or_two_backends_is_filed_at_keras() -> None:
    details = FailureDetails("ValueError", "The `mask` must be broadcastable to `inputs`.")
    one_backend = decide(_bug("crash", "keras-tensorflow"), [], details, None)
    assert one_backend["library"] == "keras-tensorflow"  # one backend alone: its own, until seen elsewhere
    with_front_end = decide(_bug("crash", "keras-tensorflow"), [_bug("crash", "keras")], details, None)
    assert with_front_end["library"] == "keras" and with_front_end["reported_by"] == "keras-tensorflow"
    assert decide(_bug("crash", "keras-torch"), [_bug("crash", "keras-jax")], details, None)["library"] == "keras"
    # a device twin is its CPU backend's library, not a second backend
    assert decide(_bug("crash", "keras-torch"), [_bug("crash", "keras-torch-cuda")], details, None)["library"] \
        == "keras-torch"


def test_an_optimizer_step_keyed_by_keras_optimizer_code_is_filed_at_keras() -> None:
    shared = BugRow("training-crash-keras-tensorflow-0", "training-crash", "keras-tensorflow", "adam",
                    {"kind": "training-crash", "library": "keras", "stage": "adam"}, 1, 1, 0.0, 0.0, 1)
    blame = decide(shared, [], FailureDetails("InvalidArgumentError", "cannot compute Mul"), None)
    assert blame["library"] == "keras" and blame["reported_by"] == "keras-tensorflow"
    # a gradient difference stays on the backend that computes it
    own = BugRow("training-inconsistency-keras-jax-0", "training-inconsistency", "keras-jax", "gradients",
                 {"kind": "training-inconsistency", "library": "keras-jax", "stage": "gradients"}, 1, 1, 0.0, 0.0, 1)
    assert decide(own, [], FailureDetails(), None)["library"] == "keras-jax"


def test_a_converter_blamed_at_another_opset_is_filed_by_its_one_name() -> None:
    blame = decide(_bug("crash", "mxnet"), [], FailureDetails("MXNetError", "dimensions are invalid"), "tf2onnx-opset11")
    assert blame["library"] == "tf2onnx" and blame["reported_by"] == "mxnet" and blame["opinion"] == "tf2onnx-opset11"
