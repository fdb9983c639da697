"""The training check over the layer catalogue: every entry's own float32 samples, side by side in models of 25.

    .venv/bin/python benchmarks/training_sweep.py [--seed 7] [--batch 25] [--apis SpectralNormalization,...]
        [--converters] [--artifacts DIR] [--optimizers nadam,lion|all] [--dtype bfloat16 [--mixed]]

Each catalogue entry gives one sample per input rank (``memo.layers.probe.entry_samples``; random augmentation
layers left out: the check leaves their models out); ``--batch`` samples run as one model (``samples_ir``), through
the training check on Keras on TensorFlow, JAX and torch with its float64 truth. Prints each model's entries and
every verdict. A model whose forward pass differs on one sample pins the whole backend's chain to ``forward``: run
the entries concerned again with ``--apis`` and ``--batch 1`` to see the others' gradients.

``--converters``: the converted torch modules train too (onnx2torch, onnx2pytorch: the loss's input gradients in
inference mode against TensorFlow's, the ``eval_*`` stages); each model is first run for inference (tf2onnx writes
the ONNX file they convert), and a converter trains where its inference run passed, as in a campaign.
``--artifacts DIR``: the models of a campaign's artifact folders (``DIR/<id>/model.keras``; a COPY: the check
writes into them) instead of the catalogue's. ``--optimizers``: each model checked once per named entry of the
optimizer catalogue (``all``: every entry; default: the model's own, as a campaign chooses it);
``--dtype``: the samples' layers compute and keep their weights in that dtype (``float16``, ``bfloat16``: the
DType mutation operator's), the inputs staying float32; ``--remat full``: every model's layers built inside
``keras.RematScope(mode="full")`` (memo.backends.training_remat), on every backend; with ``--mixed`` the model's last sample stays float32, so
that the optimizers step variables of both precisions together (a model the DType operator changed one layer of:
global gradient clipping and Keras on torch's per-step scalars see both).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memo.artifact import Artifact, artifact_in, prepare_artifact  # noqa: E402
from memo.backends.executor import DifferentialExecutor  # noqa: E402
from memo.layers import CATALOGUE  # noqa: E402
from memo.layers.probe import batches, entry_samples, samples_ir  # noqa: E402
from memo.backends.training_optimizers import CATALOGUE as OPTIMIZERS  # noqa: E402
from memo.backends.training_remat import REMAT_MODES  # noqa: E402
from memo.model.ir import ModelIR  # noqa: E402
from memo.training.check import run_training_check  # noqa: E402

TRAINERS = ["keras-tensorflow", "keras-jax", "keras-torch"]
CONVERTED = ["onnx2torch", "onnx2pytorch"]  # trained on the ONNX file tf2onnx writes


def check_one(executor: DifferentialExecutor, artifact: Artifact, scratch: Path, trainers: list[str],
              title: str, optimizer: str | None = None, remat: str | None = None) -> None:
    """Print the check of one artifact (``optimizer``: that catalogue entry, else the model's own): its title and
    seconds, then every verdict with its float64 decision."""
    began = time.perf_counter()
    if any(name in CONVERTED for name in trainers):  # tf2onnx, then them: they train where this run passed
        executor.run(artifact, [name for name in trainers if name in CONVERTED])
    check = run_training_check(executor, artifact, scratch, trainers, optimizer=optimizer, remat=remat)
    seconds = {name: round(result.seconds, 2) for name, result in check.results.items()}
    print(f"{title} [optimizer {check.judgement.optimizer}] ({time.perf_counter() - began:.1f} s; "
          f"train seconds {seconds})"
          + (f"; left out: {check.judgement.left_out}" if check.judgement.left_out else ""), flush=True)
    for verdict in check.judgement.verdicts:
        truth = f" | float64: {verdict.truth.decision}: {verdict.truth.reason}" if verdict.truth else ""
        print(f"  {verdict.kind} {verdict.backend} at {verdict.stage}: {verdict.message[:240]}{truth}", flush=True)


def in_dtype(ir: ModelIR, dtype: str, mixed: bool = False) -> ModelIR:
    """``ir`` with every layer but its inputs in ``dtype`` (a layer's ``dtype`` setting, as the DType mutation operator
    sets it); ``mixed``: the layer of its last output stays as it is (float32)."""
    changed = ir.copy()
    kept = {changed.outputs[-1]} if mixed and changed.outputs else set()
    for layer in changed.body:
        if layer.name not in kept:
            layer.config["dtype"] = dtype
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7, help="samples' seed (default 7; weights and inputs: 5)")
    parser.add_argument("--batch", type=int, default=25, help="samples per model (default 25)")
    parser.add_argument("--apis", help="comma-separated catalogue entries (default: all but Random*)")
    parser.add_argument("--converters", action="store_true", help="train onnx2torch's and onnx2pytorch's modules too")
    parser.add_argument("--artifacts", type=Path, help="a copy of a campaign's artifact folders to check instead")
    parser.add_argument("--limit", type=int, help="the first N artifact folders only")
    parser.add_argument("--backends", help="comma-separated trainers (default: the three Keras backends)")
    parser.add_argument("--optimizers", help="optimizer catalogue entries, comma-separated, or all "
                                             "(default: each model's own)")
    parser.add_argument("--dtype", help="the samples' layers in this dtype (float16, bfloat16; default float32)")
    parser.add_argument("--remat", choices=REMAT_MODES, help="every model's layers built inside keras.RematScope")
    parser.add_argument("--mixed", action="store_true", help="with --dtype: each model's last sample stays float32")
    args = parser.parse_args()
    entries: list[str | None] = [None] if not args.optimizers else sorted(OPTIMIZERS) \
        if args.optimizers == "all" else args.optimizers.split(",")
    trainers = args.backends.split(",") if args.backends else TRAINERS + (CONVERTED if args.converters else [])
    if args.artifacts:
        with DifferentialExecutor(trainers, timeout_s=60) as executor, tempfile.TemporaryDirectory() as scratch:
            folders = sorted(p for p in args.artifacts.iterdir() if (p / "model.keras").exists())
            for folder in folders[:args.limit]:
                for entry in entries:
                    check_one(executor, artifact_in(folder), Path(scratch) / f"{folder.name}-{entry}", trainers,
                              f"artifact {folder.name}", entry)
        return 0
    apis = args.apis.split(",") if args.apis else [name for name in CATALOGUE if not name.startswith("Random")]
    samples = [sample for name in apis for sample in entry_samples(CATALOGUE[name], args.seed, per_rank=1)
               if sample.dtype == "float32" and sample.policy is None]
    print(f"{len(samples)} samples of {len(apis)} entries", flush=True)
    with DifferentialExecutor(trainers, timeout_s=60) as executor, tempfile.TemporaryDirectory() as scratch:
        for index, batch in enumerate(batches(samples, args.batch)):
            ir = samples_ir(batch, f"sweep{index}")
            artifact = prepare_artifact(in_dtype(ir, args.dtype, args.mixed) if args.dtype else ir,
                                        Path(scratch) / f"b{index}", seed=5)
            for entry in entries:
                check_one(executor, artifact, Path(scratch) / f"t{index}-{entry}", trainers,
                          f"model {index}: {', '.join(s.api for s in batch)}", entry, args.remat)
            if args.batch == 1:
                print(f"  shapes {batch[0].shapes}, config {batch[0].config}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
