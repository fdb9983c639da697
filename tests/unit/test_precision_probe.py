"""The optimizer stage's shortcut: a model's weights by precision, one layer per variable dtype, each fed a fresh input
of the shape it reads (Keras builds the models: shapes and weight counts)."""
from __future__ import annotations

from memo.model.ir import Layer, ModelIR
from memo.mutation.analysis import analyse
from memo.training.selection import weight_dtypes
from memo.triage.precision_probe import precision_probe


def _mixed() -> ModelIR:
    return ModelIR([
        Layer("x", "InputLayer", {"batch_shape": [None, 8], "dtype": "float32"}),
        Layer("act16", "Activation", {"activation": "relu", "dtype": "float16"}, ["x"]),
        Layer("dense16", "Dense", {"units": 4, "dtype": "float16"}, ["act16"]),
        Layer("dense32", "Dense", {"units": 3}, ["dense16"]),
        Layer("relu", "ReLU", {}, ["dense32"]),
        Layer("last32", "Dense", {"units": 2}, ["relu"])], ["last32"])


def test_one_layer_with_weights_per_dtype_each_on_a_fresh_input_of_its_shape() -> None:
    ir = _mixed()
    probe = precision_probe(ir)
    assert probe is not None
    assert [layer.name for layer in probe.body] == ["dense16", "dense32"]  # weights beat the weightless Activation
    assert weight_dtypes(probe) == weight_dtypes(ir) == ("float16", "float32")
    infos = analyse(probe)  # Keras builds it: each layer reads an input of the shape it read in the model
    assert [layer.config["batch_shape"] for layer in probe.input_layers] == [[None, 8], [None, 4]]
    assert infos["dense32"].shape == (None, 3) and probe.outputs == ["dense16", "dense32"]


def test_the_differing_weights_layer_is_kept_for_its_dtype() -> None:
    probe = precision_probe(_mixed(), keep="last32")
    assert probe is not None and [layer.name for layer in probe.body] == ["dense16", "last32"]
    assert [layer.config["batch_shape"] for layer in probe.input_layers] == [[None, 8], [None, 3]]


def test_no_probe_where_it_is_no_smaller() -> None:
    ir = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 8], "dtype": "float32"}),
                  Layer("d", "Dense", {"units": 2}, ["x"])], ["d"])
    assert precision_probe(ir) is None



def test_the_standard_precisions_are_one_dense_per_dtype() -> None:
    from memo.triage.precision_probe import STANDARD_PRECISIONS, dense_probe

    for dtypes in STANDARD_PRECISIONS:
        probe = dense_probe(dtypes)
        assert weight_dtypes(probe) == dtypes and [layer.class_name for layer in probe.body] == ["Dense"] * len(dtypes)
        assert sum(info.weights for info in analyse(probe).values()) == 15 * len(dtypes)  # Keras builds each


def test_layers_reading_one_source_get_inputs_of_their_own_whose_names_never_collide() -> None:
    ir = ModelIR([
        Layer("x", "InputLayer", {"batch_shape": [None, 4], "dtype": "float32"}),
        Layer("dense16", "Dense", {"units": 4, "dtype": "float16"}, ["x"]),
        Layer("dense16_input_0", "Dense", {"units": 4}, ["x"]),  # a name the probe would give an input
        Layer("relu", "ReLU", {}, ["dense16_input_0"]),
        Layer("last", "Dense", {"units": 2}, ["relu"])], ["last"])
    probe = precision_probe(ir)
    assert probe is not None and [layer.name for layer in probe.body] == ["dense16", "dense16_input_0"]
    names = [layer.name for layer in probe.layers]
    assert len(names) == len(set(names)) and len(probe.input_layers) == 2
    analyse(probe)  # Keras builds it


def test_a_dense_probe_is_cut_to_the_dtypes_the_bug_needs_and_then_is_minimal() -> None:
    from memo.triage.precision_probe import dense_probe
    from memo.triage.training_bug import _minimal_dense

    mixed = dense_probe(("float16", "float32"))
    alone, runs = _minimal_dense(mixed, lambda ir: "float32" in weight_dtypes(ir)) or (None, 0)
    assert alone is not None and weight_dtypes(alone) == ("float32",) and runs == 2  # float16 alone tried first
    both, runs = _minimal_dense(mixed, lambda ir: len(weight_dtypes(ir)) == 2) or (None, 0)
    assert both is mixed and runs == 2  # neither alone shows it: both Dense layers are needed
    single = dense_probe(("bfloat16",))
    assert _minimal_dense(single, lambda ir: False) == (single, 0)  # one default Dense: nothing to try
    assert _minimal_dense(dense_probe(("float16", "bfloat16", "float32")), lambda ir: True) is None  # the reducer's
