"""Differential execution on the real libraries, in real worker processes (one warm executor per session)."""
from __future__ import annotations

import json
import signal

import numpy as np
import onnx
import pytest

from memo.backends.result import ExecutionResult
from memo.oracle import Thresholds, compare, judge, load_outputs
from tests.conftest import EXAMPLES, SESSION_TIMEOUT_S, one_layer_ir

pytestmark = pytest.mark.integration

PLUGINS = ("abort-on-poison", "hang-on-poison")


def test_all_backends_agree_on_a_conv_net(executor, make_artifact) -> None:
    result = executor.run(make_artifact(EXAMPLES / "conv_net.json"))
    assert {name: b.status for name, b in result.backends.items()} == {name: "ok" for name in result.backends}
    assert set(executor.backend_names) == {"keras-tensorflow", "keras-jax", "keras-torch", "keras-openvino",
                                            "onnxruntime", "onnx2pytorch", "onnx2torch", "openvino", "mxnet",
                                            "onnxruntime-keras-export", *PLUGINS}
    assert {"tf2onnx", "tf2onnx-opset11", "keras-export"} <= set(result.backends)
    assert judge(result) == []
    outputs = load_outputs(result)
    comparisons = compare(outputs, result.reference, Thresholds())
    assert len(comparisons) == len(executor.backend_names) - 1
    assert all(c.max_abs_diff is not None and c.max_abs_diff < 1e-4 for c in comparisons.values())
    assert outputs["mxnet"][0].shape == (2, 10)
    assert result.backends["keras-torch"].versions["torch"].startswith("2.")


def test_converter_that_cannot_handle_a_model_is_recorded_against_it(executor, make_artifact) -> None:
    # MXNet's ONNX importer has no Resize: bilinear up-sampling is refused at its convert stage.
    ir = one_layer_ir("UpSampling2D", {"size": [2, 2], "interpolation": "bilinear"}, (6, 6, 3))
    result = executor.run(make_artifact(ir))
    verdicts = judge(result)
    assert [(v.kind, v.backend, v.stage) for v in verdicts] == [("unsupported", "mxnet", "convert")]
    assert "Resize" in verdicts[0].message
    compared = compare(load_outputs(result), result.reference, Thresholds())
    assert set(compared) == set(executor.backend_names) - {"mxnet", "keras-tensorflow"}
    assert ExecutionResult.from_json(json.loads(json.dumps(result.to_json()))) == result


def test_tf2onnx_silent_failure_is_unsupported_and_onnx_backends_are_skipped(executor, make_artifact) -> None:
    # tf2onnx cannot convert ScaleAndTranslate (lanczos resize): it logs an error, raises nothing and leaves
    # the TensorFlow node in the ONNX graph.
    ir = one_layer_ir("UpSampling2D", {"size": [2, 2], "interpolation": "lanczos3"}, (6, 6, 3))
    result = executor.run(make_artifact(ir))
    converter = result.backends["tf2onnx"]
    assert converter.status == "unsupported" and converter.failure.exc_type == "UnconvertedOps"
    assert "ScaleAndTranslate" in converter.failure.message
    for name in ("onnxruntime", "onnx2torch", "onnx2pytorch", *PLUGINS):
        assert result.backends[name].status == "skipped"
    assert result.backends["keras-jax"].status == "ok"
    kinds = {(v.kind, v.backend) for v in judge(result)}
    assert ("unsupported", "tf2onnx") in kinds
    assert not any(backend in {"onnxruntime", "onnx2torch", "onnx2pytorch"} for _, backend in kinds)


def test_activity_regularizer_constant_is_frozen_not_made_an_onnx_input(executor, make_artifact) -> None:
    # Keras computes an activity regularizer's loss even at inference, and L1 keeps its factor as an eager
    # tensor, which the traced function captures. It must become a constant of the ONNX graph, not an input.
    ir = one_layer_ir("Dense", {"units": 4, "activity_regularizer": "l1"}, (6,))
    artifact = make_artifact(ir)
    result = executor.run(artifact)
    assert {name: b.status for name, b in result.backends.items()} == {name: "ok" for name in result.backends}
    assert judge(result) == []
    for produced in ("onnx", "onnx-opset11"):
        graph = onnx.load(str(artifact.path_for(produced))).graph
        initializers = {init.name for init in graph.initializer}
        assert [arg.name for arg in graph.input if arg.name not in initializers] == ["x"]


