"""Seed reduction benchmark: per seed, original vs reduced layers, weights and inference time.

Reproduce: ``.venv/bin/python benchmarks/bench_reduction.py [--seeds-dir DIR] [--repeat N] [--json]``

Reduction runs fresh (no cache); inference is one forward pass of a batch of one input, on Keras's numpy
backend (the orchestrator's backend), with deterministic generated weights: the fastest of ``--repeat``
runs after one warm-up call (the fastest, because other processes on the machine only ever add time).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import memo  # noqa: F401  (KERAS_BACKEND=numpy)
from memo.coverage import model_coverage
from memo.model.ir import ModelIR
from memo.model.keras_bridge import build_keras_model, generate_weights, make_inputs, set_weights
from memo.reduction import coverage_key, reduce_model
from memo.seeds import SEEDS_DIR, discover_seeds


def inference_seconds(ir: ModelIR, repeat: int) -> float:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        model = build_keras_model(ir)
        set_weights(model, generate_weights(model, seed=0))
        inputs = [make_inputs(ir, seed=0, batch=1)[layer.name] for layer in ir.input_layers]
        model(inputs if len(inputs) > 1 else inputs[0], training=False)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            model(inputs if len(inputs) > 1 else inputs[0], training=False)
            times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds-dir", type=Path, default=SEEDS_DIR)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    for seed in discover_seeds(args.seeds_dir):
        start = time.perf_counter()
        result = reduce_model(seed.ir)
        seconds = time.perf_counter() - start
        stats = result.stats
        rows.append({"seed": seed.name, "layers": [len(seed.ir), len(result.ir)],
                     "weights": [stats.original_weights, stats.reduced_weights],
                     "inference_s": [inference_seconds(seed.ir, args.repeat), inference_seconds(result.ir, args.repeat)],
                     "reduction_s": seconds,
                     "coverage_equal": coverage_key(model_coverage(seed.ir)) == coverage_key(model_coverage(result.ir))})
        print(f"reduced {seed.name}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    header = f"{'seed':22s} {'layers':>11s} {'weights':>23s} {'inference s':>17s} {'reduce s':>8s} coverage"
    print(header)
    for row in rows:
        (l0, l1), (w0, w1), (t0, t1) = row["layers"], row["weights"], row["inference_s"]
        print(f"{row['seed']:22s} {l0:5d} -> {l1:3d} {w0:11,d} -> {w1:10,d} {t0:7.3f} -> {t1:6.3f} "
              f"{row['reduction_s']:8.2f} {'equal' if row['coverage_equal'] else 'DIFFERENT'}")
    n = len(rows)
    mean = [sum(row[key][i] for row in rows) / n for key in ("layers", "weights", "inference_s") for i in (0, 1)]
    print(f"{'average':22s} {mean[0]:5.0f} -> {mean[1]:3.1f} {mean[2]:11,.0f} -> {mean[3]:10,.0f} "
          f"{mean[4]:7.3f} -> {mean[5]:6.3f} {sum(r['reduction_s'] for r in rows):8.2f} (total)")
    print("command: .venv/bin/python benchmarks/bench_reduction.py " + " ".join(argv or sys.argv[1:]))
    return 0 if all(row["coverage_equal"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
