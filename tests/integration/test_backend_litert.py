"""TensorFlow's TFLite converter (in the tf2onnx worker, from its shared load) and LiteRT running the flatbuffer,
on the real libraries in real worker processes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memo.model.ir import Layer, ModelIR
from memo.oracle import Thresholds, compare, judge, load_outputs
from tests.conftest import EXAMPLES, module_executor, one_layer_ir, run_model
from tests.integration.triage_fixtures import materialize_bug

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

BACKENDS = ["keras-tensorflow", "litert"]
BACKEND = "litert"
CONVERTER = "tflite-converter"
# A Dense layer on a rank-7 tensor: the converter writes a FULLY_CONNECTED that LiteRT runs correctly with its
# builtin kernel, but the XNNPACK delegate LiteRT applies by default accepts the node and then fails to
# prepare it, so allocate_tensors raises and the model cannot run at all.
RANK7_DENSE = ("Dense", {"units": 2}, (2, 3, 2, 2, 3, 2))


litert_executor = module_executor(BACKENDS, timeout_s=60)


@pytest.fixture(scope="module")
def conv_net(litert_executor, tmp_path_factory: pytest.TempPathFactory):
    return run_model(litert_executor, EXAMPLES / "conv_net.json", tmp_path_factory.mktemp("conv"))


@pytest.fixture(scope="module")
def rank7_dense(litert_executor, tmp_path_factory: pytest.TempPathFactory):
    return run_model(litert_executor, one_layer_ir(*RANK7_DENSE), tmp_path_factory.mktemp("rank7"))


def test_a_conv_net_agrees_with_keras_tensorflow(conv_net, litert_executor) -> None:
    _ir, artifact, result = conv_net
    assert {name: b.status for name, b in result.backends.items()} == {name: "ok" for name in [*BACKENDS, CONVERTER]}
    assert [s.stage for s in result.backends[CONVERTER].stages] == ["load", "convert"]
    assert [s.stage for s in result.backends[BACKEND].stages] == ["load", "execute"]
    assert result.backends[CONVERTER].versions["tensorflow-cpu"].startswith("2.")
    assert result.backends[BACKEND].versions["ai-edge-litert"].startswith("2.")
    assert artifact.path_for("tflite").read_bytes()[4:8] == b"TFL3"  # the flatbuffer's file identifier
    assert judge(result) == []
    comparisons = compare(load_outputs(result), result.reference, Thresholds())
    assert comparisons[BACKEND].max_abs_diff is not None and comparisons[BACKEND].max_abs_diff < 1e-4
    # the LiteRT worker is a light process: TensorFlow is not loaded in it
    pid = litert_executor.worker_pids()[BACKEND]
    assert pid is not None
    maps = Path(f"/proc/{pid}/maps").read_text()
    assert "ai_edge_litert" in maps and "/site-packages/tensorflow/" not in maps


def test_a_recurrent_net_converts_with_a_static_batch(litert_executor, tmp_path: Path) -> None:
    # with the shared trace's dynamic batch, no recurrent layer converts ("'tf.TensorListReserve' op requires
    # element_shape to be static during TF Lite transformation pass"): the converter retraces with the batch
    from memo.artifact import prepare_artifact
    from memo.model.files import load_model_file

    loaded = load_model_file(EXAMPLES / "lstm_net.json")
    artifact = prepare_artifact(loaded.ir, tmp_path / "artifact", seed=0, weights=loaded.weights)
    result = litert_executor.run(artifact)
    assert {name: b.status for name, b in result.backends.items()} == {name: "ok" for name in [*BACKENDS, CONVERTER]}
    assert judge(result) == []


@pytest.mark.parametrize("class_name,config,shape,op,code", [
    # 3-D pooling has no TFLite builtin (only a TF Select kernel)
    ("MaxPooling3D", {"pool_size": 2}, (4, 4, 4, 2), "tf.MaxPool3D", "ERROR_NEEDS_FLEX_OPS"),
    # Lanczos resizing is not even a TF Select op: it would need a custom op
    ("UpSampling2D", {"size": [2, 2], "interpolation": "lanczos3"}, (6, 6, 3), "tf.ScaleAndTranslate",
     "ERROR_NEEDS_CUSTOM_OPS"),
])
def test_an_op_without_a_tflite_builtin_is_unsupported_by_the_converter_alone(
        litert_executor, make_artifact, class_name: str, config: dict, shape: tuple, op: str, code: str) -> None:
    result = litert_executor.run(make_artifact(one_layer_ir(class_name, config, shape)))
    assert result.backends["keras-tensorflow"].status == "ok"
    failure = result.backends[CONVERTER].failure
    assert (failure.stage, failure.status, failure.exc_type) == ("convert", "unsupported", "ConverterError")
    # the message is the converter's structured errors, without the Python call sites TensorFlow puts first
    assert failure.message.startswith(f"'{op}' op is neither a custom op nor a flex op") and code in failure.message
    assert "<frozen runpy>" not in failure.message and "called from" not in failure.message
    assert result.backends[BACKEND].status == "skipped"
    assert "no tflite file: tflite-converter unsupported" in result.backends[BACKEND].failure.message
    assert [(v.kind, v.backend, v.stage) for v in judge(result)] == [("unsupported", CONVERTER, "convert")]


def test_litert_failing_to_prepare_a_converted_model_is_a_finding_against_litert(rank7_dense) -> None:
    _ir, artifact, result = rank7_dense
    assert result.backends["keras-tensorflow"].status == "ok"
    assert result.backends[CONVERTER].status == "ok" and artifact.path_for("tflite").exists()
    failure = result.backends[BACKEND].failure
    assert (failure.stage, failure.status, failure.exc_type) == ("load", "error", "RuntimeError")
    assert "failed to delegate FULLY_CONNECTED node" in failure.message
    assert "(TfLiteXNNPackDelegate) failed to prepare" in failure.message
    assert [(v.kind, v.backend, v.stage) for v in judge(result)] == [("crash", BACKEND, "load")]


def test_two_inputs_and_four_outputs_keep_their_order(litert_executor, make_artifact) -> None:
    # inputs declared zeta before alpha (not alphabetical); zeta is also an output (through an Identity the
    # converter removes), which moves it after alpha in the flatbuffer's own input list; the outputs are in
    # neither the definition order nor the order of the flatbuffer's own output list
    ir = ModelIR([Layer("zeta", "InputLayer", {"batch_shape": [None, 4], "dtype": "float32"}),
                  Layer("alpha", "InputLayer", {"batch_shape": [None, 6], "dtype": "float32"}),
                  Layer("da", "Dense", {"units": 3}, ["alpha"]),
                  Layer("dz", "Dense", {"units": 5}, ["zeta"]),
                  Layer("cat", "Concatenate", {}, ["da", "dz"], call_style="list"),
                  Layer("same", "Identity", {}, ["zeta"])], ["dz", "same", "cat", "da"], name="two_by_four")
    result = litert_executor.run(make_artifact(ir))
    assert result.backends[BACKEND].status == "ok" and judge(result) == []
    outputs = load_outputs(result)
    assert [o.shape for o in outputs[BACKEND]] == [(2, 5), (2, 4), (2, 8), (2, 3)] == \
        [o.shape for o in outputs["keras-tensorflow"]]
    for mine, reference in zip(outputs[BACKEND], outputs["keras-tensorflow"]):
        np.testing.assert_allclose(mine, reference, rtol=1e-5, atol=1e-5)


def test_a_litert_crash_script_reproduces_in_a_fresh_process(rank7_dense, tmp_path: Path) -> None:
    from memo.triage.rerun import rerun_script

    ir, artifact, result = rank7_dense
    failure = result.backends[BACKEND].failure
    bug = {"id": "crash-litert-test", "kind": "crash", "library": BACKEND, "stage": "load",
           "exception": failure.exc_type, "error_message": failure.message}
    folder, data = materialize_bug(tmp_path, ir, artifact, bug, BACKEND)
    assert (folder / "model.tflite").exists()
    outcome = rerun_script(folder, data, timeout_s=300)
    assert outcome.returncode == 0 and outcome.reproduces is True, outcome.output


def test_a_converter_failure_script_raises_the_same_exception_in_a_fresh_process(litert_executor, tmp_path: Path) \
        -> None:
    # the converter's message must not depend on the process that runs it (the worker is run as a module, the
    # script as a file): with TensorFlow's call sites in it, the script would raise "a different" exception.
    # (No conversion that crashes the converter is known: its refusal of MaxPool3D stands in for one here.)
    from memo.artifact import prepare_artifact
    from memo.triage.rerun import rerun_script

    ir = one_layer_ir("MaxPooling3D", {"pool_size": 2}, (4, 4, 4, 2))
    artifact = prepare_artifact(ir, tmp_path / "artifact", seed=0)
    failure = litert_executor.run(artifact).backends[CONVERTER].failure
    bug = {"id": "crash-tflite-converter-test", "kind": "crash", "library": CONVERTER, "stage": "convert",
           "exception": failure.exc_type, "error_message": failure.message}
    folder, data = materialize_bug(tmp_path, ir, artifact, bug, CONVERTER)
    outcome = rerun_script(folder, data, timeout_s=300)
    assert outcome.returncode == 0 and outcome.reproduces is True, outcome.output


def test_a_wrong_conversion_script_converts_then_runs_litert(conv_net, tmp_path: Path) -> None:
    from memo.triage.rerun import rerun_script

    ir, artifact, _result = conv_net
    bug = {"id": "inconsistency-tflite-converter-test", "kind": "inconsistency", "library": CONVERTER,
           "stage": "convert"}
    folder, data = materialize_bug(tmp_path, ir, artifact, bug, BACKEND)
    healthy = rerun_script(folder, data, timeout_s=300)  # the conversion agrees: it does not reproduce
    assert healthy.returncode == 1 and healthy.reproduces is False, healthy.output
    with np.load(folder / "expected.npz") as saved:
        np.savez(folder / "expected.npz", out_0=saved["out_0"] + 0.5)
    outcome = rerun_script(folder, data, timeout_s=300)
    assert outcome.returncode == 0 and outcome.reproduces is True, outcome.output
    assert "elements differ from keras-tensorflow" in outcome.output
