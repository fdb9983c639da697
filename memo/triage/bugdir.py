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

from pathlib import Path

from memo.artifact_files import ARTIFACT_FILES
from memo.bug_files import BUGS_DIR
from memo.model.ir import ModelIR


def converted_file(kind: str) -> str:
    """The name of a converted model of artifact ``kind`` in a bug's folder (``model.onnx`` for every ONNX
    kind, ``model.tflite``...): the file name without the artifact's sub-folder."""
    return Path(ARTIFACT_FILES[kind]).name if not ARTIFACT_FILES[kind].endswith(".onnx") else "model.onnx"


def bug_folder(campaign_dir: Path, bug_id: str) -> Path:
    return Path(campaign_dir) / BUGS_DIR / bug_id


def bug_layers(ir: ModelIR) -> list[str]:
    """Layer classes of the model's body, in order, each once."""
    return list(dict.fromkeys(layer.class_name for layer in ir.body))
