"""Reducing an optimizer-stage training bug's catalogue entry to its simplest form that still shows the bug
(memo.triage.optimizer_reduction, memo.backends.training_optimizers.simpler_forms): pure, no library imported."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from memo.backends.training_optimizers import (CATALOGUE, OPTIMIZER_STAGE, PLAIN, choose_optimizer, constructor_text,
                                               derived_name, known_entry, optimizer_class, optimizer_entry,
                                               simpler_forms)
from memo.filing.training_idiom import training_lines, training_symptom
from memo.oracle import Verdict
from memo.training.judge import thresholds_for
from memo.training.optimizer_stage import optimizer_label
from memo.triage.optimizer_reduction import OptimizerReduction, reduce_optimizer, showing_run
from memo.triage.training_signature import training_parts


class _Run:
    def __init__(self, name: str) -> None:
        self.verdict = name


def _showing(*names: str) -> tuple[list[str], object]:
    """A predicate showing the bug under ``names`` only, and the configurations it was asked about."""
    asked: list[str] = []

    def shows(name: str) -> _Run | None:
        asked.append(name)
        return _Run(name) if name in names else None
    return asked, shows


def test_the_simpler_forms_are_the_plain_class_then_each_setting_dropped_in_the_entrys_order() -> None:
    assert simpler_forms("adam-accumulate") == ["adam"]  # one setting: its drop is the plain class
    assert simpler_forms("sgd-nesterov") == ["sgd", "sgd-nesterov-without-momentum", "sgd-nesterov-without-nesterov"]
    assert simpler_forms("adam-ema") == ["adam", "adam-ema-without-use_ema", "adam-ema-without-ema_momentum",
                                         "adam-ema-without-ema_overwrite_frequency"]
    # a schedule is a setting; dropping it keeps its initial rate as the learning rate
    assert simpler_forms("sgd-cosine-warmup") == ["sgd", "sgd-cosine-warmup-without-momentum",
                                                  "sgd-cosine-warmup-without-schedule"]
    assert simpler_forms("adam-exponential-decay") == ["adam"]
    # a form the catalogue names is named so: RMSprop without centered and momentum is the entry ``rmsprop``
    assert simpler_forms("rmsprop-centered-momentum")[0] == "rmsprop"
    # a class whose lower-case name is a configured entry's: its plain form is ``<class>-plain``
    assert simpler_forms("adamw") == ["adamw-plain"] and simpler_forms("ftrl-shrinkage")[0] == "ftrl-plain"
    assert simpler_forms("adadelta") == ["adadelta-without-epsilon"]  # its learning rate 1 is no setting: kept
    for name in ("nadam", "lion", "rmsprop", "adam", "sgd"):  # nothing to drop
        assert simpler_forms(name) == []


def test_a_reduced_configuration_is_named_once_and_resolves_everywhere_an_entry_does() -> None:
    for name, entry in CATALOGUE.items():
        for form in simpler_forms(name):
            reduced = optimizer_entry(form)
            assert reduced.class_name == entry.class_name == optimizer_class(form)  # the dedup key's class
            assert (reduced.learning_rate, reduced.steps) == (entry.learning_rate, entry.steps)
            assert len(reduced.config) < len(entry.config) or (entry.schedule and not reduced.schedule)
            assert derived_name(form, ()) == form  # canonical
    assert constructor_text("adam") == "keras.optimizers.Adam(learning_rate=0.1)"
    assert constructor_text("adam-ema-without-use_ema") == (
        "keras.optimizers.Adam(learning_rate=0.1, ema_momentum=0.5, ema_overwrite_frequency=2)")
    # the order settings are dropped in does not change the name
    assert derived_name("adam-ema-without-ema_momentum", ["use_ema"]) == derived_name("adam-ema", ["use_ema",
                                                                                                     "ema_momentum"])
    assert known_entry("adam-ema-without-nesterov") is None and known_entry("nadam-without-x") is None
    assert known_entry("retired") is None and optimizer_class("retired") == "retired"
    # triage's forms are never a campaign's choice: the hashed choice is over the catalogue alone
    assert not set(PLAIN) & set(CATALOGUE)
    assert {choose_optimizer(str(index)) for index in range(400)} == set(CATALOGUE)


def test_the_plain_class_is_kept_when_it_shows_the_bug_after_one_run() -> None:
    asked, shows = _showing("adam")
    reduction = reduce_optimizer("adam-accumulate", shows)
    assert (reduction.name, asked) == ("adam", ["adam"]) and isinstance(reduction.run, _Run)
    assert reduction.step("adam-accumulate") == "optimizer adam-accumulate -> adam: shows the bug (1 configuration " \
                                                "tried)"


def test_settings_are_dropped_one_at_a_time_keeping_each_drop_the_bug_survives() -> None:
    # the bug needs use_ema alone: the plain class does not show it, dropping the other two does
    needs_ema = {"adam-ema-without-ema_momentum", "adam-ema-without-ema_momentum,ema_overwrite_frequency"}
    asked, shows = _showing(*needs_ema)
    reduction = reduce_optimizer("adam-ema", shows)
    assert reduction.name == "adam-ema-without-ema_momentum,ema_overwrite_frequency"
    assert asked == ["adam", "adam-ema-without-use_ema", "adam-ema-without-ema_momentum",
                     "adam-ema-without-ema_momentum,ema_overwrite_frequency"]
    assert constructor_text(reduction.name) == "keras.optimizers.Adam(learning_rate=0.1, use_ema=True)"
    # nothing simpler shows it: the entry as found, each simpler form asked once, in simpler_forms' order
    asked, shows = _showing()
    reduction = reduce_optimizer("sgd-nesterov", shows)
    assert (reduction.name, reduction.run) == ("sgd-nesterov", None) and asked == simpler_forms("sgd-nesterov")
    assert reduction.step("sgd-nesterov").startswith("optimizer sgd-nesterov: kept, none of sgd, ")
    asked, shows = _showing("sgd")
    assert reduce_optimizer("nadam", shows) == OptimizerReduction("nadam") and asked == []


def test_a_failing_check_rejects_its_configuration_and_drops_its_folder(tmp_path: Path) -> None:
    errors: list[Exception] = []

    def broken(directory: Path) -> _Run:
        directory.mkdir()
        raise RuntimeError("worker died")

    assert showing_run(broken, tmp_path / "a", errors.append) is None and not (tmp_path / "a").exists()
    assert [str(error) for error in errors] == ["worker died"]

    def showing(directory: Path) -> _Run:
        directory.mkdir()
        return _Run("x")

    assert showing_run(showing, tmp_path / "b", errors.append) is not None and (tmp_path / "b").exists()


def test_the_judge_the_scripts_and_the_key_read_a_reduced_configuration_as_its_entry() -> None:
    record = {"weight_dtypes": np.array(["float16"]), "weight_scales": np.array([2.0]), "opt_0": np.ones(3)}
    assert thresholds_for({**record, "optimizer": np.array("adam")}, "opt_0").atol == thresholds_for(
        {**record, "optimizer": np.array("adam-accumulate")}, "opt_0").atol  # three steps at 0.1: the same scale
    assert optimizer_label("adam") == "[optimizer adam: keras.optimizers.Adam(learning_rate=0.1)]"
    _, lines, prefix = training_lines("keras-torch", OPTIMIZER_STAGE, "training-inconsistency", "adam")
    assert prefix == "opt" and lines[0] == "optimizer = keras.optimizers.Adam(learning_rate=0.1)"
    assert training_symptom(OPTIMIZER_STAGE, "training-inconsistency", {"optimizer": "adam", "name": "d/kernel"},
                            "keras-tensorflow").startswith("Adam update of d/kernel")

    def parts(optimizer: str) -> dict[str, object]:
        verdict = Verdict("training-inconsistency", "keras-torch", OPTIMIZER_STAGE, "m",
                          extra={"training": {"name": "low/kernel", "optimizer": optimizer}})
        return training_parts(verdict, None)

    # the dedup key: the entry's class, which no dropped setting changes
    assert parts("adam") == parts("adam-accumulate") and parts("sgd") == parts("sgd-nesterov-without-momentum")
