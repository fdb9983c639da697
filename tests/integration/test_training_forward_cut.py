"""A training difference whose cause is one layer's training-mode forward output, triaged on the real workers: the
forward probe runs before the reduction and cuts the model to that layer, so the reduction starts from one layer
(long150d: a 38-layer model's training bug cut to Keras on torch's 'same' AveragePooling2D in 4 runs; the reduction
from the whole model had taken 199 runs). Keras on torch pads a 'same' average pooling with an uneven border
otherwise than TensorFlow. The store holds the training verdict alone: with the inference verdict of that model, the
forward difference would be that inference bug (folded), as a campaign finds it when the inference run agrees (the
campaign's model hid the pooling's border) and training's does not."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memo.model.ir import Layer, ModelIR
from memo.store import CampaignStore
from tests.conftest import triaged_training_store

BACKENDS = ["keras-tensorflow", "keras-torch"]


def pooled_model() -> ModelIR:
    """Layers before and after a 'same' average pooling, each with weights whose gradient the pooling changes."""
    return ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 8, 8, 2], "dtype": "float32"}),
                    Layer("mix", "Dense", {"units": 3, "activation": "tanh"}, ["x"]),
                    Layer("conv", "Conv2D", {"filters": 3, "kernel_size": 3, "padding": "same"}, ["mix"]),
                    Layer("pool", "AveragePooling2D", {"pool_size": 3, "strides": 2, "padding": "same"}, ["conv"]),
                    Layer("flat", "Flatten", {}, ["pool"]),
                    Layer("out", "Dense", {"units": 2}, ["flat"])], ["out"], "pooled_train")


@pytest.fixture(scope="module")
def triaged(tmp_path_factory: pytest.TempPathFactory) -> tuple[CampaignStore, Any]:
    return triaged_training_store(tmp_path_factory.mktemp("forward-cut"), pooled_model(), BACKENDS, 5, 300.0,
                                  inference=False)


def test_a_training_bug_made_by_a_forward_difference_is_cut_to_the_layer_before_its_reduction(
        triaged: tuple[CampaignStore, Any]) -> None:
    store, summary = triaged
    assert summary.errors == []
    bugs = [bug for bug in store.triage.load_bugs() if bug.kind.startswith("training-") and bug.bug_dir]
    assert bugs, [(bug.kind, bug.stage, bug.parts) for bug in store.triage.load_bugs()]
    cut = [bug for bug in bugs if (bug.reduction.get("steps") or [""])[0].startswith("forward probe: pool ")]
    assert cut, [(bug.id, bug.stage, bug.reduction.get("steps")) for bug in bugs]
    bug = cut[0]
    assert bug.stage == "forward" and bug.layer_class == "AveragePooling2D" and bug.reduced_layers == 1
    assert bug.original_layers == 5 and bug.reduction["runs"] <= 8, bug.reduction
    assert bug.reproduces is True
    from memo.bug_files import read_bug_file

    data = read_bug_file(Path(str(bug.bug_dir)))
    # localized by the probe; what backward order blamed on the finding's model is kept beside it
    assert data["localization"]["layer"] == "pool" and "backward_order" in data["localization"]


def test_a_pass_without_an_executor_computes_a_training_bugs_missing_truth(
        triaged: tuple[CampaignStore, Any]) -> None:
    """``memo report NAME --triage`` starts its own executor on its first need: a pass whose first unit was a
    training bug's missing float64 truth trained the folder's model on no executor and wrote "the folder's model did
    not show the bug again" (t66's copy: two confirmed truths turned "unavailable")."""
    from memo.bug_files import read_bug_file, write_bug_file
    from memo.triage import triage_campaign

    store, _ = triaged
    bug = next(bug for bug in store.triage.load_bugs() if bug.kind.startswith("training-") and bug.bug_dir)
    folder = Path(str(bug.bug_dir))
    data = read_bug_file(folder)
    assert data["truth"]["decision"] == "confirmed", data["truth"]
    write_bug_file(folder, {key: value for key, value in data.items() if key != "truth"})
    summary = triage_campaign(store, time_budget_s=120.0, next_python="none")
    assert summary.errors == []
    assert read_bug_file(folder)["truth"]["decision"] == "confirmed", read_bug_file(folder)["truth"]
