"""A failure of TensorFlow's graph-mode trace (memo's tf.function before tf2onnx's freeze) is TensorFlow's
bug, found once, reduced, and reproduced by a script that runs that very trace.

AdaptiveAveragePooling3D traced with a dynamic batch fails with "Negative dimension size" in Keras 3.15 on
TensorFlow 2.21 while it runs eagerly: a real, current bug."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from triage_fixtures import chain, record_campaign  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

BACKENDS = ["keras-tensorflow", "onnxruntime"]


def test_a_trace_failure_is_one_tensorflow_bug_reduced_and_reproduced(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from memo.backends.executor import DifferentialExecutor
    from memo.triage import triage_campaign

    model = chain("trace", (12, 8, 8, 2), [("ReLU", {}), ("Activation", {"activation": "tanh"}),
                                           ("AdaptiveAveragePooling3D", {"output_size": [1, 1, 1]}),
                                           ("Flatten", {}), ("Dense", {"units": 2})])
    monkeypatch.chdir(tmp_path)  # the campaign's relative paths, as memo fuzz writes them
    with DifferentialExecutor(backends=BACKENDS, timeout_s=120) as executor:
        with record_campaign(Path("campaigns/t"), Path("mutants"), executor, [model], backends=BACKENDS) as store:
            verdicts = [(row.verdict.kind, row.verdict.backend, row.verdict.stage) for row in store.verdicts()]
            assert ("crash", "keras-tensorflow", "tf-function") in verdicts, verdicts
            assert not [v for v in verdicts if v[1].startswith("tf2onnx")], "not charged to tf2onnx"
            summary = triage_campaign(store, executor=executor, time_budget_s=300)
            bugs = [bug for bug in store.triage.load_bugs() if bug.stage == "tf-function"]
            assert len(bugs) == 1, summary
            bug = bugs[0]
            assert bug.parts["exception"] == "ValueError", bug.parts
            assert bug.reduced_layers is not None and bug.reduced_layers < bug.original_layers, bug.reduction
            assert bug.reproduces is True, summary.errors


def test_every_keras_backend_failing_alike_is_one_keras_bug_reduced_and_reproduced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Activation("threshold") builds symbolically but raises TypeError at run time on every Keras backend:
    one bug against Keras' shared front end, scripted on the reference's Keras."""
    from memo.backends.executor import DifferentialExecutor
    from memo.triage import triage_campaign

    backends = ["keras-tensorflow", "keras-jax"]
    model = chain("front", (6,), [("ReLU", {}), ("Activation", {"activation": "threshold"}), ("Dense", {"units": 2})])
    monkeypatch.chdir(tmp_path)  # the campaign's relative paths, as memo fuzz writes them
    with DifferentialExecutor(backends=backends, timeout_s=120) as executor:
        with record_campaign(Path("campaigns/k"), Path("mutants"), executor, [model], backends=backends) as store:
            verdicts = [(row.verdict.kind, row.verdict.backend, row.verdict.stage) for row in store.verdicts()]
            assert verdicts == [("crash", "keras", "execute")], verdicts
            summary = triage_campaign(store, executor=executor, time_budget_s=300)
            (bug,) = store.triage.load_bugs()
            assert bug.reduced_layers == 1 and bug.original_layers == 3, bug.reduction
            assert bug.reproduces is True, summary.errors