def test_abort_and_hang_are_recorded_and_the_next_model_runs(executor, make_artifact) -> None:
    poisoned = executor.run(make_artifact(EXAMPLES / "residual_net.json", name="poison"))
    aborted = poisoned.backends["abort-on-poison"].failure
    assert (aborted.status, aborted.stage, aborted.signal) == ("crash", "load", signal.SIGABRT)
    assert "Fatal Python error: Aborted" in aborted.stderr_tail
    hung = poisoned.backends["hang-on-poison"].failure
    assert (hung.status, hung.stage) == ("hang", "load")
    assert hung.seconds >= SESSION_TIMEOUT_S * 0.9
    verdicts = {(v.kind, v.backend, v.stage) for v in judge(poisoned)}
    assert {("crash", "abort-on-poison", "load"), ("hang", "hang-on-poison", "load")} <= verdicts

    healthy = executor.run(make_artifact(EXAMPLES / "residual_net.json", name="healthy"))
    assert all(b.status == "ok" for b in healthy.backends.values())
    assert judge(healthy) == []
    np.testing.assert_allclose(load_outputs(healthy)["abort-on-poison"][0],
                               load_outputs(healthy)["keras-tensorflow"][0], atol=1e-5)


@pytest.mark.parametrize("limits", [{"max_rss_mb": 1}, {"max_models_per_worker": 1}])
def test_worker_recycled_after_n_models_or_above_the_memory_limit(limits, make_artifact) -> None:
    from memo.backends.executor import DifferentialExecutor
    from tests.conftest import TEST_PLUGINS

    artifact = make_artifact(EXAMPLES / "residual_net.json")
    with DifferentialExecutor([], plugins=[TEST_PLUGINS / "numpy_echo.py"], **limits) as small:
        first = small.run(artifact)
        assert small.worker_pids() == {"plugin-numpy-echo": None}  # stopped once the model was done
        second = small.run(artifact)
        assert small.worker_pids()["plugin-numpy-echo"] is None
    assert first.backends["numpy-echo"].status == second.backends["numpy-echo"].status == "ok"
    assert small._workers["plugin-numpy-echo"][0].starts == 2


def test_concurrent_runs_share_replicated_workers_and_a_run_may_pick_backends(make_artifact) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from memo.backends.executor import DifferentialExecutor
    from memo.errors import UsageError
    from memo.triage.probe import read_inputs
    from tests.conftest import TEST_PLUGINS

    artifacts = [make_artifact(one_layer_ir("Dense", {"units": 3}, (4,)), name=f"m{i}", seed=i) for i in range(6)]
    plugins = [TEST_PLUGINS / "numpy_echo.py", TEST_PLUGINS / "abort_on_poison.py"]
    with DifferentialExecutor([], plugins=plugins, replicas={"plugin-numpy-echo": 2}) as shared:
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(shared.run, artifacts))
        pids = shared.worker_pids()
        only = shared.run(artifacts[0], ["numpy-echo"])
        with pytest.raises(UsageError, match="not one this executor runs"):
            shared.run(artifacts[0], ["keras-jax"])
    assert {"plugin-numpy-echo.0", "plugin-numpy-echo.1", "plugin-abort-on-poison", "tf2onnx"} == set(pids)
    assert pids["plugin-numpy-echo.0"] != pids["plugin-numpy-echo.1"]
    assert None not in (pids["plugin-numpy-echo.0"], pids["plugin-numpy-echo.1"]), "both replicas served"
    for artifact, result in zip(artifacts, results):  # every run got its own model's outputs back
        assert {name: b.status for name, b in result.backends.items()} == {
            "numpy-echo": "ok", "abort-on-poison": "ok", "tf2onnx": "ok"}  # converters run under concurrency too
        echoed = load_outputs(result)["numpy-echo"][0]
        np.testing.assert_array_equal(echoed, next(iter(read_inputs(artifact.inputs_path).values())))
    assert list(only.backends) == ["numpy-echo"]


def test_plugin_whose_library_is_missing_fails_at_start(make_artifact) -> None:
    from memo.backends.executor import DifferentialExecutor
    from tests.conftest import TEST_PLUGINS

    with DifferentialExecutor([], plugins=[TEST_PLUGINS / "broken_import.py"]) as broken:
        result = broken.run(make_artifact(EXAMPLES / "residual_net.json"))
    failure = result.backends["broken-import"].failure
    assert (failure.stage, failure.status, failure.exc_type) == ("start", "error", "ModuleNotFoundError")
    assert [v.kind for v in judge(result)] == ["invalid"]
