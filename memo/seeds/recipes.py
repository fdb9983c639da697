"""Seed recipes: small JSON files naming a whitelisted Keras architecture builder and its arguments.

The published ImageNet architectures are hundreds of layers; their Keras JSON is 100-900 KB each. A
recipe (``{"format": "memo-seed/1", "builder": "keras.applications.ResNet50", "kwargs": {...}}``)
records the same architecture in a few lines and is built on load with ``weights=None`` (nothing can be
downloaded, and weights are generated deterministically later). A recipe can only name a builder from
:data:`BUILDERS` and only pass the arguments in :data:`ALLOWED_KWARGS`: it never names arbitrary code.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

import memo
from memo.errors import ModelLoadError, one_line
from memo.json_types import JsonObject
from memo.model.ir import Layer, ModelIR
from memo.model.keras_runtime import keras_module

RECIPE_FORMAT = "memo-seed/1"

# recipe builder name -> attribute of keras.applications
BUILDERS: dict[str, str] = {f"keras.applications.{name}": name for name in (
    "DenseNet121", "DenseNet169", "DenseNet201", "InceptionResNetV2", "InceptionV3", "MobileNet", "MobileNetV2",
    "MobileNetV3Small", "MobileNetV3Large", "NASNetMobile", "ResNet50", "ResNet101", "ResNet152", "ResNet50V2",
    "VGG16", "VGG19", "Xception", "EfficientNetB0", "ConvNeXtTiny")}
ALLOWED_KWARGS = frozenset({"input_shape", "classes", "include_top", "pooling", "classifier_activation", "alpha"})


def is_recipe(document: Any) -> bool:
    return isinstance(document, dict) and document.get("format") == RECIPE_FORMAT


def cached_recipe(document: JsonObject, path: Path, cache_dir: Path | None) -> ModelIR:
    """:func:`build_recipe`, through a cache keyed by the recipe, memo's and Keras's versions.

    Building the applications takes seconds (Keras draws their initial weights); the IR loads in milliseconds.
    """
    if cache_dir is None:
        return build_recipe(document, path)
    key = hashlib.sha256(json.dumps([document, memo.__version__, importlib.metadata.version("keras")],
                                    sort_keys=True).encode()).hexdigest()[:16]
    entry = Path(cache_dir) / f"{path.stem}-{key}.json"
    if entry.is_file():
        try:
            return ModelIR.loads(entry.read_text())
        except (OSError, ValueError, ModelLoadError):
            pass  # a damaged entry is rebuilt
    ir = build_recipe(document, path)
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = entry.with_suffix(".tmp")
    tmp.write_text(ir.dumps())
    tmp.replace(entry)
    return ir


def build_recipe(document: JsonObject, path: Path) -> ModelIR:
    """The IR of the architecture a recipe names (built with ``weights=None``, then normalized)."""
    builder = document.get("builder")
    if builder not in BUILDERS:
        raise ModelLoadError(f"{path}: builder {builder!r} is not allowed in a seed recipe "
                             f"(allowed: {', '.join(sorted(BUILDERS))})")
    kwargs = document.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise ModelLoadError(f"{path}: 'kwargs' must be an object")
    extra = sorted(set(kwargs) - ALLOWED_KWARGS)
    if extra:
        raise ModelLoadError(f"{path}: recipe argument(s) {', '.join(extra)} not allowed "
                             f"(allowed: {', '.join(sorted(ALLOWED_KWARGS))})")
    if "input_shape" in kwargs:
        kwargs = {**kwargs, "input_shape": tuple(kwargs["input_shape"])}
    keras = keras_module()
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            model = getattr(keras.applications, BUILDERS[builder])(weights=None, **kwargs)
    except Exception as exc:
        raise ModelLoadError(f"{path}: {builder} rejected its arguments ({one_line(exc)})") from exc
    ir = ModelIR.from_keras_config(model.get_config())
    ir.name = str(document.get("name") or path.stem)
    return normalize(ir)


# ---------------------------------------------------------------------------- normalization
def _custom_scale_to_rescaling_add(ir: ModelIR, layer: Layer) -> list[Layer]:
    """InceptionResNetV2's ``CustomScaleLayer(scale)([x, r])`` computes ``x + scale * r``.

    It is a private class of ``keras.src.applications`` (a Lambda layer in Keras 2), outside the layer
    catalogue; the same function from built-in layers is ``Add([x, Rescaling(scale)(r)])``.
    """
    if len(layer.inputs) != 2:
        raise ModelLoadError(f"layer {layer.name!r} (CustomScaleLayer) expects two inputs")
    common = {key: layer.config[key] for key in ("trainable", "dtype") if key in layer.config}
    scaled = Layer(name=ir.fresh_name(f"{layer.name}_rescale"), class_name="Rescaling",
                   config={**common, "scale": layer.config["scale"], "offset": 0.0}, inputs=[layer.inputs[1]])
    add = Layer(name=layer.name, class_name="Add", config=common, inputs=[layer.inputs[0], scaled.name],
                call_style="list")
    return [scaled, add]


# class name -> rewrite of one node into equivalent built-in layers
REWRITES: dict[str, Callable[[ModelIR, Layer], list[Layer]]] = {
    "CustomScaleLayer": _custom_scale_to_rescaling_add,
}


def normalize(ir: ModelIR) -> ModelIR:
    """Replace known non-catalogue application layers by equivalent built-in ones. In place."""
    if not any(layer.class_name in REWRITES for layer in ir.layers):
        return ir
    new_layers: list[Layer] = []
    for layer in ir.layers:
        rewrite = REWRITES.get(layer.class_name)
        if rewrite is None:
            new_layers.append(layer)
            continue
        new_layers.extend(rewrite(ir, layer))
    ir.layers = new_layers
    ir.validate()
    return ir
