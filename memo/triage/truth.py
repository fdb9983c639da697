"""Running the float64 truth (:mod:`memo.backends.float64_truth`) on a model and judging a numeric verdict by it.

Warm worker processes per triage pass (or ``memo run``), started on first use: Keras in float64 on JAX and on
torch. The model runs three times on each engine used: on its inputs, then on two copies moved by a few float32
ulps (the conditioning check of :mod:`memo.truth`). A failure of the truth (a layer torch cannot run in float64) makes the verdict
``unavailable`` with the reason: never a crash of triage, never a bug.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

from memo.backends import CONVERTERS, kernels_of, load_spec
from memo.backends.float64_truth import SPECIAL_FLAG_ENGINES
from memo.backends.supervisor import WorkerCommand, WorkerProcess
from memo.oracle import Verdict
from memo.artifact import Artifact
from memo.triage.probe import consumes_of, read_inputs
from memo.truth import PERTURBATIONS, UNAVAILABLE, Truth, assess_runs, engine_method, perturb, truth_engines

TRUTH_TIMEOUT_S = 120.0  # float64 on torch is slower than the libraries' float32, and a reduced model is small


class TruthRunner:
    """The float64 workers (one per engine), each started on its first request; ``close`` stops them."""

    def __init__(self, log_dir: Path | None = None, timeout_s: float = TRUTH_TIMEOUT_S) -> None:
        self._log_dir = Path(log_dir or tempfile.mkdtemp(prefix="memo-truth-"))
        self._workers: dict[str, WorkerProcess] = {}
        self.timeout_s = timeout_s

    def worker(self, engine: str) -> WorkerProcess:
        """``engine``'s warm worker, started on first use (the training check's float64 truth asks it too)."""
        return self._worker(engine)

    def _worker(self, engine: str) -> WorkerProcess:
        if engine not in self._workers:
            spec = load_spec(engine)
            self._workers[engine] = WorkerProcess(WorkerCommand(group=engine, args=["--spec", engine],
                                                                env=dict(spec.env)),
                                                  self._log_dir, startup_timeout_s=180.0)
        return self._workers[engine]

    def outputs(self, engine: str, keras_path: Path, inputs: dict[str, np.ndarray], scratch: Path,
                tag: str) -> list[np.ndarray] | str:
        """The float64 outputs of ``engine`` on the model and ``inputs`` (model-input order), or why there are none."""
        scratch.mkdir(parents=True, exist_ok=True)
        inputs_path, out = scratch / f"{tag}.inputs.npz", scratch / f"{engine}.{tag}.out.npz"
        np.savez(inputs_path, **inputs)
        reply = self._worker(engine).request({"op": "run", "backend": engine,
                                              "model": str(Path(keras_path).resolve()),
                                              "inputs": str(inputs_path.resolve()), "input_names": list(inputs),
                                              "out": str(out.resolve())}, self.timeout_s)
        failed = next((stage for stage in reply.stages if stage.status != "ok"), None)
        if failed is not None or not reply.outputs:
            if failed is None:
                return f"{engine} wrote no outputs"
            detail = f"{failed.exc_type}: {failed.message}" if failed.exc_type else failed.message
            return f"{engine} failed at {failed.stage} ({failed.status}): {' '.join(detail.split())[:300]}"
        with np.load(reply.outputs, allow_pickle=False) as data:
            return [data[f"out_{i}"] for i in range(len(data.files))]

    def runs(self, engine: str, keras_path: Path, inputs: dict[str, np.ndarray],
             scratch: Path) -> tuple[list[np.ndarray], list[list[np.ndarray]], bool] | str:
        """(truth, perturbed truths, whether the model makes NaN/Inf inside on its inputs: known only to an engine
        that watches special values) of one engine, or why it has none."""
        truth = self.outputs(engine, keras_path, inputs, scratch, "truth")
        if isinstance(truth, str):
            return truth
        special = bool(truth.pop()[()]) if engine in SPECIAL_FLAG_ENGINES else False
        perturbed: list[list[np.ndarray]] = []
        for index in range(PERTURBATIONS):
            moved = self.outputs(engine, keras_path, perturb(inputs, index), scratch, f"perturbed{index}")
            if isinstance(moved, str):
                return moved
            if engine in SPECIAL_FLAG_ENGINES:
                moved.pop()
            perturbed.append(moved)
        return truth, perturbed, special

    def close(self) -> None:
        for worker in self._workers.values():
            worker.stop()


def sides(verdict: Verdict, reference: str, ran: Sequence[str]) -> tuple[list[str], list[str]]:
    """(accused, witnesses) of a numeric verdict among the backends that ran: the accused are the outputs the
    verdict calls wrong (a converter's engines on its file; the reference, when a majority disagrees with it),
    the witnesses the outputs it trusted."""
    involved = [name for name in verdict.involved() if name in ran]
    if verdict.backend == reference:
        accused = [reference]
        witnesses = [name for name in involved if name != reference] or [n for n in ran if n != reference]
    elif verdict.backend in CONVERTERS:
        accused = [name for name in involved if name != reference] or [verdict.backend]
        witnesses = [name for name in ran if name not in accused]
    else:
        accused = [verdict.backend]
        witnesses = [name for name in ran if name not in accused]
    return accused, witnesses


TRUTH_ARRAYS = "truth.npz"
MAX_SAVED_BYTES = 4_000_000  # a bug folder keeps the arrays behind its truth when they are this small


def save_arrays(path: Path, outputs: dict[str, list[np.ndarray]],
                runs: dict[str, tuple[list[np.ndarray], list[list[np.ndarray]]]]) -> bool:
    """Write what a truth verdict was computed from (``BACKEND__I``; per float64 engine ``ENGINE:truth__I`` and
    ``ENGINE:perturbedK__I``), so that it can be judged again without any library (the precision corpus);
    nothing when it would exceed :data:`MAX_SAVED_BYTES`."""
    arrays = {f"{name}__{i}": np.asarray(a) for name, outs in outputs.items() for i, a in enumerate(outs)}
    for engine, (truth, perturbed) in runs.items():
        arrays.update({f"{engine}:truth__{i}": np.asarray(a) for i, a in enumerate(truth)})
        arrays.update({f"{engine}:perturbed{k}__{i}": np.asarray(a)
                       for k, run in enumerate(perturbed) for i, a in enumerate(run)})
    if sum(a.nbytes for a in arrays.values()) > MAX_SAVED_BYTES:
        return False
    np.savez_compressed(path, **arrays)
    return True


def load_arrays(path: Path) -> tuple[dict[str, list[np.ndarray]], dict[str, tuple[list[np.ndarray], list[list[np.ndarray]]]]]:
    """What :func:`save_arrays` wrote: (outputs per backend, runs per float64 engine)."""
    found: dict[str, dict[int, np.ndarray]] = {}
    with np.load(path, allow_pickle=False) as data:
        for key in data.files:
            name, index = key.rsplit("__", 1)
            found.setdefault(name, {})[int(index)] = data[key]
    ordered = {name: [arrays[i] for i in sorted(arrays)] for name, arrays in found.items()}
    outputs = {name: arrays for name, arrays in ordered.items() if ":" not in name}
    runs = {}
    for engine in dict.fromkeys(name.split(":")[0] for name in ordered if ":" in name):
        perturbed = sorted(name for name in ordered if name.startswith(f"{engine}:perturbed"))
        runs[engine] = (ordered[f"{engine}:truth"], [ordered[name] for name in perturbed])
    return outputs, runs


def artifact_inputs(artifact: Artifact) -> dict[str, np.ndarray]:
    """The artifact's stored inputs in model-input order, as the float64 workers take them."""
    stored = read_inputs(artifact.inputs_path)
    return {layer.name: stored[layer.name] for layer in artifact.read_ir().input_layers if layer.name in stored}


def judge_by_truth(runner: TruthRunner, keras_path: Path, inputs: dict[str, np.ndarray],
                   outputs: dict[str, list[np.ndarray]], verdict: Verdict, reference: str, scratch: Path,
                   save: Path | None = None) -> Truth:
    """The float64 verdict on ``verdict`` (found on the model at ``keras_path`` with ``inputs``), from the
    float32 ``outputs`` of every backend that ran it; ``save``: where to keep the arrays (:func:`save_arrays`).

    The truth comes from the float64 engines that share no kernels with the accused (:func:`truth_engines`);
    where two are used, each backend's error is to the nearest (:func:`memo.truth.assess_runs`)."""
    accused, witnesses = sides(verdict, reference, list(outputs))
    engines = truth_engines([kernels_of(name) for name in accused])
    results: dict[str, tuple[list[np.ndarray], list[list[np.ndarray]]]] = {}
    failures: list[str] = []
    special_inside = False
    for engine in engines:  # an engine that cannot run the model (a layer without float64) leaves the other
        got = runner.runs(engine, keras_path, inputs, scratch)
        if isinstance(got, str):
            failures.append(got)
        else:
            results[engine], special_inside = got[:2], special_inside or got[2]
    if not results:
        return Truth(decision=UNAVAILABLE, reason="; ".join(failures) or "no float64 engine", accused=accused,
                     witnesses=witnesses)
    # Keras's ops follow numpy's special-value semantics on every backend (np.clip(NaN) is NaN): a Keras backend
    # differing there is wrong; for an ONNX engine float64 alone cannot tell, the operator's contract does: ONNX's
    # reference evaluator on the same file (memo.triage.onnx_reference.settle)
    open_semantics = special_inside and not any(consumes_of(name) == "keras" for name in accused)
    result = assess_runs(outputs, results, accused, witnesses, reference, special_inside=open_semantics)
    result.method = engine_method(list(results))
    if save is not None:
        save_arrays(save, outputs, results)
    if result.blamed == "accused":
        result.blamed = str(verdict.backend)
    elif result.blamed == "witness":
        result.blamed = reference if verdict.backend != reference else (witnesses[0] if witnesses else None)
    return result
