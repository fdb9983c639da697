"""The artifact of one model: everything every backend needs, written once, in one directory.

::

    DIR/model.keras        the model with its weights (read by the Keras backends and by tf2onnx)
    DIR/inputs.npz         the input arrays, keyed by model-input name
    DIR/model.ir.json      memo's IR of the model (input and output names, for reports and reduction)
    DIR/onnx/model.onnx            tf2onnx's conversion (written by the tf2onnx converter worker)
    DIR/onnx/model.opset11.onnx    the opset-11 conversion MXNet imports
    DIR/tflite/model.tflite        TensorFlow's TFLite conversion (LiteRT)
    DIR/keras-onnx/model.onnx      Keras's own ONNX export (ONNX Runtime again)
    DIR/outputs/BACKEND.npz        each backend's outputs (out_0, out_1... in model-output order)

All backends therefore run the same weights on the same inputs. The orchestrator builds the model on
Keras's numpy backend, so writing an artifact loads no library under test.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from memo.artifact_files import ARTIFACT_FILES, INPUTS_FILE, IR_FILE, OUTPUTS_DIR
from memo.model.files import save_keras_artifact
from memo.model.inputs import make_inputs
from memo.model.ir import ModelIR
from memo.model.weights import Weights


@dataclass
class Artifact:
    directory: Path
    keras_path: Path
    inputs_path: Path
    ir_path: Path

    def path_for(self, kind: str) -> Path:
        """The file of an artifact kind (:data:`ARTIFACT_FILES`), whether written yet or not."""
        return self.keras_path if kind == "keras" else self.directory / ARTIFACT_FILES[kind]

    def outputs_path(self, backend: str) -> Path:
        return self.directory / OUTPUTS_DIR / f"{backend}.npz"

    def read_ir(self) -> ModelIR:
        return ModelIR.loads(self.ir_path.read_text())

    def input_names(self) -> list[str]:
        return [layer.name for layer in self.read_ir().input_layers]

    def to_json(self) -> dict[str, Any]:
        return {"directory": str(self.directory), "keras_path": str(self.keras_path),
                "inputs_path": str(self.inputs_path), "ir_path": str(self.ir_path)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Artifact":
        return cls(**{key: Path(data[key]) for key in ("directory", "keras_path", "inputs_path", "ir_path")})


def artifact_in(directory: Path) -> Artifact:
    """The artifact whose files are (or will be) in ``directory``."""
    directory = Path(directory)
    return Artifact(directory=directory, keras_path=directory / ARTIFACT_FILES["keras"],
                    inputs_path=directory / INPUTS_FILE, ir_path=directory / IR_FILE)


def prepare_artifact(ir: ModelIR, directory: Path, *, seed: int, weights: Weights | None = None) -> Artifact:
    """Write the ``.keras`` model (given weights, generated deterministically from ``seed`` where absent),
    the inputs drawn from ``seed`` and the IR into ``directory``. Raises InvalidModelError if Keras
    rejects the model."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    artifact = artifact_in(directory)
    save_keras_artifact(ir, artifact.keras_path, seed=seed, weights=weights)
    np.savez(artifact.inputs_path, **make_inputs(ir, seed))
    artifact.ir_path.write_text(json.dumps(ir.to_json(), indent=1, sort_keys=True))
    return artifact


def ensure_artifact(ir: ModelIR, directory: Path, *, seed: int) -> Artifact:
    """The artifact in ``directory`` if its model and inputs are there, else the same artifact rebuilt from
    ``ir`` and the campaign ``seed`` (campaigns delete most artifacts; weights and inputs are deterministic).
    A rebuilt artifact has no ONNX files or outputs until it is executed again."""
    artifact = artifact_in(Path(directory))
    if artifact.keras_path.exists() and artifact.inputs_path.exists():
        if not artifact.ir_path.exists():
            artifact.ir_path.write_text(json.dumps(ir.to_json(), indent=1, sort_keys=True))
        return artifact
    return prepare_artifact(ir, directory, seed=seed)


def slim_artifact(directory: Path, *, kinds: Iterable[str], backends: Iterable[str]) -> int:
    """Delete the converted files not of ``kinds`` and the outputs not of ``backends`` from an executed
    artifact (the model, inputs and IR always stay); returns the bytes freed. Campaigns keep artifacts for
    triage, which reads only the files of the backends a finding involves."""
    directory = Path(directory)
    keep_kinds, keep_backends = set(kinds), set(backends)
    doomed = [directory / name for kind, name in ARTIFACT_FILES.items() if kind != "keras" and kind not in keep_kinds]
    outputs = directory / OUTPUTS_DIR
    if outputs.is_dir():
        doomed += [path for path in outputs.glob("*.npz") if path.stem not in keep_backends]
    freed = 0
    for path in doomed:
        try:
            size = path.stat().st_size
            path.unlink()
            freed += size
        except FileNotFoundError:
            continue
    return freed
