"""Each upstream tracker's issue form: its section headings and the fixed fields it asks for, declared by the
backend specs filed there (``Upstream(..., form=...)``; :mod:`memo.filing.issue` renders it). The headings follow
the trackers' own issue templates (.github/ISSUE_TEMPLATE of each repository). Stdlib only, data only."""
from __future__ import annotations

from dataclasses import dataclass, field

# The parts of an issue memo writes, in the order a form lists them unless it says otherwise.
DESCRIBE, ENVIRONMENT, REPRODUCE, EXPECTED, LOG, DUPLICATES = (
    "describe", "environment", "reproduce", "expected", "log", "duplicates")
DEFAULT_ORDER = (DESCRIBE, REPRODUCE, EXPECTED, LOG, ENVIRONMENT, DUPLICATES)


@dataclass(frozen=True, eq=False)  # one object per tracker: compared and hashed as itself
class TrackerForm:
    """A tracker's form: ``project``, the heading of each part, the parts' order, and fixed ``fields``
    (heading -> answer) the form asks for that memo always answers the same way."""

    project: str
    headings: dict[str, str]
    order: tuple[str, ...] = DEFAULT_ORDER
    fields: dict[str, str] = field(default_factory=dict)
    keras_fields: dict[str, str] = field(default_factory=dict)  # answers instead where the script is Keras code

    def answers(self, keras_script: bool) -> dict[str, str]:
        """The fixed fields' answers for an issue whose script builds a Keras model (``keras_script``) or not."""
        return {**self.fields, **(self.keras_fields if keras_script else {})}


GENERIC_HEADINGS = {DESCRIBE: "Describe the bug", ENVIRONMENT: "Environment", REPRODUCE: "To reproduce",
                    EXPECTED: "Expected behavior", LOG: "Output", DUPLICATES: "Searched for duplicates"}
GENERIC = TrackerForm("", GENERIC_HEADINGS)


def _form(project: str, order: tuple[str, ...] = DEFAULT_ORDER, fields: dict[str, str] | None = None,
          keras_fields: dict[str, str] | None = None, **headings: str) -> TrackerForm:
    return TrackerForm(project, {**GENERIC_HEADINGS, **headings}, order, fields or {}, keras_fields or {})


PYTORCH = _form(
    "PyTorch", (DESCRIBE, REPRODUCE, EXPECTED, LOG, ENVIRONMENT, DUPLICATES),
    describe="🐛 Describe the bug", environment="Versions")
KERAS = _form(
    "Keras", (DESCRIBE, ENVIRONMENT, REPRODUCE, EXPECTED, LOG, DUPLICATES),
    describe="Current behavior", reproduce="Standalone code to reproduce the issue",
    expected="Expected behavior", log="Relevant log output", environment="Versions")
TENSORFLOW = _form(
    "TensorFlow", (DESCRIBE, ENVIRONMENT, REPRODUCE, EXPECTED, LOG, DUPLICATES),
    fields={"Issue type": "Bug", "Have you reproduced the bug with TensorFlow Nightly?": "No (the release below)",
            "Source": "binary"},
    describe="Current behavior?", reproduce="Standalone code to reproduce the issue",
    log="Relevant log output", environment="TensorFlow version and environment")
LITERT = _form(
    "LiteRT", describe="Issue description", reproduce="Standalone code to reproduce the issue")
ONNXRUNTIME = _form(
    "ONNX Runtime", (DESCRIBE, REPRODUCE, EXPECTED, LOG, ENVIRONMENT, DUPLICATES),
    fields={"Urgency": "none (found by fuzzing)", "ONNX Runtime Installation": "Released Package",
            "ONNX Runtime API": "Python", "Architecture": "X64", "Execution Provider": "Default CPU"},
    describe="Describe the issue", reproduce="To reproduce", environment="Platform and versions")
OPENVINO = _form(
    "OpenVINO", (ENVIRONMENT, DESCRIBE, REPRODUCE, EXPECTED, LOG, DUPLICATES),
    fields={"Device used for inference": "CPU", "Framework": "ONNX", "Model used": "the graph in the script"},
    # OpenVINO failing on the model Keras's OpenVINO backend builds (t52's reader: "Framework: ONNX" on a Keras script)
    keras_fields={"Framework": "Keras 3 (its OpenVINO backend, `KERAS_BACKEND=openvino`)",
                  "Model used": "the Keras model in the script"},
    environment="OpenVINO Version and Operating System", describe="Issue description",
    reproduce="Step-by-step reproduction", log="Relevant log output",
    duplicates="Issue submission checklist: searched for duplicates")
TVM = _form(
    "TVM", (EXPECTED, DESCRIBE, ENVIRONMENT, REPRODUCE, LOG, DUPLICATES),
    expected="Expected behavior", describe="Actual behavior", reproduce="Steps to reproduce",
    duplicates="Triage (searched for duplicates)")
TF2ONNX = _form(
    "tf2onnx", (DESCRIBE, ENVIRONMENT, REPRODUCE, EXPECTED, LOG, DUPLICATES),
    fields={"Urgency": "none (found by fuzzing)"}, environment="System information",
    reproduce="To Reproduce", log="Additional context")
ONNX2TORCH = _form("onnx2torch")
ONNX2PYTORCH = _form("onnx2pytorch")
MXNET = _form(
    "MXNet", describe="Description", reproduce="Steps to reproduce", log="Error Message")
