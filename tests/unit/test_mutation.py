"""The mutation operators on small models: every mutant builds, lineage is recorded, results are
deterministic, coverage preferences hold, NaN injection really yields NaN/Inf, and the CLI writes mutants."""
from __future__ import annotations

import json
import random
import re
from pathlib import Path

import numpy as np
import pytest

from memo.cli import main as cli_main
from memo.coverage import Coverage, CoverageTracker
from memo.errors import InvalidModelError, UsageError
from memo.layers import CATALOGUE
from memo.model.build import build_keras_model, infer_shapes
from memo.model.inputs import make_inputs
from memo.model.ir import Layer, ModelIR
from memo.model.weights import generate_weights, set_weights
from memo.mutation import (DEFAULT_OPERATORS, EXTRA_OPERATORS, LEMON_OPERATORS, MEMO_OPERATORS, OPERATORS,
                           MutationFailed, MutationOperator, mutate, operator_names)
from memo.mutation.base import register


def lenet() -> ModelIR:
    return ModelIR(layers=[
        Layer("x", "InputLayer", {"batch_shape": [None, 28, 28, 1], "dtype": "float32"}),
        Layer("conv1", "Conv2D", {"filters": 6, "kernel_size": [5, 5], "activation": "relu"}, ["x"]),
        Layer("pool1", "MaxPooling2D", {"pool_size": [2, 2]}, ["conv1"]),
        Layer("conv2", "Conv2D", {"filters": 16, "kernel_size": [5, 5], "activation": "relu"}, ["pool1"]),
        Layer("pool2", "MaxPooling2D", {"pool_size": [2, 2]}, ["conv2"]),
        Layer("flat", "Flatten", {}, ["pool2"]),
        Layer("fc1", "Dense", {"units": 32, "activation": "relu"}, ["flat"]),
        Layer("fc2", "Dense", {"units": 10, "activation": "softmax"}, ["fc1"]),
    ], outputs=["fc2"], name="lenet")


def residual_net() -> ModelIR:
    return ModelIR(layers=[
        Layer("x", "InputLayer", {"batch_shape": [None, 16, 16, 3], "dtype": "float32"}),
        Layer("stem", "Conv2D", {"filters": 8, "kernel_size": [3, 3], "padding": "same"}, ["x"]),
        Layer("bn", "BatchNormalization", {}, ["stem"]),
        Layer("relu", "ReLU", {}, ["bn"]),
        Layer("conv_a", "Conv2D", {"filters": 8, "kernel_size": [3, 3], "padding": "same"}, ["relu"]),
        Layer("add", "Add", {}, ["relu", "conv_a"], call_style="list"),
        Layer("gap", "GlobalAveragePooling2D", {}, ["add"]),
        Layer("out", "Dense", {"units": 4}, ["gap"]),
    ], outputs=["out"], name="resnet_tiny")


def lstm_regressor() -> ModelIR:
    return ModelIR(layers=[
        Layer("seq", "InputLayer", {"batch_shape": [None, 12, 5], "dtype": "float32"}),
        Layer("lstm", "LSTM", {"units": 8, "return_sequences": True}, ["seq"]),
        Layer("lstm2", "LSTM", {"units": 8}, ["lstm"]),
        Layer("head", "Dense", {"units": 1}, ["lstm2"]),
    ], outputs=["head"], name="lstm_regressor")


MODELS = {"lenet": lenet, "resnet": residual_net, "lstm": lstm_regressor}


def test_registry_names_match_the_published_api() -> None:
    assert MEMO_OPERATORS == ("NLA", "LResh", "LMerg", "LConn", "CShape", "CMode", "NaN")
    assert set(OPERATORS) == set(MEMO_OPERATORS) | set(EXTRA_OPERATORS) | set(LEMON_OPERATORS)


