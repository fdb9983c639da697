"""Bug reduction (ddmin over nodes, output cuts, parameters to defaults) and localization, with pure predicates."""
from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np

from memo.model.ir import Layer, ModelIR
from memo.triage import bug_reduction
from memo.triage.localize import first_divergence
from memo.triage.bug_reduction import (REJECTED_KEY, candidate_digest, cut_at, drop_unused_inputs, finished_passes,
                                       isolate, layer_defaults, reduce_bug, rejected_candidates, without)


def _chain(classes: list[str]) -> ModelIR:
    layers = [Layer("in", "InputLayer", {"batch_shape": [None, 8, 3]})]
    for i, name in enumerate(classes):
        layers.append(Layer(f"n{i}", name, {}, [layers[-1].name]))
    return ModelIR(layers, [layers[-1].name])


def _branchy() -> ModelIR:
    layers = [Layer("a", "InputLayer", {"batch_shape": [None, 4]}), Layer("b", "InputLayer", {"batch_shape": [None, 4]}),
              Layer("d1", "Dense", {"units": 4}, ["a"]), Layer("d2", "Dense", {"units": 4}, ["b"]),
              Layer("add", "Add", {}, ["d1", "d2"], call_style="list"), Layer("relu", "ReLU", {}, ["add"]),
              Layer("tanh", "Activation", {"activation": "tanh"}, ["relu"])]
    return ModelIR(layers, ["tanh", "d2"])


def _has(class_name: str):
    def check(ir: ModelIR) -> bool:
        ir.validate()
        return any(layer.class_name == class_name for layer in ir.body)
    return check


def test_ddmin_removes_every_layer_the_predicate_does_not_need() -> None:
    ir = _chain(["Dense", "ReLU", "Dropout", "LayerNormalization", "Softmax", "Flatten", "Dense", "ReLU"])
    outcome = reduce_bug(ir, _has("Softmax"), budget_s=30)
    assert [layer.class_name for layer in outcome.ir.body] == ["Softmax"]
    assert outcome.original_layers == 8 and outcome.status == "done" and outcome.runs < 30
    assert outcome.ir.outputs == ["n4"] and outcome.to_json()["reduced_layers"] == 1


def test_cut_at_the_localized_layer_comes_first() -> None:
    ir = _chain(["Dense", "ReLU", "Softmax", "Flatten"])
    outcome = reduce_bug(ir, _has("Softmax"), budget_s=30, localized="n2")
    assert outcome.steps[0] == "cut at n2"


def test_cuts_and_removals_keep_the_graph_well_formed() -> None:
    ir = _branchy()
    cut = cut_at(ir, "d2")
    assert [layer.name for layer in cut.layers] == ["b", "d2"]  # the unused input "a" is gone
    removed = without(ir, ["add", "relu"])
    assert removed is not None and removed.get("tanh").inputs == ["d1"]
    removed.validate()
    assert without(ir, ["d2"]) is None  # "d2" is an output fed by an input: nothing left to output
    lonely = ModelIR([Layer("a", "InputLayer", {}), Layer("b", "InputLayer", {}), Layer("r", "ReLU", {}, ["a"])], ["r"])
    assert [layer.name for layer in drop_unused_inputs(lonely).layers] == ["a", "r"]


def test_reduction_stops_at_its_deadline_with_a_valid_model() -> None:
    ir = _chain(["Dense"] * 12)
    outcome = reduce_bug(ir, _has("Dense"), budget_s=0.0)
    assert outcome.status == "timeout" and outcome.ir.dumps() == ir.copy().prune().dumps()


def test_a_reduction_cut_short_in_its_parameters_is_done_and_one_cut_short_before_continues() -> None:
    ir = _chain(["ReLU", "Conv1D", "ReLU", "ReLU"])
    ir.get("n1").config = {"filters": 2, "kernel_size": 3, "strides": 2, "padding": "causal"}
    assert isolate(ir, "n1") is not None  # Keras imported before the clock runs
    budget_s = 1.0

    def slow_parameters(candidate: ModelIR) -> bool:  # a parameter candidate waits out the whole budget
        conv = [layer for layer in candidate.body if layer.class_name == "Conv1D"]
        if len(candidate.body) == 1 and conv and conv[0].config != ir.get("n1").config:
            time.sleep(budget_s + 0.05)
        return bool(conv) and conv[0].config.get("padding") == "causal"

    outcome = reduce_bug(ir, slow_parameters, budget_s=budget_s)
    assert [layer.class_name for layer in outcome.ir.body] == ["Conv1D"]
    assert outcome.status == "done" and "ddmin" in outcome.passes and "parameters" not in outcome.passes
    assert outcome.to_json()["passes"] == outcome.passes
    cut_short = reduce_bug(ir, _has("Conv1D"), budget_s=0.0)
    assert cut_short.status == "timeout" and "prefix" not in cut_short.passes


