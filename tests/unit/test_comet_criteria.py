"""benchmarks/comet_criteria.py: COMET's layer type, pair and parameter criteria (pure functions, no Keras)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from memo.model.ir import Layer, ModelIR

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "comet_criteria.py"


@pytest.fixture(scope="module")
def comet():
    spec = importlib.util.spec_from_file_location("comet_criteria", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_denominators_are_comets(comet):
    assert len(comet.LAYERS) == len(set(comet.LAYERS)) == 67
    assert len(comet.pair_space()) == 2170 and comet.parameter_space() == 2049
    totals = {name: sum(5 if size is None else size for size in params.values()) for name, params in comet.POOL.items()}
    assert (totals["Conv1D"], totals["SeparableConv1D"], totals["LSTM"], totals["GRU"], totals["ConvLSTM2D"],
            totals["BatchNormalization"], totals["PReLU"], totals["Dropout"]) == (83, 113, 120, 118, 135, 86, 23, 0)
    space = comet.pair_space()
    assert ("Conv2D", "MaxPooling2D") in space and ("Conv2D", "Conv1D") not in space
    assert ("GlobalMaxPooling2D", "Dropout") in space and ("ConvLSTM2D", "Conv2D") in space  # rank 2 / rank 4 out
    assert not any(a in comet.NOT_IN_PAIRS or b in comet.NOT_IN_PAIRS for a, b in space)


def _model() -> ModelIR:
    ir = ModelIR(layers=[
        Layer("x", "InputLayer", {"batch_shape": [None, 8, 8, 3], "dtype": "float32"}),
        Layer("conv", "Conv2D", {"filters": 4, "kernel_size": [3, 3], "activation": "relu"}, ["x"]),
        Layer("drop", "Dropout", {"rate": 0.5}, ["conv"]),
        Layer("add", "Add", {}, ["drop", "conv"], call_style="list"),
        Layer("perm", "Permute", {"dims": [2, 1, 3]}, ["add"]),
        Layer("rescale", "Rescaling", {"scale": 2.0}, ["perm"]),
        Layer("flat", "Flatten", {}, ["rescale"]),
        Layer("dense", "Dense", {"units": 2}, ["flat"]),
    ], outputs=["dense"])
    ir.validate()
    return ir


def test_types_and_pairs_follow_comets_trimming(comet):
    ir = _model()
    assert comet.model_types(ir) == {"Conv2D", "Dropout", "Add", "Permute", "Flatten"}  # Dense, Rescaling: not listed
    # Add and Dense never pair; Rescaling is outside the list; Conv2D -> Dropout is COMET's kind of pair
    assert comet.model_pairs(ir) == {("Conv2D", "Dropout")}
    figures = comet.measure([ir, ir])
    assert figures["models"] == 2 and figures["types"] == [5, 67] and figures["pairs"] == [1, 2170]
    assert figures["pairs_outside_space"] == [] and figures["pairs_in_space"] == [1, 2170]


def test_parameter_count_is_comets_hp(comet):
    relus = [{"max_value": float(v), "negative_slope": 0.0, "threshold": 0} for v in range(8)]
    assert comet.parameter_count("ReLU", relus) == 6 + 1 + 1  # numeric: up to 6 values (COMET's off-by-one)
    assert comet.parameter_count("ReLU", relus, capped=True) == 5 + 1 + 1
    convs = [{"filters": f, "activation": a, "kernel_size": (3, 3)} for f, a in
             enumerate(["relu", "elu", "gelu", "silu", "mish", "swish", "tanh", "sigmoid", "selu", "softplus",
                        "softsign", "linear", "hard_silu"])]
    convs.append({"activation": "relu", "kernel_size": [3, 3]})  # same values: tuple and list compare equal
    # activation: 13 distinct values against a list of 11 (COMET does not cap); filters never counts
    assert comet.parameter_count("Conv2D", convs) == 13 + 1
    assert comet.parameter_count("Conv2D", convs, capped=True) == 11 + 1
    assert comet.parameter_count("LeakyReLU", [{"negative_slope": 0.2}, {"negative_slope": 0.3}]) == 2
    assert comet.value_key(1) == comet.value_key(1.0) and comet.value_key(None) != comet.value_key(0)
    assert comet.parameter_count("Conv2D", [{"kernel_regularizer": None}]) == 1  # defaults count, as in COMET


def test_measure_uses_the_full_config(comet):
    ir = _model()
    bare = comet.measure([ir])["params"][0]
    full = comet.measure([ir], lambda cls, config: {**config, "data_format": "channels_last", "use_bias": True}
                         if cls == "Conv2D" else config)["params"][0]
    assert full == bare + 2
