"""LEMON-style operators (ablation baseline) and the weight edits they record."""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from memo.model.build import infer_shapes
from memo.model.files import load_model_file, save_keras_artifact
from memo.model.ir import Layer, ModelIR
from memo.mutation import LEMON_OPERATORS, mutate


def conv_net() -> ModelIR:
    """Weighted layers, activations and shape-preserving layers: a site for every LEMON operator."""
    return ModelIR(layers=[
        Layer("x", "InputLayer", {"batch_shape": [None, 12, 12, 3], "dtype": "float32"}),
        Layer("stem", "Conv2D", {"filters": 8, "kernel_size": [3, 3], "padding": "same", "activation": "relu"},
              ["x"]),
        Layer("bn", "BatchNormalization", {}, ["stem"]),
        Layer("act", "ReLU", {}, ["bn"]),
        Layer("conv_a", "Conv2D", {"filters": 8, "kernel_size": [3, 3], "padding": "same", "activation": "tanh"},
              ["act"]),
        Layer("add", "Add", {}, ["act", "conv_a"], call_style="list"),
        Layer("gap", "GlobalAveragePooling2D", {}, ["add"]),
        Layer("out", "Dense", {"units": 20, "activation": "softmax"}, ["gap"]),
    ], outputs=["out"], name="lemon_net")


@pytest.mark.parametrize("operator", LEMON_OPERATORS)
def test_lemon_operators_make_valid_deterministic_mutants(operator: str) -> None:
    ir = conv_net()
    first = mutate(ir, operator, random.Random(4), None)
    again = mutate(ir, operator, random.Random(4), None)
    assert first.ir.dumps() == again.ir.dumps()
    assert first.ir.dumps() != ir.dumps() and first.changes
    infer_shapes(first.ir)  # builds in Keras
    assert ModelIR.loads(first.ir.dumps()).dumps() == first.ir.dumps()


def test_weight_edits_change_exactly_the_chosen_units(tmp_path: Path) -> None:
    ir = conv_net()
    mutant = mutate(ir, "LEMON-NEB", random.Random(1), None).ir
    (edit,) = mutant.weight_edits
    save_keras_artifact(ir, tmp_path / "parent.keras", seed=3)
    save_keras_artifact(mutant, tmp_path / "mutant.keras", seed=3)
    parent_w = load_model_file(tmp_path / "parent.keras").weights[edit["layer"]]
    mutant_w = load_model_file(tmp_path / "mutant.keras").weights[edit["layer"]]
    blocked = mutant_w[0][..., edit["units"]]
    assert np.all(blocked == 0) and not np.all(parent_w[0][..., edit["units"]] == 0)
    others = [u for u in range(parent_w[0].shape[-1]) if u not in edit["units"]]
    assert np.array_equal(parent_w[0][..., others], mutant_w[0][..., others])


def test_activation_removal_makes_an_activation_linear() -> None:
    mutant = mutate(conv_net(), "LEMON-AFRm", random.Random(2), None)
    (change,) = [c for c in mutant.changes if c["action"] == "set_param"]
    assert change["new"] == "linear" and change["old"] != "linear"
    assert mutant.ir.get(change["node"]).config["activation"] == "linear"