def test_the_operator_order_stays_what_campaigns_were_generated_with() -> None:
    """The default operators are the search's arms in this order: another order gives a seed other mutants."""
    assert EXTRA_OPERATORS == ("LRemove", "ERemove", "TSM", "DType", "SameInput", "Block", "Target")
    assert LEMON_OPERATORS == ("LEMON-WS", "LEMON-NEB", "LEMON-AFRm", "LEMON-AFRp", "LEMON-LC", "LEMON-LR")
    assert DEFAULT_OPERATORS == MEMO_OPERATORS + EXTRA_OPERATORS
    assert operator_names() == MEMO_OPERATORS + EXTRA_OPERATORS + LEMON_OPERATORS


@pytest.mark.parametrize("declared, complaint", [
    ({"name": "NLA", "position": 99}, "unique name"),
    ({"name": "Fresh", "position": 3}, "taken by LMerg; the next free one is 21"),
    ({"name": "Fresh", "position": 0}, "position of its own"),
    ({"name": "Fresh", "position": 99, "group": "default"}, "group 'default'"),
])
def test_a_registration_that_would_make_the_operator_order_ambiguous_is_refused(
        declared: dict[str, object], complaint: str) -> None:
    operator = type("Fresh", (MutationOperator,), declared)
    with pytest.raises(ValueError, match=re.escape(complaint)):
        register(operator)
    assert "Fresh" not in OPERATORS


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("op", MEMO_OPERATORS + EXTRA_OPERATORS)
def test_every_operator_gives_a_mutant_that_builds(op: str, model: str) -> None:
    parent = MODELS[model]()
    mutant = mutate(parent, op, random.Random(7), CoverageTracker(), parent=model)
    assert mutant.operator == op and mutant.parent == model and mutant.changes
    json.dumps(mutant.changes)  # lineage is JSON-able
    assert mutant.ir.dumps() != parent.dumps()
    shapes = infer_shapes(ModelIR.loads(mutant.ir.dumps()))  # rebuilt from its serialized form
    assert set(mutant.ir.outputs) <= set(shapes)


@pytest.mark.parametrize("op", ["NLA", "LMerg", "CShape", "TSM", "Block"])
def test_same_seed_gives_byte_identical_mutants(op: str) -> None:
    first = mutate(lenet(), op, random.Random(11), CoverageTracker())
    again = mutate(lenet(), op, random.Random(11), CoverageTracker())
    assert first.ir.dumps() == again.ir.dumps() and first.changes == again.changes
    others = {mutate(lenet(), op, random.Random(s), CoverageTracker()).ir.dumps() for s in range(4)}
    assert len(others) > 1


def test_weight_count_matches_keras_and_bounds_what_a_mutation_may_add(monkeypatch: pytest.MonkeyPatch) -> None:
    import memo.mutation as mutation
    from memo.mutation.analysis import analyse, weight_count

    parent = lenet()
    parent_weights = weight_count(analyse(parent))
    assert parent_weights == build_keras_model(parent).count_params() == 11_126
    def grown(seed: int) -> int:
        return weight_count(analyse(mutate(parent, "NLA", random.Random(seed), CoverageTracker()).ir)) - parent_weights

    assert max(grown(seed) for seed in range(12)) > 0, "unbounded, some NLA mutants add weights"
    monkeypatch.setattr(mutation, "MAX_WEIGHTS", 1)  # below the parent: a mutation may not grow it
    bounded = []
    for seed in range(12):
        try:
            bounded.append(grown(seed))
        except MutationFailed:  # every attempt grew it: no mutant is right too
            continue
    assert len(bounded) >= 6 and max(bounded) <= 0


def test_parent_is_left_untouched() -> None:
    parent = residual_net()
    before = parent.dumps()
    for op in ("NLA", "LConn", "LRemove", "TSM", "DType"):
        mutate(parent, op, random.Random(1), None)
    assert parent.dumps() == before


