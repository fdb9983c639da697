"""A training bug's title: the stage's array and how it goes wrong, with the figure its check prints."""
from __future__ import annotations

from memo.filing.training_idiom import training_symptom


def test_a_gradient_difference_names_the_weight_the_reference_and_the_figure() -> None:
    record = {"array": "grad_0", "name": "dense/kernel",
              "figures": {"mismatched": 99, "elements": 100, "max_abs_diff": 0.2049638, "tolerance": 0.001}}
    assert training_symptom("gradients", "training-inconsistency", record, "keras-tensorflow") == \
        "gradient of dense/kernel differs from keras-tensorflow by 0.205"


def test_an_optimizer_stage_names_the_catalogue_entry_class_and_nan_says_finite() -> None:
    record = {"array": "opt_1", "name": "conv/bias", "optimizer": "nadam"}
    assert training_symptom("optimizer", "training-nan", record, "keras-torch") == \
        "Nadam update of conv/bias is NaN/Inf where keras-torch computes it finite"
    assert training_symptom("adam", "training-inconsistency", {"name": "d/kernel"}, "keras-tensorflow") == \
        "Adam update of d/kernel differs from keras-tensorflow"


def test_a_crash_leaves_the_title_to_its_message() -> None:
    assert training_symptom("gradients", "training-crash", {"name": "x"}, "keras-tensorflow") == ""
