"""Seed reduction benchmark: per seed, original vs reduced layers, weights and inference time.

Reproduce:
``.venv/bin/python benchmarks/bench_seed_reduction.py [--seeds-dir DIR] [--repeat N] [--json] [--lower-bound]``

``--lower-bound`` adds a lower bound on the layers of any model with exactly the seed's coverage, from an
integer program over counts per layer class that ignores shapes (see :func:`layer_lower_bound`).

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
from memo.model.build import build_keras_model
from memo.model.inputs import make_inputs
from memo.model.ir import ModelIR
from memo.model.weights import generate_weights, set_weights
from memo.seed_reduction import coverage_key, reduce_model
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


def layer_lower_bound(ir: ModelIR) -> int:
    """Fewest layers any model with exactly ``ir``'s types, pairs and params can have, shapes ignored.

    Variables: n_C layers of each class C and e_AB edges from class A to class B. Every covered pair needs
    an edge; an edge between classes may exist only if it adds no counted pair (covered, or never counted);
    each class has as many layers as its most-valued parameter has values, and its in-edges within its
    arity; every layer but the outputs feeds some edge; the inputs stay as they are.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp  # noqa: PLC0415  (only for --lower-bound)

    from memo.layers import CATALOGUE, possible_pairs  # noqa: PLC0415

    coverage = model_coverage(ir)
    classes = sorted({layer.class_name for layer in ir.layers})
    counted = possible_pairs()
    edges = [(a, b) for a in classes for b in classes
             if b != "InputLayer" and ((a, b) in coverage.pairs or (a, b) not in counted)]
    column = {name: i for i, name in enumerate([*classes, *edges])}
    values: dict[tuple[str, str], int] = {}
    for api, param, _value in coverage.params:
        values[(api, param)] = values.get((api, param), 0) + 1
    outputs = [ir.get(name).class_name for name in ir.outputs]
    matrix, low, high = [], [], []

    def constrain(coefficients: dict, lo: float, hi: float) -> None:
        row = np.zeros(len(column))
        for key, value in coefficients.items():
            row[column[key]] += value
        matrix.append(row)
        low.append(lo)
        high.append(hi)

    for cls in classes:
        if cls == "InputLayer":
            inputs = len(ir.input_layers)
            constrain({cls: 1}, inputs, inputs)
        else:
            least, most = CATALOGUE[cls].arity
            into = {edge: 1 for edge in edges if edge[1] == cls}
            constrain({**into, cls: -least}, 0, np.inf)
            constrain({**into, cls: -min(most, 5)}, -np.inf, 0)
            constrain({cls: 1}, max([n for (api, _p), n in values.items() if api == cls], default=1), np.inf)
        constrain({**{edge: 1 for edge in edges if edge[0] == cls}, cls: -1}, -outputs.count(cls), np.inf)
    lower = np.array([1.0] * len(classes) + [1.0 if edge in coverage.pairs else 0.0 for edge in edges])
    cost = np.array([1.0] * len(classes) + [0.0] * len(edges))
    result = milp(cost, constraints=LinearConstraint(np.array(matrix), low, high), integrality=np.ones(len(column)),
                  bounds=Bounds(lower, np.inf))
    return int(round(result.fun))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds-dir", type=Path, default=SEEDS_DIR)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--lower-bound", action="store_true", help="also print a shape-free lower bound on layers")
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
        if args.lower_bound:
            rows[-1]["lower_bound"] = layer_lower_bound(seed.ir)
        print(f"reduced {seed.name}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    header = f"{'seed':22s} {'layers':>11s} {'weights':>23s} {'inference s':>17s} {'reduce s':>8s} coverage"
    print(header)
    for row in rows:
        (l0, l1), (w0, w1), (t0, t1) = row["layers"], row["weights"], row["inference_s"]
        print(f"{row['seed']:22s} {l0:5d} -> {l1:3d} {w0:11,d} -> {w1:10,d} {t0:7.3f} -> {t1:6.3f} "
              f"{row['reduction_s']:8.2f} {'equal' if row['coverage_equal'] else 'DIFFERENT'}"
              + (f"  (bound {row['lower_bound']})" if "lower_bound" in row else ""))
    n = len(rows)
    mean = [sum(row[key][i] for row in rows) / n for key in ("layers", "weights", "inference_s") for i in (0, 1)]
    print(f"{'average':22s} {mean[0]:5.0f} -> {mean[1]:3.1f} {mean[2]:11,.0f} -> {mean[3]:10,.0f} "
          f"{mean[4]:7.3f} -> {mean[5]:6.3f} {sum(r['reduction_s'] for r in rows):8.2f} (total)")
    print("command: .venv/bin/python benchmarks/bench_seed_reduction.py " + " ".join(argv or sys.argv[1:]))
    return 0 if all(row["coverage_equal"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
