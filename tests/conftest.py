"""Shared fixtures. Integration tests share one warm :class:`DifferentialExecutor` for the whole session.

The session executor runs every default backend plus two test-only plugins that misbehave only on an
artifact whose path contains "poison" (one aborts its process, one hangs), so the same warm workers
serve both the ordinary tests and the crash/hang tests.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from memo.model.ir import Layer, ModelIR

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TEST_PLUGINS = ROOT / "tests" / "plugins"
POISON_PLUGINS = (TEST_PLUGINS / "abort_on_poison.py", TEST_PLUGINS / "hang_on_poison.py")
SESSION_TIMEOUT_S = 20.0  # per backend per model; the hang test waits this long once


def one_layer_ir(class_name: str, config: dict[str, Any], input_shape: tuple[int, ...]) -> ModelIR:
    """A model of one layer on one float32 input (Keras fills the config's defaults)."""
    return ModelIR(layers=[Layer(name="x", class_name="InputLayer",
                                 config={"batch_shape": [None, *input_shape], "dtype": "float32"}),
                           Layer(name="layer", class_name=class_name, config=config, inputs=["x"])],
                   outputs=["layer"], name=f"one_{class_name.lower()}")


def triaged_training_store(root: Path, ir: ModelIR, backends: list[str], seed: int, budget_s: float,
                           inference: bool = True, **check: Any) -> tuple[Any, Any]:
    """A campaign store holding one executed model ``ir`` with its inference (unless not ``inference``) and training
    verdicts (the training check run with ``check``'s options: ``optimizer``, ``remat``), triaged on fresh workers of
    ``backends``: (the store, triage's summary)."""
    from memo.artifact import prepare_artifact
    from memo.backends.executor import DifferentialExecutor
    from memo.oracle import judge
    from memo.store import CampaignStore, MutantRecord
    from memo.training.check import run_training_check, stored_verdicts
    from memo.triage import triage_campaign

    store = CampaignStore(root / "campaign", create=True)
    store.set_meta("campaign_name", root.name)
    store.set_meta("config", {"seed": seed, "backends": backends, "timeout_s": 60.0, "search": "mh"})
    store.set_meta("started", 0.0)
    with DifferentialExecutor(backends=backends, timeout_s=60.0) as executor:
        mutant_id = store.add_mutant(MutantRecord(0, ir.name, "NLA", "seed", ir.name, {}, ir.dumps(), True,
                                                  diverse=True))
        artifact = prepare_artifact(ir, (root / "artifacts" / str(mutant_id)).resolve(), seed=seed)
        result = executor.run(artifact)
        store.add_execution(mutant_id, result.to_json(), result.seconds, str(artifact.directory))
        for verdict in judge(result) if inference else ():
            store.add_verdict(mutant_id, verdict)
        training = run_training_check(executor, artifact, artifact.directory / "training", truth=False, **check)
        for verdict in stored_verdicts(training):
            store.add_verdict(mutant_id, verdict)
        summary = triage_campaign(store, executor=executor, time_budget_s=budget_s)
    return store, summary


@pytest.fixture(scope="session")
def executor() -> Iterator[Any]:
    from memo.backends.executor import DifferentialExecutor

    with DifferentialExecutor(plugins=POISON_PLUGINS, timeout_s=SESSION_TIMEOUT_S) as shared:
        yield shared


@pytest.fixture
def make_artifact(tmp_path: Path) -> Callable[..., Any]:
    """``make_artifact(ir_or_model_path, name="model", seed=0)`` writes an artifact under tmp_path."""
    from memo.artifact import prepare_artifact
    from memo.model.files import load_model_file

    def make(model: ModelIR | Path, name: str = "model", seed: int = 0) -> Any:
        weights = None
        if isinstance(model, Path):
            loaded = load_model_file(model)
            model, weights = loaded.ir, loaded.weights
        return prepare_artifact(model, tmp_path / name, seed=seed, weights=weights)

    return make


def run_model(executor: Any, model: ModelIR | Path, root: Path, seed: int = 0) -> tuple[ModelIR, Any, Any]:
    """Write ``model`` (an IR, or a model file with its weights) as an artifact in ``root`` and run it on
    ``executor``: ``(ir, artifact, result)``, what the engines' module-scoped fixtures share."""
    from memo.artifact import prepare_artifact
    from memo.model.files import load_model_file

    weights = None
    if isinstance(model, Path):
        loaded = load_model_file(model)
        model, weights = loaded.ir, loaded.weights
    artifact = prepare_artifact(model, root / "artifact", seed=seed, weights=weights)
    return model, artifact, executor.run(artifact)


def module_executor(backends: list[str], timeout_s: float = 60.0) -> Any:
    """A module-scoped fixture: one warm executor on ``backends`` for a test module (an engine's own tests)."""

    @pytest.fixture(scope="module")
    def shared_executor() -> Iterator[Any]:
        from memo.backends.executor import DifferentialExecutor

        with DifferentialExecutor(backends=backends, timeout_s=timeout_s) as shared:
            yield shared

    return shared_executor


def pytest_configure(config: pytest.Config) -> None:
    """Campaigns and commands run by tests use no bug database (never the user's, and no bug known from another
    test's campaign), and run every script afresh (no remembered runs: memo.bugdb.script_runs); the bug database's
    and the remembered runs' own tests name theirs."""
    import os

    os.environ.setdefault("MEMO_BUGS_DB", "none")
    os.environ.setdefault("MEMO_SCRIPT_RUNS", "off")
