"""The training check over the layer catalogue: every entry's own float32 samples, side by side in models of 25.

    .venv/bin/python benchmarks/training_sweep.py [--seed 7] [--batch 25] [--apis SpectralNormalization,...]

Each catalogue entry gives one sample per input rank (``memo.layers.probe.entry_samples``; random augmentation
layers left out: the check leaves their models out); ``--batch`` samples run as one model (``samples_ir``), through
the training check on Keras on TensorFlow, JAX and torch with its float64 truth. Prints each model's entries and
every verdict. A model whose forward pass differs on one sample pins the whole backend's chain to ``forward``: run
the entries concerned again with ``--apis`` and ``--batch 1`` to see the others' gradients.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memo.artifact import prepare_artifact  # noqa: E402
from memo.backends.executor import DifferentialExecutor  # noqa: E402
from memo.layers import CATALOGUE  # noqa: E402
from memo.layers.probe import batches, entry_samples, samples_ir  # noqa: E402
from memo.training.check import run_training_check  # noqa: E402

TRAINERS = ["keras-tensorflow", "keras-jax", "keras-torch"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7, help="samples' seed (default 7; weights and inputs: 5)")
    parser.add_argument("--batch", type=int, default=25, help="samples per model (default 25)")
    parser.add_argument("--apis", help="comma-separated catalogue entries (default: all but Random*)")
    args = parser.parse_args()
    apis = args.apis.split(",") if args.apis else [name for name in CATALOGUE if not name.startswith("Random")]
    samples = [sample for name in apis for sample in entry_samples(CATALOGUE[name], args.seed, per_rank=1)
               if sample.dtype == "float32" and sample.policy is None]
    print(f"{len(samples)} samples of {len(apis)} entries", flush=True)
    with DifferentialExecutor(TRAINERS, timeout_s=60) as executor, tempfile.TemporaryDirectory() as scratch:
        for index, batch in enumerate(batches(samples, args.batch)):
            artifact = prepare_artifact(samples_ir(batch, f"sweep{index}"), Path(scratch) / f"b{index}", seed=5)
            began = time.perf_counter()
            check = run_training_check(executor, artifact, Path(scratch) / f"t{index}", TRAINERS)
            print(f"model {index}: {', '.join(s.api for s in batch)} ({time.perf_counter() - began:.1f} s)"
                  + (f"; left out: {check.judgement.left_out}" if check.judgement.left_out else ""), flush=True)
            if args.batch == 1:
                print(f"  shapes {batch[0].shapes}, config {batch[0].config}")
            for verdict in check.judgement.verdicts:
                truth = f" | float64: {verdict.truth.decision}: {verdict.truth.reason}" if verdict.truth else ""
                print(f"  {verdict.kind} {verdict.backend} at {verdict.stage}: {verdict.message[:240]}{truth}",
                      flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
