"""torch.compile (aot_eager and inductor) on onnx2torch's module, on the real libraries in real worker processes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memo.oracle import judge, load_outputs
from tests.conftest import EXAMPLES, module_executor, one_layer_ir

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

BACKENDS = ["keras-tensorflow", "onnx2torch", "torch-compile", "torch-inductor"]
COMPILERS = ("torch-compile", "torch-inductor")
# tf2onnx writes a Flatten as an ONNX Reshape; onnx2torch's Reshape calls torch.Size(shape_tensor), which runs
# eagerly but which Dynamo cannot trace (pytorch/pytorch#182652): both compiled backends crash at their first
# call, while the same module runs eagerly (onnx2torch) and agrees with Keras.
FLATTEN = ("Flatten", {}, (4, 4, 3))
DYNAMO_TORCH_SIZE = "TypeError: torch.Size() takes an iterable of 'int' (item 0 is 'FakeTensor')"


compile_executor = module_executor(BACKENDS, timeout_s=120)


def _artifact(model, root: Path, name: str):
    from memo.artifact import prepare_artifact
    from memo.model.files import load_model_file

    weights = None
    if isinstance(model, Path):
        loaded = load_model_file(model)
        model, weights = loaded.ir, loaded.weights
    return model, prepare_artifact(model, root / name, seed=0, weights=weights)


@pytest.fixture(scope="module")
def flatten(compile_executor, tmp_path_factory: pytest.TempPathFactory):
    ir, artifact = _artifact(one_layer_ir(*FLATTEN), tmp_path_factory.mktemp("flatten"), "flatten")
    return ir, artifact, compile_executor.run(artifact, backends=BACKENDS)


def test_a_conv_net_agrees_with_keras_and_with_eager_onnx2torch(compile_executor, tmp_path: Path) -> None:
    _ir, artifact = _artifact(EXAMPLES / "conv_net.json", tmp_path, "conv")
    assert compile_executor.members["torch-inductor"].sampled_out(artifact)  # named: runs anyway
    result = compile_executor.run(artifact, backends=BACKENDS)
    assert {name: b.status for name, b in result.backends.items()} == {name: "ok" for name in [*BACKENDS, "tf2onnx"]}
    for name in COMPILERS:
        assert [s.stage for s in result.backends[name].stages] == ["convert", "load", "execute"]
        assert result.backends[name].versions["torch"].startswith("2.")
    assert judge(result) == []
    outputs = load_outputs(result)
    assert outputs["torch-compile"][0].shape == outputs["keras-tensorflow"][0].shape == (2, 10)
    # aot_eager runs the captured graph with eager kernels: the same numbers as the eager module
    np.testing.assert_allclose(outputs["torch-compile"][0], outputs["onnx2torch"][0], rtol=0, atol=1e-6)
    np.testing.assert_allclose(outputs["torch-inductor"][0], outputs["onnx2torch"][0], rtol=0, atol=1e-5)


def test_inductor_is_sampled_and_skips_other_models_with_a_record(compile_executor, tmp_path: Path) -> None:
    _ir, artifact = _artifact(one_layer_ir("Dense", {"units": 3}, (4,)), tmp_path, "dense")
    assert compile_executor.members["torch-inductor"].sampled_out(artifact)
    assert compile_executor.members["torch-inductor"].sample_every == 10
    assert not compile_executor.members["torch-compile"].sampled_out(artifact)
    result = compile_executor.run(artifact)  # no backends named: the campaign's way
    skipped = result.backends["torch-inductor"]
    assert skipped.status == "skipped"
    assert [(s.stage, s.status) for s in skipped.stages] == [("sample", "skipped")]
    assert "one model in 10" in skipped.stages[0].message
    assert {name: b.status for name, b in result.backends.items() if name != "torch-inductor"} == \
        {name: "ok" for name in ["keras-tensorflow", "onnx2torch", "torch-compile", "tf2onnx"]}
    assert judge(result) == []


def test_dynamo_crash_on_onnx2torch_reshape_is_recorded_against_the_compilers(flatten) -> None:
    _ir, _artifact, result = flatten
    assert result.backends["onnx2torch"].status == "ok"
    for name in COMPILERS:
        failure = result.backends[name].failure
        assert (failure.status, failure.stage, failure.exc_type) == ("error", "execute", "InternalTorchDynamoError")
        # the message is the error itself; Dynamo's listing of the model's own code goes to the traceback
        assert failure.message == DYNAMO_TORCH_SIZE
        assert "from user code:" in failure.traceback and "onnx2torch/node_converters/reshape.py" in failure.traceback
    # both compilers trace with Dynamo: inductor's identical failure is torch-compile's one finding
    verdicts = judge(result)
    assert [(v.kind, v.backend, v.stage) for v in verdicts] == [("crash", "torch-compile", "execute")]
    assert verdicts[0].also_in == ["torch-inductor"]


def test_the_crash_script_reproduces_it_in_a_fresh_process(flatten, tmp_path: Path) -> None:
    from memo.triage.materialize import materialize
    from memo.triage.probe import Roles
    from memo.triage.rerun import rerun_script

    ir, artifact, result = flatten
    failure = result.backends["torch-compile"].failure
    bug = {"id": "crash-torch-compile-test", "kind": "crash", "library": "torch-compile", "stage": "execute",
           "exception": failure.exc_type, "error_message": failure.message}
    folder = tmp_path / bug["id"]
    data = materialize(folder, artifact.directory, ir, bug, Roles("torch-compile", "keras-tensorflow", ()), {})
    assert (folder / "model.onnx").exists()
    outcome = rerun_script(folder, data, timeout_s=300)
    assert outcome.returncode == 0 and outcome.reproduces is True, outcome.output
