"""The model IR (JSON and Keras config round trips, validation); building, weights, inputs, model files."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memo.errors import InvalidModelError, ModelLoadError
from memo.model import Layer, ModelIR
from memo.model.build import build_keras_model, infer_shapes
from memo.model.files import load_model_file, save_keras_artifact
from memo.model.inputs import make_inputs
from memo.model.weights import generate_weights


def _residual_ir() -> ModelIR:
    return ModelIR(
        layers=[
            Layer("x", "InputLayer", {"batch_shape": [None, 8, 8, 3], "dtype": "float32"}),
            Layer("conv", "Conv2D", {"filters": 3, "kernel_size": [3, 3], "padding": "same"}, ["x"]),
            Layer("add", "Add", {}, ["x", "conv"], call_style="list"),
            Layer("flat", "Flatten", {}, ["add"]),
            Layer("dense", "Dense", {"units": 4}, ["flat"]),
            Layer("unused", "ReLU", {}, ["conv"]),
        ],
        outputs=["dense"],
        name="residual",
    )


def test_json_round_trip_is_canonical() -> None:
    ir = _residual_ir()
    again = ModelIR.loads(ir.dumps())
    assert again.dumps() == ir.dumps()
    assert [layer.call_style for layer in again] == ["single", "single", "list", "single", "single", "single"]


def test_keras_config_round_trip_keeps_graph() -> None:
    ir = _residual_ir()
    again = ModelIR.from_keras_config(ir.to_keras_config())
    assert again.dumps() == ir.dumps()


def test_edges_consumers_and_prune() -> None:
    ir = _residual_ir()
    assert ("x", "add") in ir.edges() and ("conv", "add") in ir.edges()
    assert ir.consumers()["conv"] == ["add", "unused"]
    ir.prune()
    assert "unused" not in ir.by_name()
    assert ir.fresh_name("conv") == "conv_1" and ir.fresh_name("new") == "new"


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda ir: ir.layers.append(Layer("conv", "ReLU", {}, ["x"])), "duplicate"),
        (lambda ir: ir.layers[1].inputs.__setitem__(0, "nowhere"), "not defined"),
        (lambda ir: ir.outputs.append("ghost"), "output"),
        (lambda ir: setattr(ir.layers[2], "call_style", "weird"), "call style"),
    ],
)
def test_validate_rejects_broken_graphs(mutate, message: str) -> None:
    ir = _residual_ir()
    mutate(ir)
    with pytest.raises(InvalidModelError, match=message):
        ir.validate()


def test_toposort_orders_and_detects_cycles() -> None:
    ir = _residual_ir()
    ir.layers.reverse()
    ir.toposort()
    names = [layer.name for layer in ir]
    assert names.index("x") < names.index("conv") < names.index("add") < names.index("dense")
    ir.get("conv").inputs = ["add"]
    with pytest.raises(InvalidModelError, match="cycle"):
        ir.toposort()


def test_build_infers_shapes_and_names_the_bad_layer() -> None:
    ir = _residual_ir()
    shapes = infer_shapes(ir)
    assert shapes["add"] == (None, 8, 8, 3)
    assert shapes["dense"] == (None, 4)
    ir.get("conv").config["padding"] = "valid"  # 6x6 output can no longer be added to the 8x8 input
    with pytest.raises(InvalidModelError, match="'add'"):
        infer_shapes(ir)


def test_weights_and_inputs_are_deterministic(tmp_path: Path) -> None:
    ir = _residual_ir()
    first = generate_weights(build_keras_model(ir), seed=7)
    second = generate_weights(build_keras_model(ir), seed=7)
    other = generate_weights(build_keras_model(ir), seed=8)
    assert all(np.array_equal(a, b) for a, b in zip(first["conv"], second["conv"]))
    assert not np.array_equal(first["conv"][0], other["conv"][0])
    assert np.any(first["conv"][1] != 0), "biases are randomized so they are not an identity"
    inputs = make_inputs(ir, seed=3)
    assert inputs["x"].shape == (2, 8, 8, 3) and np.array_equal(inputs["x"], make_inputs(ir, seed=3)["x"])


def test_a_wrapped_layer_is_named_the_same_in_every_build() -> None:
    """The layer a wrapper holds has no IR name: Keras names it from a per-process counter, which must not
    make a later build of the same IR differ from the first (Keras's ONNX export depends on those names)."""
    ir = ModelIR(layers=[Layer("x", "InputLayer", {"batch_shape": [None, 5, 4], "dtype": "float32"}),
                         Layer("wrapped", "TimeDistributed", {"layer": {"class_name": "Dense", "module": "keras.layers",
                                                                        "config": {"units": 3},
                                                                        "registered_name": None}}, ["x"])],
                 outputs=["wrapped"], name="wrapper")
    names = [build_keras_model(ir).get_layer("wrapped").layer.name for _ in range(3)]
    assert names == ["dense", "dense", "dense"]


def test_save_and_load_keras_artifact_keeps_weights(tmp_path: Path) -> None:
    ir = _residual_ir().prune()
    path = tmp_path / "m.keras"
    save_keras_artifact(ir, path, seed=5)
    loaded = load_model_file(path)
    assert [(l.name, l.class_name, l.inputs) for l in loaded.ir] == [(l.name, l.class_name, l.inputs) for l in ir]
    assert loaded.ir.get("conv").config["padding"] == "same"  # Keras adds defaults; declared values survive
    expected = generate_weights(build_keras_model(ir), seed=5)
    assert np.allclose(loaded.weights["dense"][0], expected["dense"][0])


def test_load_refuses_lambda_and_bad_files(tmp_path: Path) -> None:
    config = _residual_ir().prune().to_keras_config()
    config["layers"][3]["class_name"] = "Lambda"
    lam = tmp_path / "lambda.json"
    lam.write_text(json.dumps({"class_name": "Functional", "config": config}))
    with pytest.raises(ModelLoadError, match="Lambda"):
        load_model_file(lam)
    bad = tmp_path / "bad.keras"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ModelLoadError, match="not a valid .keras"):
        load_model_file(bad)
    with pytest.raises(ModelLoadError, match="no such file"):
        load_model_file(tmp_path / "missing.h5")
    with pytest.raises(ModelLoadError, match="unknown model format"):
        load_model_file(lam.with_suffix(".txt").touch() or lam.with_suffix(".txt"))


