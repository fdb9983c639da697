"""Generated scripts against real libraries: each runner loads and runs its library on its own (no memo),
agrees with the reference on a healthy model (exit 1, "does not reproduce"), and flags a difference (exit 0)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

BACKENDS = ["keras-tensorflow", "keras-jax", "onnxruntime", "onnx2torch"]


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory):
    from memo.artifact import prepare_artifact
    from memo.backends.executor import DifferentialExecutor
    from memo.model.ir import Layer, ModelIR

    root = tmp_path_factory.mktemp("scripts")
    ir = ModelIR([Layer("input", "InputLayer", {"batch_shape": [None, 6, 6, 2], "dtype": "float32"}),
                  Layer("conv", "Conv2D", {"filters": 3, "kernel_size": 3}, ["input"]),
                  Layer("pool", "GlobalAveragePooling2D", {}, ["conv"])], ["pool"])
    artifact = prepare_artifact(ir, root / "artifact", seed=5)
    with DifferentialExecutor(backends=BACKENDS, timeout_s=120) as executor:
        result = executor.run(artifact)
    assert all(result.backends[name].status == "ok" for name in BACKENDS), result.to_json()
    return root, ir, artifact


def _folder(root: Path, ir, artifact, library: str) -> tuple[Path, dict]:
    from memo.triage.materialize import materialize
    from memo.triage.probe import Roles

    bug = {"id": f"inconsistency-{library}-test", "kind": "inconsistency", "library": library, "stage": "execute"}
    folder = root / bug["id"]
    data = materialize(folder, artifact.directory, ir, bug, Roles(library, "keras-tensorflow", ()), {})
    return folder, data


@pytest.mark.parametrize("library", ["keras-jax", "onnxruntime", "onnx2torch"])
def test_a_healthy_model_does_not_reproduce(executed, library: str) -> None:
    from memo.triage.rerun import rerun_script

    root, ir, artifact = executed
    folder, data = _folder(root, ir, artifact, library)
    outcome = rerun_script(folder, data, timeout_s=300)
    assert outcome.returncode == 1 and outcome.reproduces is False, outcome.output
    assert "does not reproduce" in outcome.output


def test_a_difference_from_the_expected_output_reproduces(executed) -> None:
    from memo.triage.rerun import rerun_script

    root, ir, artifact = executed
    folder, data = _folder(root, ir, artifact, "onnxruntime")
    with np.load(folder / "expected.npz") as saved:
        np.savez(folder / "expected.npz", out_0=saved["out_0"] + 0.5)
    outcome = rerun_script(folder, data, timeout_s=300)
    assert outcome.returncode == 0 and outcome.reproduces is True, outcome.output
    assert "elements differ from keras-tensorflow" in outcome.output
