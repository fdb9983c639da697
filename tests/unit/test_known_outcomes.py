"""Known outcomes: what a library declined on earlier models is not paid for again (IRs and results shaped like
the executor's, messages as tf2onnx wrote them in a real campaign; the pipeline on a stand-in executor)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Collection, Mapping

from memo.artifact import Artifact
from memo.backends.result import BackendResult, ExecutionResult, StageResult
from memo.campaign.config import CampaignConfig
from memo.campaign.disk import DiskBudget
from memo.campaign.known import (KNOWN_FAILURE_PREFIX, KNOWN_PREFIX, KnownOutcomes, culprit, declined_nodes,
                                 failing_class, gist, rechecked)
from memo.campaign.pipeline import Pipeline
from memo.campaign.progress import Reporter
from memo.campaign.stop import StopFlag
from memo.model.ir import Layer, ModelIR
from memo.report.data import engine_activity
from memo.store import CampaignStore, MutantRecord

# Names of models that are not rechecked, so that every prediction shows (the recheck has its own test).
NAMES = [name for name in (f"m{index}" for index in range(200)) if not rechecked(name)]


def conv(name: str, **config: Any) -> Layer:
    settings = {"filters": 8, "kernel_size": [3, 3], "padding": "same", "data_format": "channels_last",
                "activation": "linear", "groups": 1, **config}
    return Layer(name, "Conv2D", settings, ["x"])


def model(*layers: Layer, name: str = "resnet50") -> ModelIR:
    source = Layer("x", "InputLayer", {"batch_shape": [None, 8, 8, 8], "dtype": "float32"})
    return ModelIR([source, *layers], [layers[-1].name], name)


def declined(*nodes: tuple[str, str]) -> str:
    return "; ".join(f"tf2onnx has no handler for op {op} (node {node!r})" for op, node in nodes)


def result(tf2onnx: str | None = None, mxnet: str | None = None, skipped: str | None = None) -> ExecutionResult:
    """tf2onnx (and mxnet) declining with these messages; ok where None (``skipped``: why tf2onnx did not run)."""
    def entry(name: str, consumes: str, message: str | None, role: str = "backend") -> BackendResult:
        if skipped and name == "tf2onnx":
            return BackendResult(name, consumes, role, [StageResult("known", "skipped", message=skipped)])
        last = (StageResult("convert", "unsupported", exc_type="UnconvertedOps", message=message) if message
                else StageResult("convert", "ok"))
        return BackendResult(name, consumes, role, [StageResult("load", "ok"), last])
    return ExecutionResult("gone", "keras-tensorflow", ["out"], {
        "keras-tensorflow": BackendResult("keras-tensorflow", "keras", "backend",
                                          [StageResult("load", "ok"), StageResult("execute", "ok")]),
        "tf2onnx": entry("tf2onnx", "keras", tf2onnx, "converter"),
        "mxnet": entry("mxnet", "onnx-opset11", mxnet)})


def gelu_declined(layer: str = "conv3_block1_0_conv") -> ExecutionResult:
    return result(declined(("Erfc", f"resnet50_1/{layer}_1/Gelu/Erfc")))


def test_the_nodes_a_tf2onnx_message_declines_are_read_with_their_ops() -> None:
    message = ("tf2onnx has no handler for op Expm1 (node 'lstm_stock_price_1/activation_1/Expm1'); tf2onnx has no "
               "handler for op StatefulPartitionedCall (node 'densenet121_1/conv1_conv_1/StatefulPartitionedCall'); "
               "node 'm_1/dense_2_1/Foo' has op ai.onnx.contrib::Foo, not an ONNX op (opset 1)")
    assert declined_nodes(message) == [("Expm1", "lstm_stock_price_1/activation_1/Expm1"),
                                       ("StatefulPartitionedCall",
                                        "densenet121_1/conv1_conv_1/StatefulPartitionedCall"),
                                       ("Foo", "m_1/dense_2_1/Foo")]
    assert declined_nodes("Operator Loop not implemented.") == []  # MXNet names no node


def test_a_node_maps_to_its_layer_only_when_certain() -> None:
    ir = model(conv("conv3_block1_0_conv", activation="gelu"), conv("conv2d_242", activation="elu"))
    assert culprit(ir, "resnet50_1/conv3_block1_0_conv_1/Gelu/Erfc").name == "conv3_block1_0_conv"
    assert culprit(ir, "inception_v3_1/conv2d_242_1/Expm1").name == "conv2d_242"
    assert culprit(ir, "resnet50_1/Erfc") is None  # no layer scope
    assert culprit(ir, "resnet50_1/unknown_1/Erfc") is None
    # "dense_1" may be layer dense_1 or layer dense, uniquified: only when both are alike is that certain
    differ = model(Layer("dense", "Dense", {"units": 4, "activation": "gelu"}, ["x"]),
                   Layer("dense_1", "Dense", {"units": 4, "activation": "relu"}, ["dense"]))
    assert culprit(differ, "lstm_sine_wave_1/dense_1/Gelu/Erfc") is None
    alike = model(Layer("dense", "Dense", {"units": 4, "activation": "gelu"}, ["x"]),
                  Layer("dense_1", "Dense", {"units": 4, "activation": "gelu"}, ["dense"]))
    assert culprit(alike, "lstm_sine_wave_1/dense_1/Gelu/Erfc") is not None


def test_a_library_is_skipped_once_it_declined_a_feature_on_three_models() -> None:
    known = KnownOutcomes(threshold=3)
    gelu = model(conv("conv3_block1_0_conv", activation="gelu"))
    for name in NAMES[:2]:
        assert known.skips(gelu, name) == {}
        known.learn(gelu, gelu_declined())
    assert known.skips(gelu, NAMES[2]) == {}, "two models are not enough"
    known.learn(gelu, gelu_declined())
    skips = known.skips(model(conv("other_name", activation="gelu")), NAMES[3])
    assert list(skips) == ["tf2onnx"]
    assert skips["tf2onnx"].startswith(f"{KNOWN_PREFIX}: tf2onnx declined Erfc in Conv2D layers like 'other_name'")
    assert known.skips(model(conv("c", activation="relu")), NAMES[3]) == {}, "a model without the feature runs"
    mxnet_only = result(mxnet="Operator Loop not implemented.")
    for name in NAMES[:5]:  # a message that names no node teaches nothing
        known.learn(gelu, mxnet_only)
    assert all(rule.library == "tf2onnx" for rule in known.rules())


def test_a_rule_generalizes_only_as_far_as_the_handled_models_allow() -> None:
    known = KnownOutcomes(threshold=3)
    known.learn(model(conv("plain")), result())  # tf2onnx converted a Conv2D with one group
    node = "densenet121_1/conv1_conv_1/StatefulPartitionedCall"
    for groups in (2, 2, 2, 4, 4):
        known.learn(model(conv("conv1_conv", groups=groups)), result(declined(("StatefulPartitionedCall", node))))
    rules = sorted((dict(rule.items)["groups"], rule.models) for rule in known.rules())
    assert rules == [("2", 3), ("3-4", 2)], "grouped convolutions stay apart from the handled one-group conv"
    assert "tf2onnx" in known.skips(model(conv("g", groups=2)), NAMES[0])
    assert known.skips(model(conv("g", groups=4)), NAMES[0]) == {}, "only two models with 3-4 groups"
    assert known.skips(model(conv("g")), NAMES[0]) == {}
    # without that evidence the culprits share what is left once the group count differs: one broader rule
    broad = KnownOutcomes(threshold=3)
    for groups in (2, 4, 8):
        broad.learn(model(conv("conv1_conv", groups=groups)), result(declined(("StatefulPartitionedCall", node))))
    assert [("groups" in dict(rule.items), rule.models) for rule in broad.rules()] == [(False, 3)]
    assert "tf2onnx" in broad.skips(model(conv("g")), NAMES[0])
    broad.learn(model(conv("g")), result())  # ... until tf2onnx converts a layer the rule covers
    assert broad.rules() == [] and broad.skips(model(conv("g", groups=2)), NAMES[0]) == {}


def test_a_skipped_run_teaches_nothing_and_a_recheck_that_converts_drops_the_rule() -> None:
    known = KnownOutcomes(threshold=3)
    gelu = model(conv("conv3_block1_0_conv", activation="gelu"))
    for _ in range(3):
        known.learn(gelu, gelu_declined())
    known.learn(gelu, result(skipped=f"{KNOWN_PREFIX}: ..."))
    assert [rule.models for rule in known.rules()] == [3]
    known.learn(gelu, result())  # a rechecked model: tf2onnx converted GELU this time
    assert known.skips(gelu, NAMES[0]) == {}


def test_one_model_in_ten_runs_anyway_chosen_by_its_name() -> None:
    names = [f"m{index:05d}" for index in range(2000)]
    chosen = [name for name in names if rechecked(name, 10)]
    assert 150 <= len(chosen) <= 250
    assert chosen == [name for name in names if rechecked(name, 10)]
    known = KnownOutcomes(threshold=1, recheck_every=10)
    gelu = model(conv("conv3_block1_0_conv", activation="gelu"))
    known.learn(gelu, gelu_declined())
    assert known.skips(gelu, chosen[0]) == {}
    assert "tf2onnx" in known.skips(gelu, next(name for name in names if name not in chosen))


def test_a_resumed_campaign_knows_what_the_stored_executions_taught(tmp_path: Path) -> None:
    live = KnownOutcomes()
    gelu = model(conv("conv3_block1_0_conv", activation="gelu"))
    executions = [(model(conv("plain")), result()), *[(gelu, gelu_declined())] * 3]
    with CampaignStore(tmp_path / "c", create=True) as store:
        for iteration, (ir, outcome) in enumerate(executions):
            mutant_id = store.add_mutant(MutantRecord(iteration, "s", "NLA", "seed:s", "s", {}, ir.dumps(), True,
                                                      diverse=True))
            store.add_execution(mutant_id, outcome.to_json(), 1.0, None)
            live.learn(ir, outcome)
        store.add_mutant(MutantRecord(9, "s", "NLA", "seed:s", "s", {}, gelu.dumps(), True, diverse=True))  # unexecuted
        resumed = KnownOutcomes()
        assert resumed.rebuild(store) == 4
    assert resumed.rules() == live.rules() and len(resumed.rules()) == 1
    assert resumed.skips(gelu, NAMES[0]) == live.skips(gelu, NAMES[0]) != {}


# Failures as a real campaign stored them (shortened): Keras's ONNX export through a torch trace, Keras on the
# PyTorch backend, and TensorFlow's graph-mode trace of the model (tf2onnx's stage "trace").
IVAL = ("Unsupported prim::Constant kind: 'ival'. Please send a bug report at https://github.com/pytorch/pytorch/"
        "issues.  [Caused by the value '28653 defined in (%28653 : Generator = prim::Constant[value=torch.Generator("
        "device=\"cpu\", seed=0)]()' (type 'Generator') in the TorchScript graph.]\n    (node defined in "
        "/v/site-packages/keras/src/backend/torch/random.py(80): uniform\n/v/site-packages/keras/src/layers/"
        "preprocessing/image_preprocessing/random_flip.py(92): get_random_transformation\n/v/site-packages/keras/"
        "src/layers/preprocessing/image_preprocessing/base_image_preprocessing_layer.py(144): call\n/v/site-packages/"
        "keras/src/layers/layer.py(1002): __call__\n")
LANCZOS = ("Exception encountered when calling UpSampling2D.call().\n\n\x1b[1mResizing with Lanczos interpolation is "
           "not supported by the PyTorch backend. Received: interpolation=lanczos3.\x1b[0m\n\nArguments received by "
           "UpSampling2D.call():\n  \u2022 inputs=torch.Tensor(shape=torch.Size([2, 4, 4, 8]), dtype=float32)")
AVGPOOL = ("in user code:\n\n    ValueError: Exception encountered when calling AdaptiveAveragePooling1D.call().\n\n"
           "\x1b[1mNegative dimension size caused by subtracting 4 from 3 for '{{node lenet5_1/adaptive_average_"
           "pooling1d_1/avg_pool_1}} = AvgPool[T=DT_FLOAT, data_format=\"NHWC\", ksize=[1, 1, 4, 1]](lenet5_1/"
           "adaptive_average_pooling1d_1/avg_pool_1/ExpandDims)' with input shapes: [?,1,3,8].")


def flip(name: str, **config: Any) -> Layer:
    return Layer(name, "RandomFlip", {"mode": "horizontal", **config}, ["x"])


def failing(library: str, stage: str, status: str, exc_type: str, message: str,
            reference_fails: bool = False) -> ExecutionResult:
    """``library`` failing at ``stage`` with this message; the reference ran (or failed alike)."""
    reference = ([StageResult("load", "ok"), StageResult("execute", status, exc_type=exc_type, message=message)]
                 if reference_fails else [StageResult("load", "ok"), StageResult("execute", "ok")])
    return ExecutionResult("gone", "keras-tensorflow", ["out"], {
        "keras-tensorflow": BackendResult("keras-tensorflow", "keras", "backend", reference),
        library: BackendResult(library, "keras", "converter",
                               [StageResult(stage, status, exc_type=exc_type, message=message)])})


def test_a_failure_names_its_layer_class_by_keras_call_note_or_torch_trace_file() -> None:
    ir = model(flip("random_flip"), Layer("up", "UpSampling2D", {"size": [2, 2]}, ["random_flip"]))
    assert failing_class(ir, IVAL) == "RandomFlip", "the innermost Keras layer file of the trace"
    assert failing_class(ir, LANCZOS) == "UpSampling2D"
    assert failing_class(model(conv("c")), IVAL) is None, "a class the model does not have names nothing"
    assert failing_class(ir, "KeyError: ''") is None
    assert declined_nodes(AVGPOOL) == [("AvgPool", "lenet5_1/adaptive_average_pooling1d_1/avg_pool_1")]
    assert gist(StageResult("load", "error", exc_type="ValueError", message=LANCZOS)) == (
        "ValueError: Resizing with Lanczos interpolation is not supported by the PyTorch backend. Received: "
        "interpolation"), "numbers made N, 100 characters at most"
    assert gist(StageResult("convert", "error", exc_type="SymbolicValueError", message=IVAL)) == (
        "SymbolicValueError: Unsupported prim::Constant kind: 'ival'.")


def test_a_failure_filed_as_a_bug_is_skipped_once_known_but_never_on_the_reference() -> None:
    known = KnownOutcomes(threshold=3)
    flipping = model(flip("random_flip"), conv("c"))
    export_fails = failing("keras-export", "convert", "error", "SymbolicValueError", IVAL)
    for _ in range(3):
        known.learn(flipping, export_fails)
    skips = known.skips(model(flip("other"), conv("d")), NAMES[0])
    assert list(skips) == ["keras-export"]
    assert known.skips(model(flip("other", mode="vertical")), NAMES[0]) == {}, "no evidence on another mode"
    assert skips["keras-export"].startswith(
        f"{KNOWN_FAILURE_PREFIX}: keras-export failed with SymbolicValueError: Unsupported prim::Constant kind: "
        "'ival'. in RandomFlip layers like 'other' on 3 models")
    assert known.skips(model(conv("c")), NAMES[0]) == {}, "a model without a RandomFlip runs"
    reference = KnownOutcomes(threshold=1)
    for _ in range(3):
        reference.learn(model(Layer("up", "UpSampling2D", {"size": [2, 2]}, ["x"])),
                        failing("keras-export", "convert", "ok", "", "", reference_fails=True))
    assert reference.rules() == [], "what the reference fails on is never learnt"
    graph_mode = KnownOutcomes(threshold=2)
    pooling = Layer("adaptive_average_pooling1d", "AdaptiveAveragePooling1D", {"output_size": 4}, ["x"])
    for _ in range(2):
        graph_mode.learn(model(pooling), failing("tf2onnx", "trace", "error", "ValueError", AVGPOOL))
    assert [(rule.feature, rule.class_name) for rule in graph_mode.rules()] == [("AvgPool", "AdaptiveAveragePooling1D")]
    assert "tf2onnx" in graph_mode.skips(model(pooling), NAMES[0])


def test_several_layers_of_the_failing_class_stand_together_with_what_they_share() -> None:
    known = KnownOutcomes(threshold=2)
    two = model(flip("f1", mode="horizontal"), flip("f2", mode="vertical"))
    for _ in range(2):
        known.learn(two, failing("keras-export", "convert", "error", "SymbolicValueError", IVAL))
    [rule] = known.rules()
    assert rule.class_name == "RandomFlip" and "mode" not in dict(rule.items), "the modes differ: neither decides"
    assert "keras-export" in known.skips(model(flip("f", mode="horizontal_and_vertical")), NAMES[0])
    known.learn(model(flip("f", mode="vertical")), failing("keras-export", "convert", "ok", "", ""))
    assert known.rules() == [], "a RandomFlip exported fine: the rule no longer holds"


class Declining:
    """A stand-in executor on which tf2onnx declines every model's GELU; honours ``skip`` as the executor does."""

    backend_names = ["keras-tensorflow", "mxnet"]

    def __init__(self) -> None:
        self.skips: list[dict[str, str]] = []

    def run(self, artifact: Artifact, backends: Collection[str] | None = None,
            skip: Mapping[str, str] | None = None, library: bool = False) -> ExecutionResult:
        self.skips.append(dict(skip or {}))
        return result(skipped=skip["tf2onnx"]) if skip and "tf2onnx" in skip else gelu_declined()

    def versions(self) -> dict[str, dict[str, str]]:
        return {}

    def close(self) -> None:
        pass


