"""Between memo's IR and real Keras objects: build, infer shapes, generate weights, load and save files.

This module imports Keras lazily. In the orchestrator Keras runs on its numpy backend (see
``memo/__init__.py``): enough to build a model symbolically (shape inference, which is how mutants are
validated), to draw deterministic weights, and to write the ``.keras`` artifact that every backend
loads. No library under test is imported here.
"""
from __future__ import annotations

import contextlib
import json
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from memo.errors import InvalidModelError, ModelLoadError
from memo.model.ir import ModelIR, input_dtype, input_shape

Weights = dict[str, list[np.ndarray]]
Shape = tuple[int | None, ...]

# Class names whose configs carry Python code: never deserialized unless the user allows it.
CODE_CARRYING_LAYERS = frozenset({"Lambda", "TFOpLambda", "SlicingOpLambda"})


def _keras() -> Any:
    import warnings  # noqa: PLC0415

    import keras  # noqa: PLC0415  (imported lazily: ~1.5 s on the numpy backend)

    # Symbolic builds of mutants trigger Keras's advice (masks dropped, layers unbuilt...): noise here.
    warnings.filterwarnings("ignore", category=UserWarning, module=r"keras(\.|$)")
    _keep_tensorflow_out(keras)
    return keras


def keras_module() -> Any:
    """Keras, imported the orchestrator's way (numpy backend, TensorFlow kept out, build warnings off)."""
    return _keras()


@contextlib.contextmanager
def weights_deferred() -> Iterator[None]:
    """Build layers symbolically without drawing or allocating their weights (most of a numpy-backend
    build's time; shapes and weight counts do not depend on weight values).

    Inside Keras's StatelessScope, variables made from an initializer are only registered, in a global
    list, for later initialization; the list is restored to a copy taken on entry, so nothing registered
    here accumulates (the scope appends to the list that is there, so restoring that same object would not).
    """
    keras = _keras()
    from keras.src.backend.common import global_state  # noqa: PLC0415

    pending = list(global_state.get_global_attribute("uninitialized_variables", [], set_to_default=True))
    try:
        with keras.StatelessScope(initialize_variables=False):
            yield
    finally:
        global_state.set_global_attribute("uninitialized_variables", pending)


def allow_unsafe_deserialization() -> None:
    """Let Keras deserialize layers that carry Python code (Lambda). Only on the user's explicit request."""
    _keras().config.enable_unsafe_deserialization()


def _keep_tensorflow_out(keras: Any) -> None:
    """On the numpy backend, stop Keras from importing TensorFlow just because it is installed.

    Keras's serializer asks ``tf.available`` (importing TensorFlow, 3+ s and hundreds of MB) merely
    to check ``isinstance(obj, tf.TensorShape)``. The orchestrator must stay free of every library
    under test, so we tell Keras's lazy module that TensorFlow is absent.
    """
    import os
    import sys

    if keras.backend.backend() != "numpy" or "tensorflow" in sys.modules:
        return
    if os.environ.get("KERAS_BACKEND", "numpy") != "numpy":
        return
    from keras.src.utils import module_utils  # noqa: PLC0415

    module_utils.tensorflow._available = False


@dataclass
class LoadedModel:
    """A model read from a user's file: its graph, and its weights if the file had any."""

    ir: ModelIR
    weights: Weights | None
    source: Path


# ---------------------------------------------------------------------------- building
def deserialize_layer(keras: Any, layer: Any) -> Any:
    """A Keras layer object from an IR node (its class, module and config), not yet called on anything."""
    conf = dict(layer.config)
    conf["name"] = layer.name
    return keras.layers.deserialize({"module": layer.module, "class_name": layer.class_name, "config": conf,
                                     "registered_name": None})