def test_a_continued_reduction_skips_the_passes_an_earlier_one_finished() -> None:
    ir = _chain(["Dense"] * 6)
    runs: list[ModelIR] = []

    def check(candidate: ModelIR) -> bool:
        runs.append(candidate)
        return _has("Dense")(candidate)

    first = reduce_bug(ir, check, budget_s=30)
    again = len(runs)
    runs.clear()
    previous = {"reduction": {**first.to_json(), "passes": ["outputs", "hinted", "prefix", "alone", "ddmin", "x"]}}
    assert finished_passes(previous) == ["outputs", "hinted", "prefix", "alone", "ddmin"]
    assert finished_passes(None) == []
    continued = reduce_bug(ir, check, budget_s=30, previous=previous)
    assert continued.status == "done" and len(runs) < again and continued.passes[:5] == finished_passes(previous)


def test_a_continued_reduction_does_not_run_again_the_candidates_an_earlier_one_rejected(monkeypatch) -> None:
    """long150d: four training reductions were retried 33 times, each running again the candidates its previous
    attempt had rejected before its time ran out at the same place."""
    ir = _chain(["Dense", "Flatten", "Dense", "Flatten", "Conv1D", "Dense"])
    runs: list[str] = []
    failed: set[str] = set()

    def check(candidate: ModelIR) -> bool:
        runs.append(candidate_digest(candidate))
        shown = _has("Conv1D")(candidate)
        if not shown:
            failed.add(runs[-1])
        return shown

    whole = reduce_bug(ir, check, budget_s=30)
    assert whole.status == "done" and set(whole.rejected) == failed and failed
    runs.clear()
    # the same search cut short by its clock right after its first rejection, then continued from its document
    now = {"t": 0.0}

    def cut_short(candidate: ModelIR) -> bool:
        shown = check(candidate)
        now["t"] += 0.0 if shown else 100.0
        return shown

    monkeypatch.setattr(bug_reduction, "time", SimpleNamespace(monotonic=lambda: now["t"]))
    cut = reduce_bug(ir, cut_short, budget_s=30)
    assert cut.status == "timeout" and len(cut.rejected) == 1
    document = cut.to_json()
    assert document[REJECTED_KEY] == cut.rejected and rejected_candidates({"reduction": document}) == cut.rejected
    monkeypatch.undo()
    runs.clear()
    continued = reduce_bug(cut.ir, check, budget_s=30, previous={"reduction": document})
    assert runs and not set(runs) & set(cut.rejected)  # the rejected candidate is not run again
    assert [layer.class_name for layer in continued.ir.body] == [layer.class_name for layer in whole.ir.body]
    assert REJECTED_KEY not in continued.to_json()  # a finished reduction keeps no rejections
    assert continued.steps[:len(cut.steps)] == cut.steps and continued.runs == cut.runs + len(runs)  # one record


def test_parameters_move_back_to_keras_defaults_when_the_bug_survives() -> None:
    ir = _chain(["Conv1D"])
    ir.get("n0").config = {"filters": 2, "kernel_size": 3, "strides": 2, "padding": "causal", "use_bias": False}
    keep_causal = lambda m: m.get("n0").config.get("padding") == "causal"  # noqa: E731
    outcome = reduce_bug(ir, keep_causal, budget_s=30)
    config = outcome.ir.get("n0").config
    assert config["padding"] == "causal" and config["strides"] == 1 and config["use_bias"] is True
    assert layer_defaults("Conv1D")["strides"] == 1 and "name" not in layer_defaults("Conv1D")