def _tracker_covering_all_but(types: set[str] = frozenset(), params: set = frozenset()) -> CoverageTracker:
    tracker = CoverageTracker()
    every_param = {(name, space.name, value) for name, spec in CATALOGUE.items()
                   for space in spec.params for value in space.values}
    tracker.add(Coverage(types=set(CATALOGUE) - set(types), params=every_param - set(params)))
    return tracker


def test_nla_prefers_the_layer_api_coverage_has_not_seen() -> None:
    tracker = _tracker_covering_all_but(types={"GaussianNoise"})
    for seed in range(3):
        mutant = mutate(lenet(), "NLA", random.Random(seed), tracker)
        assert "GaussianNoise" in {layer.class_name for layer in mutant.ir}


def test_cmode_prefers_an_uncovered_parameter_value() -> None:
    target = ("Dense", "kernel_initializer", "ones")
    assert "ones" in CATALOGUE["Dense"].param("kernel_initializer").values
    mutant = mutate(lenet(), "CMode", random.Random(2), _tracker_covering_all_but(params={target}))
    changed = [c for c in mutant.changes if c["action"] == "set_param"]
    assert changed[0]["param"] == "kernel_initializer" and changed[0]["value"] == "ones"
    assert changed[0]["class_name"] == "Dense"


def test_nan_injection_really_produces_nan_or_inf() -> None:
    parent = lenet()
    for seed in range(4):
        mutant = mutate(parent, "NaN", random.Random(seed), None)
        injected = [c for c in mutant.changes if c["action"] == "inject"]
        assert injected and injected[0]["value"] in ("nan", "inf")
        model = build_keras_model(mutant.ir)
        # read the injected tensor itself (the model output may be a softmax that hides it)
        probe_ir = mutant.ir.copy()
        probe_ir.outputs = [injected[0]["nodes"][-1]]
        probe = build_keras_model(probe_ir.prune())
        set_weights(probe, generate_weights(probe, 0))
        values = np.asarray(probe(make_inputs(mutant.ir, 0)))
        special = np.isnan(values) if injected[0]["value"] == "nan" else np.isinf(values)
        assert special.any(), injected[0]
        assert model is not None


def test_inapplicable_operator_raises_mutation_failed() -> None:
    single = ModelIR(layers=[Layer("x", "InputLayer", {"batch_shape": [None, 4], "dtype": "float32"}),
                             Layer("d", "Dense", {"units": 2}, ["x"])], outputs=["d"])
    with pytest.raises(MutationFailed):
        mutate(single, "LRemove", random.Random(0), None)
    with pytest.raises(UsageError, match="unknown mutation operator"):
        mutate(single, "Nope", random.Random(0), None)


