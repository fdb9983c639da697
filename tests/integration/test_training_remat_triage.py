"""Triage of training findings made under ``keras.RematScope(mode="full")`` on the real workers (docs/training.md,
"Rematerialization"): an activity regularizer's gradient, wrong on TensorFlow, was pinned on torch (JAX failed, so
torch was the only backend compared with the reference); float64 sides with torch and triage turns the bug round to
TensorFlow, keeps the mode (the same model without remat trains right), and writes a repro.py that shows it."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memo.model.ir import Layer, ModelIR
from memo.store import CampaignStore
from tests.conftest import triaged_training_store

BACKENDS = ["keras-tensorflow", "keras-jax", "keras-torch"]
SEED = 3


def regularized() -> ModelIR:
    return ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 6], "dtype": "float32"}),
                    Layer("d", "Dense", {"units": 4, "activation": "tanh"}, ["x"]),
                    Layer("r", "ActivityRegularization", {"l1": 0.5, "l2": 1.0}, ["d"]),
                    Layer("last", "Activation", {"activation": "tanh"}, ["r"])], ["last"], "remat_triage")


@pytest.fixture(scope="module")
def triaged(tmp_path_factory: pytest.TempPathFactory) -> tuple[CampaignStore, Any]:
    return triaged_training_store(tmp_path_factory.mktemp("remat-triage"), regularized(), BACKENDS, SEED, 400.0,
                                  optimizer="", remat="full")


def test_tensorflows_wrong_gradient_under_remat_is_turned_round_to_tensorflow(
        triaged: tuple[CampaignStore, Any]) -> None:
    from memo.bug_files import read_bug_file

    store, summary = triaged
    assert summary.errors == []
    bugs = {bug.kind: bug for bug in store.triage.load_bugs() if bug.merged_into is None}
    gradient = bugs["training-inconsistency"]
    assert gradient.library == "keras-tensorflow" and gradient.parts["library"] == "keras-tensorflow", gradient.parts
    assert gradient.parts["remat"] == "full"
    data = read_bug_file(Path(str(gradient.bug_dir)))
    assert data["reference"] == "keras-torch" and data["training"]["remat"] == "full"
    assert data["truth"]["decision"] == "confirmed", data["truth"]
    assert "remat full: needed" in " ".join(data["reduction"]["steps"]), data["reduction"]["steps"]
    assert 'REMAT = \'full\'' in (Path(str(gradient.bug_dir)) / "repro.py").read_text()
    assert gradient.reproduces is True


def test_jaxs_failure_under_remat_is_its_own_bug_keyed_by_the_mode(triaged: tuple[CampaignStore, Any]) -> None:
    store, _ = triaged
    crashes = [bug for bug in store.triage.load_bugs() if bug.kind == "training-crash" and bug.merged_into is None]
    assert [(bug.library, bug.parts.get("remat")) for bug in crashes] == [("keras-jax", "full")], crashes
    assert "UnexpectedTracerError" in str(crashes[0].parts.get("exception")), crashes[0].parts
    assert crashes[0].reproduces is True
