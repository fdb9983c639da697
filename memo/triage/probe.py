"""Running a model for triage: write its artifact, run it through the executor, read back every output.

Localization and reduction both need "what does each backend compute at every node": a *probe* model is
the same graph with every body node as an output, run through the ordinary executor (no worker change).
Weights are keyed by (seed, layer name), so a probe or a reduced model has the very same weights as the
campaign's artifact for every layer whose shapes did not change; inputs are copied from the original.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from memo.artifact import Artifact, prepare_artifact
from memo.backends import CONVERTERS, find_spec, produced_by
from memo.backends.result import ExecutionResult
from memo.errors import InvalidModelError
from memo.model.ir import ModelIR
from memo.oracle import KERAS_FRONT_END, TF_FUNCTION_STAGE, Verdict, load_outputs
from memo.backends.executor import Executor


@dataclass
class Run:
    """One execution of a model; ``outputs[backend][node]`` for every node the model outputs."""

    ir: ModelIR
    result: ExecutionResult | None = None
    artifact: Artifact | None = None
    outputs: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    error: str | None = None

    def real_outputs(self, names: list[str]) -> dict[str, dict[str, np.ndarray]]:
        """Only ``names`` (the model's own outputs), for backends that produced all of them."""
        return {backend: {name: arrays[name] for name in names}
                for backend, arrays in self.outputs.items() if all(name in arrays for name in names)}


def probe_ir(ir: ModelIR) -> ModelIR:
    """The same graph with every body node as an output, in topological order."""
    probe = ir.copy()
    probe.outputs = [layer.name for layer in probe.body]
    return probe


def read_inputs(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def _keep_inputs(artifact: Artifact, inputs: dict[str, np.ndarray]) -> None:
    """Overwrite the generated inputs with the original arrays wherever name and shape still match."""
    generated = read_inputs(artifact.inputs_path)
    merged = {name: inputs[name] if name in inputs and inputs[name].shape == array.shape
              and inputs[name].dtype == array.dtype else array for name, array in generated.items()}
    np.savez(artifact.inputs_path, **merged)


def run_model(executor: Executor, ir: ModelIR, directory: Path, *, seed: int,
              inputs: dict[str, np.ndarray] | None = None, backends: Sequence[str] | None = None) -> Run:
    """Write and execute ``ir`` (on ``backends`` of the executor's, or all); an invalid model comes back
    with ``error`` set and no result."""
    run = Run(ir=ir)
    directory = Path(directory).resolve()  # worker processes may run in another directory
    try:
        run.artifact = prepare_artifact(ir, directory, seed=seed)
    except InvalidModelError as exc:
        run.error = str(exc)
        return run
    if inputs:
        _keep_inputs(run.artifact, inputs)
    if backends is not None:
        backends = [name for name in backends if name in executor.backend_names]
    run.result = executor.run(run.artifact, backends)
    run.outputs = {backend: dict(zip(ir.outputs, arrays)) for backend, arrays in load_outputs(run.result).items()
                   if len(arrays) == len(ir.outputs)}
    return run


@dataclass(frozen=True)
class Roles:
    """Who is wrong and who is right for a numeric finding, and which backends must run to see it."""

    faulty: str
    good: str
    backends: tuple[str, ...]


def consumes_of(name: str) -> str | None:
    """The artifact kind backend ``name`` reads; None for a plugin (not re-run by triage)."""
    spec = find_spec(name)
    return spec.consumes if spec is not None else None


def roles(verdict: Verdict, reference: str, available: list[str]) -> Roles:
    """Resolve the oracle's attribution (a backend, the reference itself, or a converter) to two backends.

    ``available``: the backends the campaign ran. A converter runs only for a backend reading its output,
    and the oracle blames it only when another backend agrees with the reference, so both are added.
    """
    backend = str(verdict.backend or "")
    involved = [name for name in verdict.involved() if name != reference]
    needed = [reference, *involved]
    if backend == KERAS_FRONT_END:  # every Keras backend failed alike: any of them shows it
        keras = [name for name in available if consumes_of(name) == "keras"]
        return Roles(reference, reference, tuple(dict.fromkeys([reference, *keras])))
    if backend == reference and verdict.stage == TF_FUNCTION_STAGE:
        # TensorFlow's graph-mode trace runs in the converter's worker: a backend on its output runs it
        readers = [name for name in available if name not in CONVERTERS and consumes_of(name) == "onnx"]
        return Roles(reference, reference, tuple(dict.fromkeys([reference, *readers[:1]])))
    if backend == reference:
        faulty, good = reference, (involved[0] if involved else reference)
    elif backend in CONVERTERS:
        produced = produced_by(backend)
        readers = [name for name in available if name not in CONVERTERS and consumes_of(name) == produced]
        witness = [name for name in available if name not in CONVERTERS and name not in needed
                   and name not in readers and consumes_of(name) is not None]
        # the oracle blamed the converter either because every reader differs alike while some other backend
        # agrees (a witness), or because one engine differs on this file but agrees on another converter's
        # (``same_engine``: that engine on the other file must run again)
        twin = verdict.attribution.same_engine if verdict.attribution is not None else None
        needed += readers[:1] + ([str(twin)] if twin else witness[:1])
        faulty, good = (involved or readers or [reference])[0], reference
    else:
        faulty, good = backend, reference
        needed.append(backend)
    return Roles(faulty, good, tuple(dict.fromkeys(needed)))


def alone(backend: str, roles: Roles) -> tuple[str, ...]:
    """The backends to run to see ``backend``'s own failure with no other library in the run: itself, or for
    a converter the one reader of its output among ``roles`` (the converter runs before it, not beside it)."""
    if backend not in CONVERTERS:
        return (backend,)
    produced = produced_by(backend)
    return tuple(name for name in roles.backends if name not in CONVERTERS and consumes_of(name) == produced)[:1]


def failure_backends(backend: str, reference: str, roles: Roles) -> tuple[str, ...]:
    """The backends a crash or hang candidate runs on: the reference and ``backend``'s own run (:func:`alone`).
    A failure's signature is the failing library's exception, so the witness that a numeric blame on a converter
    needs (another Keras backend, often JAX compiling for seconds) is left out. ``roles.backends`` where the
    failure has no run of its own (the reference's, the Keras front end's)."""
    own = alone(backend, roles) if backend not in (reference, KERAS_FRONT_END) else ()
    return tuple(dict.fromkeys([reference, *own])) if own else roles.backends