def test_sequential_config_is_read() -> None:
    config = {"name": "seq", "layers": [
        {"class_name": "InputLayer", "config": {"batch_shape": [None, 5], "dtype": "float32", "name": "in"}},
        {"class_name": "Dense", "config": {"units": 3, "name": "d1"}},
        {"class_name": "ReLU", "config": {"name": "r"}},
    ]}
    ir = ModelIR.from_keras_config(config)
    assert [layer.inputs for layer in ir] == [[], ["in"], ["d1"]] and ir.outputs == ["r"]


def test_keras_attr_skipset_cache_hits(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """memo's fix of Keras's never-hitting cache (memo.model.keras_runtime.cache_attr_skipsets): the set is
    Keras's own, computed once per type, and saving and loading a model builds no throw-away Layer for it."""
    from memo.model.keras_runtime import keras_module

    keras_module()  # applies the fix, as in every memo process that imports Keras
    from keras.src.layers.layer import Layer
    from keras.src.saving import saving_lib

    skipset = saving_lib.get_attr_skipset("Layer")
    assert skipset == {"_self_unconditional_dependency_names", *dir(Layer())}
    made: list[str] = []
    original_init = Layer.__init__

    def counting_init(self: Layer, *args: object, **kwargs: object) -> None:
        made.append(type(self).__name__)
        original_init(self, *args, **kwargs)

    monkeypatch.setattr(Layer, "__init__", counting_init)
    assert saving_lib.get_attr_skipset("Layer") is skipset
    saving_lib.get_attr_skipset("Functional")
    made.clear()
    save_keras_artifact(_residual_ir(), tmp_path / "m.keras", seed=0)
    load_model_file(tmp_path / "m.keras")
    assert made and "Layer" not in made  # the model's own layer classes only, no bare Layer() per saved object
