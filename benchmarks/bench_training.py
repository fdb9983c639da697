"""Benchmark: the training check's CPU seconds per model per Keras backend, beside the same backends' inference run.

    .venv/bin/python benchmarks/bench_training.py [--seeds lenet5,alexnet_cifar10,lstm_sine_wave,mobilenet_v2]
                                                  [--mutants 2] [--seed 0] [--converters] [--optimizer-cost]

The models are bundled seeds, reduced as a campaign reduces them, and ``--mutants`` mutants of each (operators taken
in turn, a fixed random state per mutant). Each model is run on Keras on TensorFlow, JAX and torch through one warm
DifferentialExecutor: first inference (``run``), then the training check (``memo.training.check``: the ``train``
request, judging, and the float64 truth when a verdict is numeric). The first model pays the workers' cold start and
is left out. Prints, per backend, the median and p90 CPU seconds (user + system of its worker process) of inference
and of the training check, the ratio, and every model's verdicts. ``--converters``: onnx2torch and onnx2pytorch
train too (their inference run includes tf2onnx's conversion, whose worker is not a trainer and is not listed), and
TensorFlow's check then includes the inference-mode stages they are judged by. ``--optimizer-cost``: each model's
check runs twice, without the optimizer catalogue's stage and with the model's entry
(:mod:`memo.backends.training_optimizers`), and the table gives both and the entry's added CPU seconds.
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_differential import group_cpu, percentile  # noqa: E402  (the same per-worker CPU reading)

from memo.artifact import prepare_artifact  # noqa: E402
from memo.backends.executor import DifferentialExecutor  # noqa: E402
from memo.model.ir import ModelIR  # noqa: E402
from memo.mutation import MutationFailed, mutate, operator_names  # noqa: E402
from memo.seeds import discover_seeds, reduced_seed  # noqa: E402
from memo.training.check import run_training_check  # noqa: E402

TRAINERS = ["keras-tensorflow", "keras-jax", "keras-torch"]
CONVERTED = ["onnx2torch", "onnx2pytorch"]


def models(seed_names: list[str], mutants: int, base_seed: int) -> list[tuple[str, ModelIR]]:
    """Each named seed, reduced, then ``mutants`` of its mutants (the operators in turn; a failed mutation skipped)."""
    seeds = {seed.name: seed for seed in discover_seeds(ROOT / "seeds")}
    operators = operator_names()
    found: list[tuple[str, ModelIR]] = []
    for name in seed_names:
        ir = reduced_seed(seeds[name])
        found.append((name, ir))
        made, attempt = 0, 0
        while made < mutants and attempt < 10 * mutants:
            operator = operators[(attempt + zlib.crc32(name.encode())) % len(operators)]
            rng = random.Random(zlib.crc32(f"{base_seed}/{name}/{attempt}".encode()))
            attempt += 1
            try:
                found.append((f"{name}-{operator}-{attempt}", mutate(ir, operator, rng, None, parent=name).ir))
                made += 1
            except MutationFailed:
                continue
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="lenet5,alexnet_cifar10,lstm_sine_wave,mobilenet_v2")
    parser.add_argument("--mutants", type=int, default=2, help="mutants per seed (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="mutation, weights and inputs seed (default 0)")
    parser.add_argument("--converters", action="store_true", help="onnx2torch and onnx2pytorch train too")
    parser.add_argument("--optimizer-cost", action="store_true",
                        help="also check each model without the optimizer stage: that stage's added CPU seconds")
    args = parser.parse_args()
    chosen = models(args.seeds.split(","), args.mutants, args.seed)
    trainers = TRAINERS + (CONVERTED if args.converters else [])
    inference: dict[str, list[float]] = {name: [] for name in trainers}
    training: dict[str, list[float]] = {name: [] for name in trainers}
    without: dict[str, list[float]] = {name: [] for name in trainers}  # --optimizer-cost: no optimizer stage
    truth_seconds: list[float] = []
    with DifferentialExecutor(trainers, timeout_s=120) as executor, tempfile.TemporaryDirectory() as scratch:
        groups = {name: executor.members[name].group for name in trainers}
        for index, (name, ir) in enumerate(chosen):
            artifact = prepare_artifact(ir, Path(scratch) / f"m{index}", seed=args.seed)
            pids = executor.worker_pids()
            before = group_cpu(pids)
            executor.run(artifact, trainers)
            plain: dict[str, float] = {}
            if args.optimizer_cost:
                start = group_cpu(executor.worker_pids())
                run_training_check(executor, artifact, Path(scratch) / f"p{index}", trainers, truth=False,
                                   optimizer="")
                done = group_cpu(executor.worker_pids())
                plain = {g: done.get(g, 0.0) - start.get(g, 0.0) for g in done}
            middle_pids = executor.worker_pids()
            middle = group_cpu(middle_pids)
            began = time.perf_counter()
            check = run_training_check(executor, artifact, Path(scratch) / f"t{index}", trainers)
            wall = time.perf_counter() - began
            after_pids = executor.worker_pids()
            after = group_cpu(after_pids)
            stable = pids == middle_pids == after_pids and index > 0
            entry = f"[{check.judgement.optimizer}] " if check.judgement.optimizer else ""
            verdicts = entry + ("; ".join(f"{v.kind} {v.backend} at {v.stage}"
                                          + (f" (float64: {v.truth.decision})" if v.truth else "")
                                          for v in check.judgement.verdicts) or (
                f"left out: {check.judgement.left_out[:80]}" if check.judgement.left_out else "agree"))
            print(f"model {index:2d} {name:34s} {len(ir.layers):3d} layers  inference CPU "
                  f"{sum(middle[g] - before.get(g, 0.0) for g in middle):6.2f} s  training CPU "
                  f"{sum(after[g] - middle.get(g, 0.0) for g in after):6.2f} s (wall {wall:5.2f} s)"
                  + (f" without the optimizer stage {sum(plain.values()):6.2f} s" if plain else "")
                  + f"{'' if stable else '  [cold start or restart: left out]'}  {verdicts}", flush=True)
            if not stable:
                continue
            for name, group in groups.items():
                inference[name].append(middle.get(group, 0.0) - before.get(group, 0.0))
                training[name].append(after.get(group, 0.0) - middle.get(group, 0.0))
                if plain:
                    without[name].append(plain.get(group, 0.0))
            if check.truth_seconds:
                truth_seconds.append(check.truth_seconds)
    print(f"\nCPU seconds per model over {len(training[TRAINERS[0]])} warm models (median / p90):")
    print(f"{'backend':18s} {'inference':>16s} {'training check':>16s} {'ratio of medians':>17s}")
    for group in trainers:
        inf, train = inference[group], training[group]
        ratio = percentile(train, 50) / percentile(inf, 50) if inf and percentile(inf, 50) > 0 else float("nan")
        print(f"{group:18s} {percentile(inf, 50):7.2f} / {percentile(inf, 90):6.2f} "
              f"{percentile(train, 50):7.2f} / {percentile(train, 90):6.2f} {ratio:17.1f}")
    if any(without.values()):
        print(f"\nthe optimizer stage's added CPU seconds per model (with it minus without it; median / p90):")
        for group in trainers:
            added = [a - b for a, b in zip(training[group], without[group])]
            print(f"{group:18s} {percentile(added, 50):7.2f} / {percentile(added, 90):6.2f} "
                  f"(without: median {percentile(without[group], 50):.2f} s)")
        totals = [sum(training[g][i] - without[g][i] for g in trainers) for i in range(len(without[trainers[0]]))]
        print(f"all trainers      {percentile(totals, 50):7.2f} / {percentile(totals, 90):6.2f}")
    if truth_seconds:
        print(f"float64 truth (wall, {len(truth_seconds)} models with a numeric verdict): "
              f"median {percentile(truth_seconds, 50):.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
