"""Each upstream tracker's issue form: its section headings and the fixed fields it asks for, keyed by the
tracker's address (a backend spec's ``upstream.tracker``). The headings follow the trackers' own issue templates
(.github/ISSUE_TEMPLATE of each repository)."""
from __future__ import annotations

from dataclasses import dataclass, field

# The parts of an issue memo writes, in the order a form lists them unless it says otherwise.
DESCRIBE, ENVIRONMENT, REPRODUCE, EXPECTED, LOG, DUPLICATES = (
    "describe", "environment", "reproduce", "expected", "log", "duplicates")
DEFAULT_ORDER = (DESCRIBE, REPRODUCE, EXPECTED, LOG, ENVIRONMENT, DUPLICATES)


@dataclass(frozen=True)
class TrackerForm:
    """A tracker's form: ``project``, the heading of each part, the parts' order, and fixed ``fields``
    (heading -> answer) the form asks for that memo always answers the same way."""

    project: str
    headings: dict[str, str]
    order: tuple[str, ...] = DEFAULT_ORDER
    fields: dict[str, str] = field(default_factory=dict)


GENERIC_HEADINGS = {DESCRIBE: "Describe the bug", ENVIRONMENT: "Environment", REPRODUCE: "To reproduce",
                    EXPECTED: "Expected behavior", LOG: "Output", DUPLICATES: "Searched for duplicates"}
GENERIC = TrackerForm("", GENERIC_HEADINGS)


def _form(project: str, order: tuple[str, ...] = DEFAULT_ORDER, fields: dict[str, str] | None = None,
          **headings: str) -> TrackerForm:
    return TrackerForm(project, {**GENERIC_HEADINGS, **headings}, order, fields or {})


FORMS: dict[str, TrackerForm] = {
    "https://github.com/pytorch/pytorch/issues": _form(
        "PyTorch", (DESCRIBE, REPRODUCE, EXPECTED, LOG, ENVIRONMENT, DUPLICATES),
        describe="🐛 Describe the bug", environment="Versions"),
    "https://github.com/keras-team/keras/issues": _form(
        "Keras", (DESCRIBE, ENVIRONMENT, REPRODUCE, EXPECTED, LOG, DUPLICATES),
        describe="Current behavior", reproduce="Standalone code to reproduce the issue",
        expected="Expected behavior", log="Relevant log output", environment="Versions"),
    "https://github.com/tensorflow/tensorflow/issues": _form(
        "TensorFlow", (DESCRIBE, ENVIRONMENT, REPRODUCE, EXPECTED, LOG, DUPLICATES),
        fields={"Issue type": "Bug", "Have you reproduced the bug with TensorFlow Nightly?": "No (the release below)",
                "Source": "binary"},
        describe="Current behavior?", reproduce="Standalone code to reproduce the issue",
        log="Relevant log output", environment="TensorFlow version and environment"),
    "https://github.com/google-ai-edge/LiteRT/issues": _form(
        "LiteRT", describe="Issue description", reproduce="Standalone code to reproduce the issue"),
    "https://github.com/microsoft/onnxruntime/issues": _form(
        "ONNX Runtime", (DESCRIBE, REPRODUCE, EXPECTED, LOG, ENVIRONMENT, DUPLICATES),
        fields={"Urgency": "none (found by fuzzing)", "ONNX Runtime Installation": "Released Package",
                "ONNX Runtime API": "Python", "Architecture": "X64", "Execution Provider": "Default CPU"},
        describe="Describe the issue", reproduce="To reproduce", environment="Platform and versions"),
    "https://github.com/openvinotoolkit/openvino/issues": _form(
        "OpenVINO", (ENVIRONMENT, DESCRIBE, REPRODUCE, EXPECTED, LOG, DUPLICATES),
        fields={"Device used for inference": "CPU", "Framework": "ONNX", "Model used": "the graph in the script"},
        environment="OpenVINO Version and Operating System", describe="Issue description",
        reproduce="Step-by-step reproduction", log="Relevant log output",
        duplicates="Issue submission checklist: searched for duplicates"),
    "https://github.com/apache/tvm/issues": _form(
        "TVM", (EXPECTED, DESCRIBE, ENVIRONMENT, REPRODUCE, LOG, DUPLICATES),
        expected="Expected behavior", describe="Actual behavior", reproduce="Steps to reproduce",
        duplicates="Triage (searched for duplicates)"),
    "https://github.com/onnx/tensorflow-onnx/issues": _form(
        "tf2onnx", (DESCRIBE, ENVIRONMENT, REPRODUCE, EXPECTED, LOG, DUPLICATES),
        fields={"Urgency": "none (found by fuzzing)"}, environment="System information",
        reproduce="To Reproduce", log="Additional context"),
    "https://github.com/ENOT-AutoDL/onnx2torch/issues": _form("onnx2torch"),
    "https://github.com/Talmaj/onnx2pytorch/issues": _form("onnx2pytorch"),
    "https://github.com/apache/mxnet/issues": _form(
        "MXNet", describe="Description", reproduce="Steps to reproduce", log="Error Message"),
}


def form_for(tracker: str) -> TrackerForm:
    """The form of ``tracker`` (the generic one for a tracker memo does not know)."""
    return FORMS.get(tracker.rstrip("/"), GENERIC)