def build_keras_model(ir: ModelIR) -> Any:
    """Build the functional Keras model of ``ir``; :class:`InvalidModelError` names the layer Keras rejected."""
    keras = _keras()
    tensors: dict[str, Any] = {}
    for layer in ir.layers:
        try:
            if layer.is_input:
                tensors[layer.name] = keras.Input(batch_shape=input_shape(layer), dtype=input_dtype(layer),
                                                  name=layer.name)
                continue
            obj = deserialize_layer(keras, layer)
            args = [tensors[src] for src in layer.inputs]
            if layer.call_style == "list":
                out = obj(args, **layer.call_kwargs)
            else:
                out = obj(*args, **layer.call_kwargs)
        except InvalidModelError:
            raise
        except Exception as exc:  # Keras raises ValueError, TypeError, KeyError... at build time
            raise InvalidModelError(f"layer {layer.name!r} ({layer.class_name}): {one_line(exc)}") from exc
        if isinstance(out, (list, tuple)):
            raise InvalidModelError(f"layer {layer.name!r} ({layer.class_name}) returns several tensors; "
                                    "memo needs one output per layer")
        tensors[layer.name] = out
    try:
        return keras.Model(inputs=[tensors[layer.name] for layer in ir.input_layers],
                           outputs=[tensors[name] for name in ir.outputs], name=ir.name)
    except Exception as exc:
        raise InvalidModelError(f"model assembly: {one_line(exc)}") from exc


def infer_shapes(ir: ModelIR) -> dict[str, Shape]:
    """Output shape (batch dimension first, ``None``) of every node, by symbolic build."""
    model = build_keras_model(ir)
    return shapes_of(model)


def shapes_of(model: Any) -> dict[str, Shape]:
    out: dict[str, Shape] = {}
    for layer in model.layers:
        out[layer.name] = tuple(layer.output.shape)
    return out


# ---------------------------------------------------------------------------- weights
def generate_weights(model: Any, seed: int) -> Weights:
    """Deterministic weights for every layer of a built model.

    Each weight array gets its own generator keyed by (seed, layer name, index), so a layer's weights
    do not change when an unrelated layer is added or removed: a mutant keeps its parent's weights.
    Statistics that Keras initializes to constants (batch-norm moving mean/variance, biases, gammas) are
    randomized too, so that such layers are not an identity that hides bugs.
    """
    weights: Weights = {}
    for layer in model.layers:
        arrays = []
        for index, variable in enumerate(layer.weights):
            shape = tuple(int(d) for d in variable.shape)
            rng = np.random.default_rng([seed & 0xFFFFFFFF, zlib.crc32(layer.name.encode()), index])
            arrays.append(_draw(rng, _variable_name(variable), shape, str(variable.dtype)))
        if arrays:
            weights[layer.name] = arrays
    return weights


def _variable_name(variable: Any) -> str:
    return str(getattr(variable, "path", None) or getattr(variable, "name", "")).lower()


