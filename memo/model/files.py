"""Model files: saving the ``.keras`` artifact, and loading ``.keras``, ``.h5`` and JSON model files safely.

Keras comes from :func:`memo.model.keras_runtime.keras_module` only when a file's weights are read or an
artifact is written.
"""
from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from memo.errors import ModelLoadError, one_line
from memo.json_types import JsonObject
from memo.model.build import build_keras_model
from memo.model.ir import ModelIR
from memo.model.keras_runtime import keras_module
from memo.model.weight_edits import apply_weight_edits
from memo.model.weights import Weights, generate_weights, set_weights

# Class names whose configs carry Python code: never deserialized unless the user allows it.
CODE_CARRYING_LAYERS = frozenset({"Lambda", "TFOpLambda", "SlicingOpLambda"})


@dataclass
class LoadedModel:
    """A model read from a user's file: its graph, and its weights if the file had any."""

    ir: ModelIR
    weights: Weights | None
    source: Path


def save_keras_artifact(ir: ModelIR, path: Path, *, seed: int = 0, weights: Weights | None = None) -> Any:
    """Build ``ir``, give it ``weights`` (or deterministic ones from ``seed``) and save it as ``.keras``.

    Returns the built model. Layers missing from ``weights`` get generated weights.
    """
    model = build_keras_model(ir)
    generated = generate_weights(model, seed)
    if weights:
        generated.update({name: arrays for name, arrays in weights.items() if name in generated})
    apply_weight_edits(generated, ir.weight_edits)
    set_weights(model, generated)
    path.parent.mkdir(parents=True, exist_ok=True)
    model.save(path)
    return model


def load_model_file(path: Path | str, *, safe_mode: bool = True) -> LoadedModel:
    """Read a ``.keras``, ``.h5`` or JSON (Keras architecture or memo IR) model file.

    With ``safe_mode`` (the default) nothing from the file is executed: a layer carrying Python code
    (Lambda) is refused before Keras sees it. Errors are :class:`ModelLoadError` with a one-line message.
    """
    path = Path(path)
    if not path.exists():
        raise ModelLoadError(f"{path}: no such file")
    if path.is_dir():
        raise ModelLoadError(f"{path}: is a directory, expected a .keras, .h5 or .json model file")
    suffix = path.suffix.lower()
    readers = {".json": _load_json, ".keras": _load_keras_zip, ".h5": _load_h5, ".hdf5": _load_h5}
    reader = readers.get(suffix)
    if reader is None:
        raise ModelLoadError(f"{path}: unknown model format {suffix!r} (expected .keras, .h5 or .json)")
    return reader(path, safe_mode)


def _refuse_code(config: JsonObject, path: Path, safe_mode: bool) -> None:
    if not safe_mode:
        return
    for item in config.get("layers", []):
        if item.get("class_name") in CODE_CARRYING_LAYERS:
            raise ModelLoadError(f"{path}: layer {item.get('name') or item['config'].get('name')!r} is a "
                                 f"{item['class_name']} (it carries Python code); rerun with --unsafe to allow it")


def _model_config(document: JsonObject) -> JsonObject:
    """Accept ``model.to_json()`` output ({class_name, config}) as well as a bare functional config."""
    if "config" in document and "class_name" in document and isinstance(document["config"], dict):
        if document["class_name"] not in ("Functional", "Model", "Sequential"):
            raise ModelLoadError(f"top-level object is a {document['class_name']}, not a model")
        return document["config"]
    return document


def _load_json(path: Path, safe_mode: bool) -> LoadedModel:
    try:
        document = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelLoadError(f"{path}: not valid JSON ({one_line(exc)})") from exc
    if not isinstance(document, dict):
        raise ModelLoadError(f"{path}: expected a JSON object")
    if document.get("format", "").startswith("memo-ir/"):
        return LoadedModel(ModelIR.from_json(document), None, path)
    config = _model_config(document)
    _refuse_code(config, path, safe_mode)
    return LoadedModel(ModelIR.from_keras_config(config), None, path)


def keras_zip_config(path: Path) -> JsonObject:
    """The model config a ``.keras`` archive holds, read without Keras."""
    try:
        with zipfile.ZipFile(path) as archive:
            document = json.loads(archive.read("config.json"))
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError, OSError) as exc:
        raise ModelLoadError(f"{path}: not a valid .keras archive ({one_line(exc)})") from exc
    return _model_config(document)


def saved_outputs(path: Path) -> list[str] | None:
    """The output layers a ``.keras`` archive's config names (None: unreadable)."""
    try:
        return [str(ref[0]) for ref in keras_zip_config(path)["output_layers"]]
    except (ModelLoadError, KeyError, TypeError, IndexError):
        return None


def _load_keras_zip(path: Path, safe_mode: bool) -> LoadedModel:
    config = keras_zip_config(path)
    _refuse_code(config, path, safe_mode)
    ir = ModelIR.from_keras_config(config)
    return LoadedModel(ir, _weights_via_keras(path, safe_mode), path)


def _load_h5(path: Path, safe_mode: bool) -> LoadedModel:
    try:
        with h5py.File(path, "r") as handle:
            raw = handle.attrs.get("model_config")
    except OSError as exc:
        raise ModelLoadError(f"{path}: not a valid HDF5 file ({one_line(exc)})") from exc
    if raw is None:
        raise ModelLoadError(f"{path}: HDF5 file holds no model config (weights-only file?)")
    document = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
    config = _model_config(document)
    _refuse_code(config, path, safe_mode)
    ir = ModelIR.from_keras_config(config)
    return LoadedModel(ir, _weights_via_keras(path, safe_mode), path)


def _weights_via_keras(path: Path, safe_mode: bool) -> Weights:
    keras = keras_module()
    try:
        model = keras.saving.load_model(path, compile=False, safe_mode=safe_mode)
    except Exception as exc:
        raise ModelLoadError(f"{path}: Keras could not load it ({one_line(exc)})") from exc
    return {layer.name: [np.asarray(w) for w in layer.get_weights()] for layer in model.layers if layer.weights}
