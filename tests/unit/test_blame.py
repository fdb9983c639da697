"""Whom a bug is filed against is decided once, by triage (memo.triage.blame), and stored with the bug; the report
renders it (tests/unit/test_onnx_reference.py follows one decision into the report)."""
from __future__ import annotations

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
