"""OpenVINO (CPU plugin) and Apache TVM (Relax, LLVM) on tf2onnx's conversion, on the real libraries in real
worker processes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memo.model.ir import Layer, ModelIR
from memo.oracle import Thresholds, compare, judge, load_outputs
from tests.conftest import EXAMPLES, module_executor, one_layer_ir

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

BACKENDS = ["keras-tensorflow", "openvino", "tvm"]
MINE = ("openvino", "tvm")
# Keras's GRU becomes an ONNX Loop (tf2onnx rewrites only LSTM into the LSTM op), valid by onnx.checker's full
# check and run by ONNX Runtime. A check in OpenVINO's Loop translator fails on it ("canonical inputs size (10),
# does not match ... (7)"): a bug. TVM's frontend has no Loop converter: a refusal.
GRU = ("GRU", {"units": 4}, (5, 3))
# MaxPooling2D then Flatten: tf2onnx computes the new shape from Shape(NCHW pool output), gathered into NHWC
# order and cast; TVM's frontend keeps the gathered shape as a run-time tensor (even with static shapes), and
# its Reshape converter then raises a TypeError.
POOL_FLATTEN = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 8, 8, 3], "dtype": "float32"}),
                        Layer("pool", "MaxPooling2D", {}, ["x"]),
                        Layer("flat", "Flatten", {}, ["pool"])], ["flat"], name="pool_flatten")
# Bicubic resizing: tf2onnx writes Resize(mode=cubic, cubic_coeff_a=-0.5, exclude_outside=1, half_pixel),
# which ONNX Runtime and TVM compute as TensorFlow does; OpenVINO's CPU plugin differs by up to 0.07.
BICUBIC = ("Resizing", {"height": 9, "width": 9, "interpolation": "bicubic"}, (6, 6, 3))


engines = module_executor(BACKENDS, timeout_s=120)


def _run(executor, ir: ModelIR, root: Path, weights=None):
    from memo.artifact import prepare_artifact

    artifact = prepare_artifact(ir, root / "artifact", seed=0, weights=weights)
    return ir, artifact, executor.run(artifact)


@pytest.fixture(scope="module")
def conv_net(engines, tmp_path_factory: pytest.TempPathFactory):
    from memo.model.files import load_model_file

    loaded = load_model_file(EXAMPLES / "conv_net.json")
    return _run(engines, loaded.ir, tmp_path_factory.mktemp("conv"), loaded.weights)


@pytest.fixture(scope="module")
def pool_flatten(engines, tmp_path_factory: pytest.TempPathFactory):
    return _run(engines, POOL_FLATTEN, tmp_path_factory.mktemp("flatten"))


@pytest.fixture(scope="module")
def bicubic(engines, tmp_path_factory: pytest.TempPathFactory):
    return _run(engines, one_layer_ir(*BICUBIC), tmp_path_factory.mktemp("bicubic"))


def test_a_conv_net_agrees_with_keras_tensorflow(conv_net) -> None:
    _ir, _artifact, result = conv_net
    assert {name: b.status for name, b in result.backends.items()} == {name: "ok" for name in [*BACKENDS, "tf2onnx"]}
    for name in MINE:
        assert [s.stage for s in result.backends[name].stages] == ["convert", "load", "execute"]
    assert result.backends["openvino"].versions["openvino"].startswith("2026.")
    assert result.backends["tvm"].versions["apache-tvm"].startswith("0.27")
    assert judge(result) == []
    comparisons = compare(load_outputs(result), result.reference, Thresholds())
    # f32 inference: OpenVINO's default precision hint on a bf16-capable CPU would differ by ~1e-2
    assert all(comparisons[name].max_abs_diff is not None and comparisons[name].max_abs_diff < 1e-5 for name in MINE)


def test_two_inputs_and_three_outputs_keep_their_order(engines, make_artifact) -> None:
    # inputs declared zeta before alpha, outputs in neither the definition order nor alphabetical order
    ir = ModelIR([Layer("zeta", "InputLayer", {"batch_shape": [None, 4], "dtype": "float32"}),
                  Layer("alpha", "InputLayer", {"batch_shape": [None, 6], "dtype": "float32"}),
                  Layer("da", "Dense", {"units": 3}, ["alpha"]),
                  Layer("dz", "Dense", {"units": 5}, ["zeta"]),
                  Layer("cat", "Concatenate", {}, ["da", "dz"], call_style="list")], ["dz", "cat", "da"],
                 name="two_by_three")
    result = engines.run(make_artifact(ir))
    assert all(result.backends[name].status == "ok" for name in MINE) and judge(result) == []
    outputs = load_outputs(result)
    for name in MINE:
        assert [o.shape for o in outputs[name]] == [(2, 5), (2, 8), (2, 3)]
        for mine, reference in zip(outputs[name], outputs["keras-tensorflow"]):
            np.testing.assert_allclose(mine, reference, rtol=1e-5, atol=1e-5)


def test_tvm_imports_a_dense_layer_on_a_3d_input_with_the_batch_fixed(engines, make_artifact) -> None:
    # tf2onnx's Tensordot (Shape -> Gather -> Concat -> Reshape): with the symbolic batch of the ONNX file TVM's
    # import fails ("Reshape requires the input new shape to be Shape"); the backend imports with the inputs' batch
    result = engines.run(make_artifact(one_layer_ir("Dense", {"units": 3}, (5, 4))))
    assert {name: b.status for name, b in result.backends.items()} == {name: "ok" for name in [*BACKENDS, "tf2onnx"]}
    assert judge(result) == []


def test_a_loop_fails_openvino_conversion_and_tvm_refuses_it(engines, make_artifact) -> None:
    result = engines.run(make_artifact(one_layer_ir(*GRU)))
    assert result.backends["keras-tensorflow"].status == result.backends["tf2onnx"].status == "ok"
    openvino = result.backends["openvino"].failure
    assert (openvino.stage, openvino.status, openvino.exc_type) == ("convert", "error", "RuntimeError")
    assert "Model wasn't fully converted. Failed operations detailed log:" in openvino.message
    assert "does not match the sum of loop carried dependencies and two mandatory inputs" in openvino.message
    assert "Conversion is failed for: Loop-" in openvino.message
    tvm = result.backends["tvm"].failure
    assert (tvm.stage, tvm.status, tvm.exc_type) == ("convert", "unsupported", "OpNotImplemented")
    assert "The following operators are not supported for frontend ONNX: Loop" in tvm.message
    assert sorted((v.kind, v.backend, v.stage) for v in judge(result)) == [
        ("crash", "openvino", "convert"), ("unsupported", "tvm", "convert")]


def test_tvm_fails_to_import_a_flatten_after_pooling(pool_flatten) -> None:
    _ir, _artifact, result = pool_flatten
    assert result.backends["openvino"].status == "ok"
    tvm = result.backends["tvm"]
    # the import runs in the worker's execute stage (it needs the inputs' shapes) and is recorded as convert
    assert [(s.stage, s.status) for s in tvm.stages] == [("convert", "ok"), ("load", "ok"), ("convert", "error")]
    assert tvm.failure.exc_type == "TypeError"
    assert tvm.failure.message == ("Reshape requires the input new shape to be Shape. "
                                   "However, the given one is relax.TensorType")
    assert "from_onnx" in tvm.failure.traceback
    assert [(v.kind, v.backend, v.stage) for v in judge(result)] == [("crash", "tvm", "convert")]


def test_openvino_computes_bicubic_resizing_differently(bicubic) -> None:
    _ir, _artifact, result = bicubic
    assert all(b.status == "ok" for b in result.backends.values())
    verdicts = judge(result)
    assert [(v.kind, v.backend, v.stage) for v in verdicts] == [("inconsistency", "openvino", "execute")]
    comparisons = compare(load_outputs(result), result.reference, Thresholds())
    assert comparisons["tvm"].max_abs_diff < 1e-3 < 0.05 < comparisons["openvino"].max_abs_diff


def _materialize(root: Path, ir: ModelIR, artifact, bug: dict) -> tuple[Path, dict]:
    from memo.triage.materialize import materialize
    from memo.triage.probe import Roles

    folder = root / bug["id"]
    data = materialize(folder, artifact.directory, ir, bug, Roles(bug["library"], "keras-tensorflow", ()), {})
    assert (folder / "repro.py").exists() and (folder / "model.onnx").exists(), data.get("repro_missing")
    return folder, data


def test_a_tvm_crash_script_reproduces_in_a_fresh_process(pool_flatten, tmp_path: Path) -> None:
    from memo.triage.rerun import rerun_script

    ir, artifact, result = pool_flatten
    failure = result.backends["tvm"].failure
    bug = {"id": "crash-tvm-test", "kind": "crash", "library": "tvm", "stage": failure.stage,
           "exception": failure.exc_type, "error_message": failure.message}
    folder, data = _materialize(tmp_path, ir, artifact, bug)
    outcome = rerun_script(folder, data, timeout_s=300)
    assert outcome.returncode == 0 and outcome.reproduces is True, outcome.output
    assert "got:      TypeError at stage convert" in outcome.output


def test_an_openvino_inconsistency_script_reproduces_in_a_fresh_process(bicubic, tmp_path: Path) -> None:
    from memo.triage.rerun import rerun_script

    ir, artifact, _result = bicubic
    bug = {"id": "inconsistency-openvino-test", "kind": "inconsistency", "library": "openvino", "stage": "execute"}
    folder, data = _materialize(tmp_path, ir, artifact, bug)
    outcome = rerun_script(folder, data, timeout_s=300)
    assert outcome.returncode == 0 and outcome.reproduces is True, outcome.output
    assert "elements differ from keras-tensorflow" in outcome.output