def declining_pipeline(store: CampaignStore, root: Path, executor: Declining, feedback_lag: int) -> Pipeline:
    pipeline = Pipeline(CampaignConfig(name="k", jobs=1, feedback_lag=feedback_lag), store,
                        DiskBudget(store, root, limit=0), StopFlag(), Reporter(),
                        {"executed": 0, "internal_errors": 0}, {}, root)
    pipeline.executors.append(executor)
    pipeline.worker_sets.put(executor)
    return pipeline


def run_gelu(pipeline: Pipeline, store: CampaignStore, iteration: int) -> int:
    """Store, submit and wait for the mutant of ``iteration`` (a GELU model); its id."""
    gelu = model(conv("conv3_block1_0_conv", activation="gelu"))
    mutant_id = store.add_mutant(MutantRecord(iteration, "s", "NLA", "seed:s", "s", {}, gelu.dumps(), True,
                                              diverse=True))
    pipeline.submit(mutant_id, f"m{iteration}", gelu)
    pipeline.drain()
    return mutant_id


def test_the_pipeline_skips_what_its_executions_taught_and_the_report_counts_it(tmp_path: Path) -> None:
    executor = Declining()
    with CampaignStore(tmp_path / "campaigns" / "k", create=True) as store:
        root = tmp_path / "mutants" / "k"
        pipeline = declining_pipeline(store, root, executor, feedback_lag=8)
        try:
            for iteration in range(4):  # mutant ids 1-4: none is rechecked
                mutant_id = run_gelu(pipeline, store, iteration)
                # learnt when generation takes the outcome (a fixed iteration), not when the execution finished
                assert [rule.models for rule in pipeline.known.rules()] == ([iteration] if iteration else [])
                assert pipeline.outcome(mutant_id) is not None  # what the loop does at the mutant's due iteration
        finally:
            pipeline.cancel()
            pipeline.close()
        assert [list(skip) for skip in executor.skips] == [[], [], [], ["tf2onnx"]]
        assert executor.skips[-1]["tf2onnx"].startswith(f"{KNOWN_PREFIX}: tf2onnx declined Erfc")
        rows = {row["name"]: row for row in engine_activity(store)}
        assert rows["tf2onnx"]["skipped_text"] == "1 known unsupported" and rows["tf2onnx"]["ran"] == 3
        assert len(Pipeline(CampaignConfig(name="k", jobs=1), store, DiskBudget(store, root, limit=0), StopFlag(),
                            Reporter(), {}, {}, root).known.rules()) == 1, "a resumed campaign knows it too"


