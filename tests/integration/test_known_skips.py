"""Known outcomes on the real workers: tf2onnx's own message teaches the skip, and the executor's ``skip`` then
runs neither tf2onnx nor the backends that would read its file."""
from __future__ import annotations

from pathlib import Path

import pytest

from memo.artifact import prepare_artifact
from memo.backends.executor import KNOWN_STAGE
from memo.campaign.known import KNOWN_PREFIX, KnownOutcomes
from memo.oracle import judge
from tests.conftest import module_executor, one_layer_ir

pytestmark = pytest.mark.integration

executor = module_executor(["keras-jax", "onnxruntime", "onnx2torch"])


def test_a_declined_conversion_teaches_a_skip_of_tf2onnx_and_its_consumers(executor, tmp_path: Path) -> None:
    # tf2onnx has no handler for ScaleAndTranslate (lanczos resize) and names the node it left unconverted
    ir = one_layer_ir("UpSampling2D", {"size": [2, 2], "interpolation": "lanczos3"}, (6, 6, 3))
    first = executor.run(prepare_artifact(ir, tmp_path / "m0", seed=0))
    assert first.backends["tf2onnx"].status == "unsupported"
    known = KnownOutcomes(threshold=1)
    known.learn(ir, first)
    skip = known.skips(ir, "m1")
    assert list(skip) == ["tf2onnx"]
    assert skip["tf2onnx"].startswith(f"{KNOWN_PREFIX}: tf2onnx declined ScaleAndTranslate in UpSampling2D layers "
                                      "like 'layer' on 1 model ")

    artifact = prepare_artifact(ir, tmp_path / "m1", seed=0)
    result = executor.run(artifact, skip={**skip, "not-a-member": "ignored"})
    statuses = {name: (entry.status, [(s.stage, s.message) for s in entry.stages])
                for name, entry in result.backends.items()}
    assert statuses == {
        "keras-jax": ("ok", [("load", ""), ("execute", "")]),
        "onnxruntime": ("skipped", [("convert", "no onnx file: tf2onnx skipped")]),
        "onnx2torch": ("skipped", [("convert", "no onnx file: tf2onnx skipped")]),
        "tf2onnx": ("skipped", [(KNOWN_STAGE, skip["tf2onnx"])])}
    assert result.backends["tf2onnx"].role == "converter"
    assert judge(result) == []  # a skip is no finding
    assert not artifact.path_for("onnx").exists()
    assert [(name, entry.stages[-1].message) for name, entry in first.backends.items() if entry.status == "skipped"] \
        == [("onnxruntime", "no onnx file: tf2onnx unsupported"), ("onnx2torch", "no onnx file: tf2onnx unsupported")]