def _draw(rng: np.random.Generator, name: str, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if "int" in dtype or "bool" in dtype:
        return np.zeros(shape, dtype=dtype)
    leaf = name.rsplit("/", 1)[-1]
    if "variance" in leaf:
        values = rng.uniform(0.5, 1.5, shape)
    elif leaf in ("gamma", "scale") or leaf.endswith("gamma"):
        values = rng.uniform(0.5, 1.5, shape)
    elif "mean" in leaf or "beta" in leaf or "bias" in leaf or len(shape) <= 1:
        values = rng.normal(0.0, 0.1, shape)
    else:
        fan_out = shape[-1] if shape else 1
        fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        limit = float(np.sqrt(6.0 / max(1, fan_in + fan_out)))
        values = rng.uniform(-limit, limit, shape)
    return values.astype(dtype if dtype in ("float16", "float32", "float64") else "float32")


def _shuffle_units(arrays: list[np.ndarray], edit: dict[str, Any]) -> None:
    """LEMON's weight shuffling: permute the incoming weights of some output units of the kernel."""
    kernel = arrays[0]
    rng = np.random.default_rng(edit["seed"])
    flat = kernel.reshape(-1, kernel.shape[-1])
    for unit in edit["units"]:
        flat[:, unit % flat.shape[1]] = rng.permutation(flat[:, unit % flat.shape[1]])
    arrays[0] = flat.reshape(kernel.shape)


def _block_units(arrays: list[np.ndarray], edit: dict[str, Any]) -> None:
    """LEMON's neuron effect block: zero the incoming weights (and bias) of some output units."""
    for index, array in enumerate(arrays[:2]):
        if array.ndim >= 1 and (index == 0 or array.shape[-1] == arrays[0].shape[-1]):
            for unit in edit["units"]:
                array[..., unit % array.shape[-1]] = 0


WEIGHT_EDITS = {"shuffle": _shuffle_units, "block": _block_units}


def apply_weight_edits(weights: Weights, edits: list[dict[str, Any]]) -> None:
    """Apply ``ModelIR.weight_edits`` in place; an edit of a layer without weights is ignored."""
    for edit in edits:
        arrays = weights.get(edit["layer"])
        if arrays:
            WEIGHT_EDITS[edit["kind"]](arrays, edit)


def set_weights(model: Any, weights: Weights) -> None:
    for layer in model.layers:
        if layer.name in weights:
            layer.set_weights(weights[layer.name])


# ---------------------------------------------------------------------------- inputs
def make_inputs(ir: ModelIR, seed: int, batch: int = 2) -> dict[str, np.ndarray]:
    """Deterministic input arrays for every model input, keyed by input name.

    Floats are uniform in [-1, 1). Integer inputs feeding an Embedding stay below its ``input_dim``.
    """
    out: dict[str, np.ndarray] = {}
    consumers = ir.consumers()
    layers = ir.by_name()
    for position, layer in enumerate(ir.input_layers):
        shape = tuple(batch if d is None else int(d) for d in input_shape(layer))
        dtype = input_dtype(layer)
        rng = np.random.default_rng([seed & 0xFFFFFFFF, position])
        if "int" in dtype:
            limits = [layers[c].config.get("input_dim", 10) for c in consumers[layer.name]
                      if layers[c].class_name == "Embedding"]
            high = max(1, min(limits) if limits else 10)
            out[layer.name] = rng.integers(0, high, shape).astype(dtype)
        elif dtype == "bool":
            out[layer.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            out[layer.name] = rng.uniform(-1.0, 1.0, shape).astype(dtype)
    return out


# ---------------------------------------------------------------------------- files
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


def _refuse_code(config: dict[str, Any], path: Path, safe_mode: bool) -> None:
    if not safe_mode:
        return
    for item in config.get("layers", []):
        if item.get("class_name") in CODE_CARRYING_LAYERS:
            raise ModelLoadError(f"{path}: layer {item.get('name') or item['config'].get('name')!r} is a "
                                 f"{item['class_name']} (it carries Python code); rerun with --unsafe to allow it")


def _model_config(document: dict[str, Any]) -> dict[str, Any]:
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


def _load_keras_zip(path: Path, safe_mode: bool) -> LoadedModel:
    try:
        with zipfile.ZipFile(path) as archive:
            document = json.loads(archive.read("config.json"))
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError, OSError) as exc:
        raise ModelLoadError(f"{path}: not a valid .keras archive ({one_line(exc)})") from exc
    config = _model_config(document)
    _refuse_code(config, path, safe_mode)
    ir = ModelIR.from_keras_config(config)
    return LoadedModel(ir, _weights_via_keras(path, safe_mode), path)


def _load_h5(path: Path, safe_mode: bool) -> LoadedModel:
    try:
        import h5py  # noqa: PLC0415

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
    keras = _keras()
    try:
        model = keras.saving.load_model(path, compile=False, safe_mode=safe_mode)
    except Exception as exc:
        raise ModelLoadError(f"{path}: Keras could not load it ({one_line(exc)})") from exc
    return {layer.name: [np.asarray(w) for w in layer.get_weights()] for layer in model.layers if layer.weights}


def one_line(exc: BaseException) -> str:
    """An exception as one short line, ``Type: message``, for errors shown to the user."""
    text = " ".join(str(exc).split())
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
