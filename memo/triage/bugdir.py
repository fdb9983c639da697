"""A bug's folder: the minimal model, its input, the expected output, ``bug.json`` and ``repro.py``.

Layout (``campaigns/<name>/bugs/<bug id>/``)::

    model.keras      the minimal model (weights included)
    inputs.npz       its input, keyed by input name
    ir.json          the model as memo IR
    model.onnx       the converted model, when the faulty library consumes ONNX (model.tflite: TFLite)
    expected.npz     the reference library's outputs (inconsistency / shape bugs)
    bug.json         kind, library, symptom, localization, input/output summary, reduction statistics
    repro.py         the standalone reproduction script (exit 0: reproduces, 1: does not)
"""
from __future__ import annotations

import json
from pathlib import Path

from memo.artifact_files import ARTIFACT_FILES
from memo.json_types import JsonObject
from memo.model.ir import ModelIR

# The reduction status of a finding whose own model did not show it again: the report lists it as unconfirmed.
NOT_AGAIN = "not reduced: the model did not show the bug again when re-run (flaky or environment-dependent)"

# The reduction statuses a later pass continues from the folder's model.
NOT_REDUCED = "not reduced (no time or no executor)"
RETRY_STATUSES = ("timeout", NOT_REDUCED)

BUGS_DIR = "bugs"
BUG_FILE = "bug.json"
REPRO_FILE = "repro.py"
MODEL_FILE = "model.keras"
INPUTS_FILE = "inputs.npz"
IR_FILE = "ir.json"
EXPECTED_FILE = "expected.npz"


def converted_file(kind: str) -> str:
    """The name of a converted model of artifact ``kind`` in a bug's folder (``model.onnx`` for every ONNX
    kind, ``model.tflite``...): the file name without the artifact's sub-folder."""
    return Path(ARTIFACT_FILES[kind]).name if not ARTIFACT_FILES[kind].endswith(".onnx") else "model.onnx"


def bug_folder(campaign_dir: Path, bug_id: str) -> Path:
    return Path(campaign_dir) / BUGS_DIR / bug_id


def read_bug_file(folder: Path) -> JsonObject:
    path = Path(folder) / BUG_FILE
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def write_bug_file(folder: Path, data: JsonObject) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / BUG_FILE).write_text(json.dumps(data, indent=2, default=str))


def bug_layers(ir: ModelIR) -> list[str]:
    """Layer classes of the model's body, in order, each once."""
    return list(dict.fromkeys(layer.class_name for layer in ir.body))
