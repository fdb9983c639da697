"""A training bug localized by its forward pass first (memo.triage.training_forward, pure): the first layer whose
training-mode output differs while its inputs agree, its key, its cuts."""
from __future__ import annotations

import numpy as np

from memo.model.ir import Layer, ModelIR
from memo.oracle import Verdict
from memo.triage.training_forward import (culprit_cuts, first_forward_difference, forward_located, forward_parts,
                                          forward_probe, forward_record, node_outputs)
from memo.triage.training_signature import training_key, training_parts


def model() -> ModelIR:
    """conv -> pool -> sep -> crop, as campaign long150's f1ef4f46d0 (listed out of order: the probe sorts it)."""
    return ModelIR([Layer("input", "InputLayer", {"batch_shape": [None, 30, 5], "dtype": "float32"}),
                    Layer("conv", "Conv1D", {"filters": 4, "kernel_size": 1}, ["input"]),
                    Layer("pool", "AveragePooling1D", {"pool_size": 4, "strides": 1, "padding": "same"}, ["conv"]),
                    Layer("sep", "SeparableConv1D", {"filters": 3, "kernel_size": 3}, ["pool"]),
                    Layer("crop", "Cropping1D", {"cropping": [2, 2]}, ["sep"])], ["crop", "sep"], "m")


def arrays(outputs: list[np.ndarray], compute: str = "float32") -> dict[str, np.ndarray]:
    return {**{f"out_{i}": y for i, y in enumerate(outputs)}, "compute_dtype": np.array(compute)}


def outputs(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape).astype(np.float32) for shape in ((2, 30, 4), (2, 30, 4), (2, 28, 3), (2, 24, 3))]


def test_the_probe_outputs_every_body_node_in_topological_order() -> None:
    ir = model()
    ir.layers = [ir.layers[0], ir.layers[2], ir.layers[1], *ir.layers[3:]]  # pool listed before conv
    probe = forward_probe(ir)
    assert probe.outputs == ["conv", "pool", "sep", "crop"]
    assert list(node_outputs(probe, arrays(outputs()))) == ["conv", "pool", "sep", "crop"]


def test_the_first_layer_whose_output_differs_while_its_inputs_agree_is_named() -> None:
    probe = forward_probe(model())
    good = outputs()
    bad = [y.copy() for y in good]
    bad[1][:, :2] += 0.9  # the pooling's borders
    bad[2] += 0.5  # everything after it differs too
    bad[3] += 0.5
    found = first_forward_difference(probe, "keras-torch", arrays(bad), arrays(good))
    assert found is not None and (found.layer, found.layer_class) == ("pool", "AveragePooling1D")
    assert found.kind == "training-inconsistency"
    assert "output of pool (AveragePooling1D)" in found.message and found.figures["max_abs_diff"] > 0.89
    assert [node["status"] for node in found.nodes] == ["ok", "differs"]


def test_agreeing_outputs_and_a_layer_whose_input_was_not_compared_name_nothing() -> None:
    probe = forward_probe(model())
    good = outputs()
    assert first_forward_difference(probe, "keras-torch", arrays([y.copy() for y in good]), arrays(good)) is None
    # within the judge's tolerance of the model's precision: float16 noise is no difference
    noisy = [y + np.float32(2e-3) for y in good]
    assert first_forward_difference(probe, "keras-torch", arrays(noisy, "float16"), arrays(good, "float16")) is None
    assert first_forward_difference(probe, "keras-torch", arrays(noisy), arrays(good)) is not None
    # the pool's output missing on the backend: sep, reading it, is not blamed
    bad = {key: value for key, value in arrays([y + 1 for y in good]).items() if key != "out_1"}
    bad["out_0"] = good[0]
    assert first_forward_difference(probe, "keras-torch", bad, arrays(good)) is None


def test_a_forward_difference_is_keyed_as_that_layers_forward_bug() -> None:
    probe = forward_probe(model())
    good = outputs()
    bad = [y.copy() for y in good]
    bad[1] += 1.0
    found = first_forward_difference(probe, "keras-torch", arrays(bad), arrays(good))
    assert found is not None
    gradient = {"kind": "training-inconsistency", "library": "keras-torch", "stage": "gradients", "layer": "Conv1D"}
    parts = forward_parts(gradient, found)
    assert parts == {"kind": "training-inconsistency", "library": "keras-torch", "stage": "forward",
                     "layer": "AveragePooling1D"}
    # the same parts a forward verdict on a model whose output is that layer has: one bug with it
    cut = culprit_cuts(model(), "pool", node_outputs(probe, arrays(good)) | {"input": np.zeros((2, 30, 5))})[0][0]
    verdict = Verdict("training-inconsistency", "keras-torch", "forward", "forward: output 0: differ",
                      extra={"training": {"array": "out_0", "name": "output 0"}})
    assert training_parts(verdict, cut) == parts
    assert training_key(parts, cut) != training_key(gradient, model())
    located = forward_located(found, {"layer": "sep", "layer_class": "SeparableConv1D", "differing": ["conv/kernel"]})
    assert located["layer_class"] == "AveragePooling1D" and located["backward_order"]["layer"] == "sep"
    assert forward_record({"array": "out_0", "name": "output 0"}, found)["name"] == "pool"


def test_cuts_are_the_layer_alone_fed_its_inputs_then_its_ancestors() -> None:
    ir = model()
    probe = forward_probe(ir)
    fed = {"input": np.zeros((2, 30, 5), np.float32), **node_outputs(probe, arrays(outputs()))}
    (alone, feeds), (upstream, own) = culprit_cuts(ir, "pool", fed)
    assert [layer.class_name for layer in alone.layers] == ["InputLayer", "AveragePooling1D"]
    assert alone.outputs == ["pool"] and feeds is not None and list(feeds) == ["conv"]
    assert [layer.name for layer in upstream.layers] == ["input", "conv", "pool"] and own is None
    # a layer reading the model's inputs only: its ancestors' cut is the layer alone already
    assert len(culprit_cuts(ir, "conv", fed)) == 1


def test_the_cuts_message_names_the_layer() -> None:
    from memo.triage.training_forward import ForwardDifference, forward_message
    found = ForwardDifference("pool", "AveragePooling1D", "training-inconsistency", "")
    assert forward_message("forward: output 0: 96/960 elements outside", found) == \
        "forward: output of pool (AveragePooling1D): 96/960 elements outside"