def test_the_report_tells_known_failures_from_known_declines(tmp_path: Path) -> None:
    skipped = BackendResult("keras-export", "keras", "converter",
                            [StageResult("known", "skipped", message=f"{KNOWN_FAILURE_PREFIX}: keras-export failed ...")])
    ran = failing("keras-export", "convert", "error", "SymbolicValueError", IVAL)
    with CampaignStore(tmp_path / "c", create=True) as store:
        for iteration, outcome in enumerate([ran, ExecutionResult("gone", "keras-tensorflow", ["out"], {
                "keras-tensorflow": ran.backends["keras-tensorflow"], "keras-export": skipped})]):
            mutant_id = store.add_mutant(MutantRecord(iteration, "s", "NLA", "seed:s", "s", {},
                                                      model(flip("f")).dumps(), True, diverse=True))
            store.add_execution(mutant_id, outcome.to_json(), 1.0, None)
        rows = {row["name"]: row for row in engine_activity(store)}
    assert rows["keras-export"]["skipped_text"] == "1 known failure" and rows["keras-export"]["ran"] == 1


def test_without_feedback_an_execution_is_learnt_once_stored(tmp_path: Path) -> None:
    """With ``feedback_lag`` 0 generation never takes an outcome: the pipeline learns at once, holding nothing."""
    executor = Declining()
    with CampaignStore(tmp_path / "campaigns" / "k", create=True) as store:
        pipeline = declining_pipeline(store, tmp_path / "mutants" / "k", executor, feedback_lag=0)
        try:
            for iteration in range(4):
                run_gelu(pipeline, store, iteration)
        finally:
            pipeline.cancel()
            pipeline.close()
        assert [list(skip) for skip in executor.skips] == [[], [], [], ["tf2onnx"]]
        assert pipeline.unlearnt == {}
