"""The models localization's re-check runs: a culprit alone, or with its predecessors, fed what it received."""
from __future__ import annotations

import numpy as np

from memo.model.ir import Layer, ModelIR
from memo.triage.localize import _ancestors, subgraph


def _model() -> ModelIR:
    return ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 4], "dtype": "float32"}),
                    Layer("zoom", "RandomZoom", {"height_factor": 0.2}, ["x"]),
                    Layer("side", "Dense", {"units": 4}, ["x"]),
                    Layer("dot", "Dot", {"axes": 1}, ["zoom", "side"]),
                    Layer("out", "Dense", {"units": 2}, ["dot"])], ["out"], "m",
                   weight_edits=[{"layer": "dot", "kind": "WS"}, {"layer": "out", "kind": "WS"}])


def test_a_culprit_alone_reads_its_inputs_as_model_inputs_of_the_same_names() -> None:
    arrays = {"zoom": np.ones((2, 4), np.float32), "side": np.zeros((2, 4), np.float16), "x": np.ones((2, 4))}
    model, feeds = subgraph(_model(), ["dot"], "dot", arrays)
    assert [(layer.name, layer.class_name, layer.inputs) for layer in model.layers] == [
        ("zoom", "InputLayer", []), ("side", "InputLayer", []), ("dot", "Dot", ["zoom", "side"])]
    assert model.layers[1].config == {"batch_shape": [None, 4], "dtype": "float16"}
    assert model.outputs == ["dot"] and set(feeds) == {"zoom", "side"}
    assert model.weight_edits == [{"layer": "dot", "kind": "WS"}]
    model.validate()


def test_a_pair_reads_the_model_input_and_a_missing_value_gives_none() -> None:
    model, feeds = subgraph(_model(), ["zoom", "side", "dot"], "dot", {"x": np.ones((2, 4), np.float32)})
    assert [layer.name for layer in model.input_layers] == ["x"] and list(feeds) == ["x"]
    assert subgraph(_model(), ["dot"], "dot", {"zoom": np.ones((2, 4))}) is None


def test_ancestors_are_the_body_nodes_a_node_depends_on_in_order() -> None:
    assert _ancestors(_model(), "dot") == ["zoom", "side", "dot"]
    assert _ancestors(_model(), "zoom") == ["zoom"]
