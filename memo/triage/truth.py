"""Running the float64 truth (:mod:`memo.backends.float64_truth`) on a model and judging a numeric verdict by it.

One warm worker process per triage pass (or ``memo run``), started on first use: Keras on torch in float64.
The model runs three times: on its inputs, then on two copies moved by a few float32 ulps (the conditioning
check of :mod:`memo.truth`). A failure of the truth (a layer torch cannot run in float64) makes the verdict
``unavailable`` with the reason: never a crash of triage, never a bug.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

from memo.backends import CONVERTERS, load_spec
from memo.backends.float64_truth import TRUTH
from memo.backends.supervisor import WorkerCommand, WorkerProcess
from memo.oracle import Verdict
from memo.truth import PERTURBATIONS, UNAVAILABLE, Truth, assess, perturb

TRUTH_TIMEOUT_S = 120.0  # float64 on torch is slower than the libraries' float32, and a reduced model is small


class TruthRunner:
    """A float64 worker, started on first use; ``close`` stops it."""

    def __init__(self, log_dir: Path | None = None, timeout_s: float = TRUTH_TIMEOUT_S) -> None:
        self._log_dir = Path(log_dir or tempfile.mkdtemp(prefix="memo-truth-"))
        spec = load_spec(TRUTH)
        self._worker = WorkerProcess(WorkerCommand(group=TRUTH, args=["--spec", TRUTH], env=dict(spec.env)),
                                     self._log_dir, startup_timeout_s=180.0)
        self.timeout_s = timeout_s

    def outputs(self, keras_path: Path, inputs: dict[str, np.ndarray], scratch: Path,
                tag: str) -> list[np.ndarray] | str:
        """The float64 outputs of the model on ``inputs`` (in model-input order), or why there are none."""
        scratch.mkdir(parents=True, exist_ok=True)
        inputs_path, out = scratch / f"{tag}.inputs.npz", scratch / f"{tag}.out.npz"
        np.savez(inputs_path, **inputs)
        reply = self._worker.request({"op": "run", "backend": TRUTH, "model": str(Path(keras_path).resolve()),
                                      "inputs": str(inputs_path.resolve()), "input_names": list(inputs),
                                      "out": str(out.resolve())}, self.timeout_s)
        failed = next((stage for stage in reply.stages if stage.status != "ok"), None)
        if failed is not None or not reply.outputs:
            if failed is None:
                return "the float64 run wrote no outputs"
            detail = f"{failed.exc_type}: {failed.message}" if failed.exc_type else failed.message
            return f"the float64 run failed at {failed.stage} ({failed.status}): {' '.join(detail.split())[:300]}"
        with np.load(reply.outputs, allow_pickle=False) as data:
            return [data[f"out_{i}"] for i in range(len(data.files))]

    def close(self) -> None:
        self._worker.stop()


def sides(verdict: Verdict, reference: str, ran: Sequence[str]) -> tuple[list[str], list[str]]:
    """(accused, witnesses) of a numeric verdict among the backends that ran: the accused are the outputs the
    verdict calls wrong (a converter's engines on its file; the reference, when a majority disagrees with it),
    the witnesses the outputs it trusted."""
    involved = [name for name in (verdict.metrics or {}).get("backends") or {} if name in ran]
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


def save_arrays(path: Path, outputs: dict[str, list[np.ndarray]], truth: Sequence[np.ndarray],
                perturbed: Sequence[Sequence[np.ndarray]]) -> bool:
    """Write what a truth verdict was computed from (``BACKEND__I``, ``float64__I``, ``perturbedK__I``), so
    that it can be checked again without any library; nothing when it would exceed :data:`MAX_SAVED_BYTES`."""
    arrays = {f"{name}__{i}": np.asarray(a) for name, outs in outputs.items() for i, a in enumerate(outs)}
    arrays.update({f"float64__{i}": np.asarray(a) for i, a in enumerate(truth)})
    arrays.update({f"perturbed{k}__{i}": np.asarray(a) for k, run in enumerate(perturbed) for i, a in enumerate(run)})
    if sum(a.nbytes for a in arrays.values()) > MAX_SAVED_BYTES:
        return False
    np.savez_compressed(path, **arrays)
    return True


def judge_by_truth(runner: TruthRunner, keras_path: Path, inputs: dict[str, np.ndarray],
                   outputs: dict[str, list[np.ndarray]], verdict: Verdict, reference: str, scratch: Path,
                   save: Path | None = None) -> Truth:
    """The float64 verdict on ``verdict`` (found on the model at ``keras_path`` with ``inputs``), from the
    float32 ``outputs`` of every backend that ran it; ``save``: where to keep the arrays (:func:`save_arrays`)."""
    accused, witnesses = sides(verdict, reference, list(outputs))
    truth = runner.outputs(keras_path, inputs, scratch, "truth")
    if isinstance(truth, str):
        return Truth(decision=UNAVAILABLE, reason=truth, accused=accused, witnesses=witnesses)
    perturbed: list[list[np.ndarray]] = []
    for index in range(PERTURBATIONS):
        moved = runner.outputs(keras_path, perturb(inputs, index), scratch, f"perturbed{index}")
        if isinstance(moved, str):
            return Truth(decision=UNAVAILABLE, reason=moved, accused=accused, witnesses=witnesses)
        perturbed.append(moved)
    result = assess(outputs, truth, perturbed, accused, witnesses, reference)
    if save is not None:
        save_arrays(save, outputs, truth, perturbed)
    if result.blamed == "accused":
        result.blamed = str(verdict.backend)
    elif result.blamed == "witness":
        result.blamed = reference if verdict.backend != reference else (witnesses[0] if witnesses else None)
    return result