def test_cli_writes_identical_mutants_for_the_same_seed(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    model_file = tmp_path / "lenet.json"
    model_file.write_text(lenet().dumps())
    for out in ("a", "b"):
        assert cli_main(["mutate", str(model_file), "--op", "LMerg", "-n", "2", "--seed", "5",
                         "--out", str(tmp_path / out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.split("\n}\n")[0] + "\n}")
    assert summary["written"] == 2 and summary["operator"] == "LMerg"
    for name in ("lenet-LMerg-000.json", "lenet-LMerg-001.json", "lineage.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    lineage = json.loads((tmp_path / "a" / "lineage.json").read_text())
    assert lineage["mutants"][0]["parent"] == "lenet" and lineage["mutants"][0]["changes"]
    assert cli_main(["mutate", str(model_file), "--op", "Nope", "--out", str(tmp_path / "c")]) == 2
    assert cli_main(["mutate", "no_such_seed", "--op", "NLA", "--out", str(tmp_path / "c")]) == 2
    assert "unknown seed" in capsys.readouterr().err


def test_incremental_verification_agrees_with_a_full_keras_build() -> None:
    from memo.errors import InvalidModelError
    from memo.mutation.analysis import analyse, verify

    parent = residual_net()
    parent_infos = analyse(parent)
    for op in ("NLA", "TSM", "CShape"):
        mutant = mutate(parent, op, random.Random(3), None).ir
        facts = verify(mutant, parent, parent_infos)
        assert {name: info.shape for name, info in facts.items()} == infer_shapes(mutant)
    broken = parent.copy()
    broken.get("conv_a").config = {**broken.get("conv_a").config, "kernel_size": [40, 40], "padding": "valid"}
    with pytest.raises(InvalidModelError, match="conv_a|Conv2D"):
        verify(broken, parent, parent_infos)


def test_a_layer_is_never_called_on_a_rank_the_catalogue_says_it_refuses_at_run_time() -> None:
    from memo.errors import InvalidModelError
    from memo.mutation.analysis import TensorInfo, call_layer

    assert 2 not in CATALOGUE["RandomTranslation"].input_ranks  # Keras's symbolic call would accept rank 2
    layer = Layer("t", "RandomTranslation", {"height_factor": 0.1, "width_factor": 0.1})
    with pytest.raises(InvalidModelError, match="rank"):
        call_layer(layer, [TensorInfo((None, 8), "float32")])
    assert call_layer(layer, [TensorInfo((None, 8, 8, 3), "float32")]).shape == (None, 8, 8, 3)


def _cost(layers: list[Layer]) -> int:
    from memo.mutation.analysis import analyse, compute_cost
    ir = ModelIR(layers=layers, outputs=[layers[-1].name], name="m")
    return compute_cost(ir, analyse(ir))


def test_compute_cost_counts_a_convolution_as_its_multiply_adds() -> None:
    image = Layer("x", "InputLayer", {"batch_shape": [None, 32, 32, 8], "dtype": "float32"})
    conv = Layer("c", "Conv2D", {"filters": 16, "kernel_size": [3, 3], "padding": "same"}, ["x"])
    macs = 32 * 32 * (3 * 3 * 8 * 16)
    assert macs <= _cost([image, conv]) <= 1.1 * macs


def test_compute_cost_charges_every_step_of_a_recurrent_layer_and_attention_quadratically() -> None:
    def lstm(steps: int) -> int:
        return _cost([Layer("s", "InputLayer", {"batch_shape": [None, steps, 4], "dtype": "float32"}),
                       Layer("l", "LSTM", {"units": 8}, ["s"])])
    assert lstm(40) >= 9 * lstm(4)  # only the last state is returned, yet every step runs

    def attention(length: int) -> int:
        return _cost([Layer("s", "InputLayer", {"batch_shape": [None, length, 8], "dtype": "float32"}),
                       Layer("a", "Attention", {}, ["s", "s"], call_style="list")])
    assert attention(256) >= 3.5 * attention(128)


def test_recurrent_and_attention_layers_are_refused_where_they_would_cost_too_much() -> None:
    from memo.mutation.analysis import MAX_RECURRENT_STEPS, TensorInfo, call_layer, too_costly

    assert too_costly("GRU", [(None, MAX_RECURRENT_STEPS, 8)]) is None
    assert "steps" in too_costly("GRU", [(None, 980, 320)])
    assert "steps" in too_costly("ConvLSTM1D", [(None, 65, 4, 2)])
    assert too_costly("Conv1D", [(None, 980, 320)]) is None and too_costly("TimeDistributed", [(None, 980, 3)]) is None
    assert "attention scores" in too_costly("MultiHeadAttention", [(None, 2048, 8)])
    assert too_costly("Attention", [(None, 64, 8)]) is None
    lstm = Layer("r", "LSTM", {"units": 4}, ["x"])
    assert call_layer(lstm, [TensorInfo((None, 30, 5), "float32")]).shape == (None, 4)
    with pytest.raises(InvalidModelError, match="at most 64"):
        call_layer(lstm, [TensorInfo((None, 450, 5), "float32")])