def test_parameters_of_a_wrapped_layer_and_regularizer_objects_move_back_to_defaults() -> None:
    """t54's reader: SpectralNormalization(Conv2D)'s script kept the wrapped layer's sparse_sigmoid activation, its
    NonNeg constraint and an L1L2 regularizer that the bug does not need; an initializer is left (weights replace
    it), and a regularizer the bug needs stays."""
    ir = _chain(["SpectralNormalization"])
    regularizer = {"module": "keras.regularizers", "class_name": "L1L2", "config": {"l1": 0.01, "l2": 0.01}}
    ir.get("n0").config = {"power_iterations": 3, "layer": {"module": "keras.layers", "class_name": "Conv1D", "config": {
        "filters": 2, "kernel_size": 3, "activation": "sparse_sigmoid", "activity_regularizer": regularizer,
        "kernel_constraint": {"module": "keras.constraints", "class_name": "NonNeg", "config": {}},
        "kernel_regularizer": regularizer,
        "kernel_initializer": {"module": "keras.initializers", "class_name": "Ones", "config": {}}}}}
    needs = lambda m: m.get("n0").config["layer"]["config"].get("activity_regularizer") is not None  # noqa: E731
    outcome = reduce_bug(ir, needs, budget_s=30)
    inner = outcome.ir.get("n0").config["layer"]["config"]
    assert outcome.ir.get("n0").config["power_iterations"] == 1  # the wrapper's own settings as before
    assert inner["activation"] is None and inner["kernel_constraint"] is None and inner["kernel_regularizer"] is None
    assert inner["activity_regularizer"] == regularizer and inner["kernel_initializer"]["class_name"] == "Ones"
    assert inner["filters"] == 2 and inner["kernel_size"] == 3  # no default: kept
    assert any("n0's Conv1D: default" in step or "n0's Conv1D: defaults" in step for step in outcome.steps)


def test_first_divergence_names_the_first_node_that_differs() -> None:
    ir = _chain(["Dense", "AveragePooling1D", "Flatten"])
    good = {"n0": np.ones((2, 3)), "n1": np.ones((2, 2)), "n2": np.ones(4)}
    faulty = {"n0": np.ones((2, 3)) + 1e-7, "n1": np.full((2, 2), 1.5), "n2": np.full(4, 1.5)}
    found = first_divergence(ir, "inconsistency", faulty, good)
    assert (found.layer, found.layer_class) == ("n1", "AveragePooling1D")
    assert [node["status"] for node in found.nodes] == ["ok", "differs"]
    nan = first_divergence(ir, "nan", {**good, "n2": np.array([np.nan, 1, 1, 1])}, good)
    assert nan.layer == "n2"
    assert first_divergence(ir, "inconsistency", good, good).layer is None


def test_roles_resolve_the_oracles_attribution_to_backends_to_run() -> None:
    from memo.oracle import Verdict
    from memo.oracle.verdict import Attribution, Comparison
    from memo.triage.probe import failure_backends, roles

    def verdict(backend: str, covered: tuple[str, ...] = (), same_engine: str | None = None) -> Verdict:
        attribution = Attribution(backends={name: Comparison(name) for name in covered},
                                  same_engine=same_engine) if covered else None
        return Verdict(kind="inconsistency", backend=backend, stage="execute", message="", attribution=attribution)

    available = ["keras-tensorflow", "keras-jax", "onnxruntime", "onnx2torch", "mxnet"]
    plain = roles(verdict("onnxruntime"), "keras-tensorflow", available)
    assert (plain.faulty, plain.good, plain.backends) == ("onnxruntime", "keras-tensorflow",
                                                          ("keras-tensorflow", "onnxruntime"))
    blamed_reference = roles(verdict("keras-tensorflow", ("keras-jax", "mxnet")),
                             "keras-tensorflow", available)
    assert (blamed_reference.faulty, blamed_reference.good) == ("keras-tensorflow", "keras-jax")
    converter_crash = roles(verdict("tf2onnx"), "keras-tensorflow", available)
    assert converter_crash.backends == ("keras-tensorflow", "onnxruntime", "keras-jax")
    # a failure's candidates run the reference and the failing library's own run (the converter's one reader),
    # not the witness a numeric blame needs
    assert failure_backends("tf2onnx", "keras-tensorflow", converter_crash) == ("keras-tensorflow", "onnxruntime")
    assert failure_backends("onnxruntime", "keras-tensorflow", plain) == ("keras-tensorflow", "onnxruntime")
    assert failure_backends("keras-tensorflow", "keras-tensorflow", blamed_reference) == blamed_reference.backends
    converter_numbers = roles(verdict("tf2onnx-opset11", ("mxnet",)),
                              "keras-tensorflow", available)
    assert converter_numbers.faulty == "mxnet" and "keras-jax" in converter_numbers.backends
    # blamed because the same engine agrees on another converter's file: that engine must run again, or the
    # re-run blames the engine itself and triage sees "another bug"
    same_engine = roles(verdict("keras-export", ("onnxruntime-keras-export",), same_engine="onnxruntime"),
                        "keras-tensorflow", [*available, "onnxruntime-keras-export"])
    assert same_engine.faulty == "onnxruntime-keras-export"
    assert set(same_engine.backends) == {"keras-tensorflow", "onnxruntime-keras-export", "onnxruntime"}
