"""Keras's own ONNX export (Keras on torch, torch.onnx's TorchScript exporter) run by ONNX Runtime: a second
Keras -> ONNX path beside tf2onnx, on the real libraries in real worker processes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from memo.model.ir import Layer, ModelIR
from memo.oracle import Thresholds, compare, judge, load_outputs
from tests.conftest import EXAMPLES, module_executor, one_layer_ir, run_model
from tests.integration.triage_fixtures import materialize_bug

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

BACKENDS = ["keras-tensorflow", "onnxruntime-keras-export"]
BACKEND = "onnxruntime-keras-export"
CONVERTER = "keras-export"
# Same-padded pooling: Keras on torch computes the padding from the traced input shape, which torch.onnx
# cannot take as a kernel parameter ("... because it is not constant"): Keras's export of it fails.
SAME_POOLING = ("MaxPooling2D", {"pool_size": 3, "strides": 2, "padding": "same"}, (7, 7, 3))


export_executor = module_executor(BACKENDS, timeout_s=60)


@pytest.fixture(scope="module")
def conv_net(export_executor, tmp_path_factory: pytest.TempPathFactory):
    return run_model(export_executor, EXAMPLES / "conv_net.json", tmp_path_factory.mktemp("conv"))


@pytest.fixture(scope="module")
def same_pooling(export_executor, tmp_path_factory: pytest.TempPathFactory):
    return run_model(export_executor, one_layer_ir(*SAME_POOLING), tmp_path_factory.mktemp("pool"))


def test_a_conv_net_agrees_with_keras_tensorflow(conv_net) -> None:
    _ir, artifact, result = conv_net
    assert {name: b.status for name, b in result.backends.items()} == {name: "ok" for name in [*BACKENDS, CONVERTER]}
    assert [s.stage for s in result.backends[CONVERTER].stages] == ["load", "convert"]
    assert result.backends[CONVERTER].versions["torch"].startswith("2.")
    assert judge(result) == []
    comparisons = compare(load_outputs(result), result.reference, Thresholds())
    assert comparisons[BACKEND].max_abs_diff is not None and comparisons[BACKEND].max_abs_diff < 1e-4
    graph = onnx.load(str(artifact.path_for("keras-onnx"))).graph
    assert graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"  # Keras exports a dynamic batch


def test_an_export_failure_is_a_finding_against_keras_export_alone(same_pooling) -> None:
    _ir, _artifact, result = same_pooling
    assert result.backends["keras-tensorflow"].status == "ok"
    assert result.backends[BACKEND].status == "skipped"
    assert "no keras-onnx file: keras-export error" in result.backends[BACKEND].failure.message
    failure = result.backends[CONVERTER].failure
    assert (failure.stage, failure.status, failure.exc_type) == ("convert", "error", "SymbolicValueError")
    assert "because it is not constant" in failure.message
    verdicts = judge(result)
    assert [(v.kind, v.backend, v.stage) for v in verdicts] == [("crash", CONVERTER, "convert")]


@pytest.mark.parametrize("class_name,config,shape,stage,status,exc_type,phrase", [
    # torch.onnx has no symbolic function for aten::rms_norm (a deliberate, declared refusal)
    ("RMSNormalization", {}, (6, 4), "convert", "unsupported", "UnsupportedOperatorError",
     "Exporting the operator 'aten::rms_norm' to ONNX opset version"),
    # adaptive pooling whose output size does not divide the input size: refused by torch.onnx on purpose
    ("AdaptiveMaxPooling2D", {"output_size": [4, 4]}, (7, 7, 3), "convert", "unsupported", "SymbolicValueError",
     "Unsupported: ONNX export of operator adaptive_max_pool2d"),
    # Keras on torch cannot run Lanczos resizing at all: the call before the export fails, at stage load
    ("UpSampling2D", {"size": [2, 2], "interpolation": "lanczos3"}, (6, 6, 3), "load", "error", "ValueError",
     "Resizing with Lanczos interpolation is not supported by the PyTorch backend"),
])
def test_what_keras_export_declines_or_cannot_run_names_its_stage(export_executor, make_artifact, class_name: str,
                                                                  config: dict, shape: tuple, stage: str,
                                                                  status: str, exc_type: str, phrase: str) -> None:
    result = export_executor.run(make_artifact(one_layer_ir(class_name, config, shape)))
    assert result.backends["keras-tensorflow"].status == "ok"
    assert result.backends[BACKEND].status == "skipped"
    failure = result.backends[CONVERTER].failure
    assert (failure.stage, failure.status, failure.exc_type) == (stage, status, exc_type)
    assert phrase in failure.message
    kind = "unsupported" if status == "unsupported" else "crash"
    assert [(v.kind, v.backend, v.stage) for v in judge(result)] == [(kind, CONVERTER, stage)]


def test_two_inputs_and_two_outputs_keep_their_order(export_executor, make_artifact) -> None:
    # inputs declared zeta before alpha (not alphabetical), outputs listed opposite to their definition
    ir = ModelIR([Layer("zeta", "InputLayer", {"batch_shape": [None, 4], "dtype": "float32"}),
                  Layer("alpha", "InputLayer", {"batch_shape": [None, 3], "dtype": "float32"}),
                  Layer("dz", "Dense", {"units": 5}, ["zeta"]),
                  Layer("da", "Dense", {"units": 2}, ["alpha"])], ["da", "dz"], name="two_by_two")
    artifact = make_artifact(ir)
    result = export_executor.run(artifact)
    assert result.backends[BACKEND].status == "ok" and judge(result) == []
    outputs = load_outputs(result)
    assert [o.shape for o in outputs[BACKEND]] == [(2, 2), (2, 5)] == [o.shape for o in outputs["keras-tensorflow"]]
    for mine, reference in zip(outputs[BACKEND], outputs["keras-tensorflow"]):
        np.testing.assert_allclose(mine, reference, rtol=1e-5, atol=1e-5)
    assert [arg.name for arg in onnx.load(str(artifact.path_for("keras-onnx"))).graph.input] == ["zeta", "alpha"]


def test_an_input_the_export_drops_is_fed_by_name(export_executor, make_artifact) -> None:
    # torch.onnx drops a graph input that no output depends on: feeding by position would give "used" the
    # array of "unused" (ONNX Runtime: "Got invalid dimensions for input: used"), a false finding
    ir = ModelIR([Layer("unused", "InputLayer", {"batch_shape": [None, 4], "dtype": "float32"}),
                  Layer("used", "InputLayer", {"batch_shape": [None, 3], "dtype": "float32"}),
                  Layer("dense", "Dense", {"units": 2}, ["used"])], ["dense"], name="unused_input")
    artifact = make_artifact(ir)
    result = export_executor.run(artifact)
    assert [arg.name for arg in onnx.load(str(artifact.path_for("keras-onnx"))).graph.input] == ["used"]
    assert result.backends[BACKEND].status == "ok" and judge(result) == []


def test_an_export_crash_script_reproduces_in_a_fresh_process(same_pooling, tmp_path: Path) -> None:
    from memo.triage.rerun import rerun_script

    ir, artifact, result = same_pooling
    failure = result.backends[CONVERTER].failure
    bug = {"id": "crash-keras-export-test", "kind": "crash", "library": CONVERTER, "stage": "convert",
           "exception": failure.exc_type, "error_message": failure.message}
    folder, data = materialize_bug(tmp_path, ir, artifact, bug, CONVERTER)
    assert 'os.environ["KERAS_BACKEND"] = "torch"' in (folder / "repro.py").read_text()
    outcome = rerun_script(folder, data, timeout_s=300)
    assert outcome.returncode == 0 and outcome.reproduces is True, outcome.output


def test_a_wrong_export_script_converts_then_runs_onnx_runtime(conv_net, tmp_path: Path) -> None:
    from memo.triage.rerun import rerun_script

    ir, artifact, _result = conv_net
    bug = {"id": "inconsistency-keras-export-test", "kind": "inconsistency", "library": CONVERTER, "stage": "convert"}
    folder, data = materialize_bug(tmp_path, ir, artifact, bug, BACKEND)
    healthy = rerun_script(folder, data, timeout_s=300)  # the export agrees: it does not reproduce
    assert healthy.returncode == 1 and healthy.reproduces is False, healthy.output
    with np.load(folder / "expected.npz") as saved:
        np.savez(folder / "expected.npz", out_0=saved["out_0"] + 0.5)
    outcome = rerun_script(folder, data, timeout_s=300)
    assert outcome.returncode == 0 and outcome.reproduces is True, outcome.output
    assert "elements differ from keras-tensorflow" in outcome.output
