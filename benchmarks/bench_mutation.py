"""Benchmark of the mutation operators over the reduced bundled seeds.

Per operator: how often it applies (a mutant comes back rather than MutationFailed), how many mutants
build in Keras (rebuilt independently of the operator's own check), how many run on keras-tensorflow
without error (through memo's DifferentialExecutor, the campaign's own execution path), and the rate of
valid mutants per second for mutate + build + coverage delta on one core.

Columns: tried (mutate calls), mutants (returned), failed (MutationFailed: no site), crash (operator
bug), build% (of mutants, rebuilt from their JSON with a full Keras build), run% (of the mutants run on
keras-tensorflow), signal (runs whose worker was killed by a signal: a library crash, i.e. a finding),
valid/s (mutate + validation + coverage delta, one core), +build/s (the same plus the full rebuild).

    .venv/bin/python benchmarks/bench_mutation.py --per-op 1000 --run 1000
    .venv/bin/python benchmarks/bench_mutation.py --ops NLA CMode --per-op 200 --run 50 --json out.json
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import zlib
from pathlib import Path

import memo  # noqa: F401  (sets KERAS_BACKEND=numpy for this process)
from memo.coverage import CoverageTracker, model_coverage
from memo.model.build import build_keras_model
from memo.mutation import OPERATORS, MutationFailed, Mutant, mutate, operator_names
from memo.seeds import discover_seeds, reduced_seed


def load_seeds() -> list[tuple[str, object]]:
    return [(seed.name, reduced_seed(seed)) for seed in discover_seeds()]


def generate(op: str, seeds: list, count: int, base_seed: int) -> dict:
    tracker = CoverageTracker()
    mutants: list[Mutant] = []
    failed, crashed, examples = 0, 0, []
    started = time.perf_counter()
    for i in range(count):
        name, ir = seeds[i % len(seeds)]
        rng = random.Random(zlib.crc32(f"{base_seed}/{op}/{i}".encode()))
        try:
            mutant = mutate(ir, op, rng, tracker, parent=name)
        except MutationFailed as exc:
            failed += 1
            if len(examples) < 3:
                examples.append(f"{name}: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001 - an operator bug: counted, shown, not fatal to the benchmark
            crashed += 1
            examples.append(f"{name}: CRASH {type(exc).__name__}: {exc}")
            continue
        tracker.add(model_coverage(mutant.ir))
        mutants.append(mutant)
    seconds = time.perf_counter() - started
    built = 0
    rebuild_started = time.perf_counter()
    for mutant in mutants:  # independent full Keras build from the serialized IR (what the campaign writes)
        try:
            build_keras_model(type(mutant.ir).loads(mutant.ir.dumps()))
            built += 1
        except Exception as exc:  # noqa: BLE001
            examples.append(f"{mutant.parent}: REBUILD FAILED {exc}")
    rebuild = time.perf_counter() - rebuild_started
    return {"attempted": count, "mutants": len(mutants), "failed": failed, "crashed": crashed, "built": built,
            "seconds": seconds, "valid_per_s": len(mutants) / seconds if seconds else 0.0,
            "valid_per_s_with_full_build": len(mutants) / (seconds + rebuild) if seconds + rebuild else 0.0,
            "coverage": {k: v[0] for k, v in tracker.counts().items() if k in ("types", "pairs", "params")},
            "examples": examples, "_mutants": mutants}


def run_on_tensorflow(mutants: list[Mutant], limit: int) -> dict:
    from memo.artifact import prepare_artifact  # noqa: PLC0415
    from memo.backends.executor import DifferentialExecutor  # noqa: PLC0415

    chosen = mutants[:limit]
    ok, signals, errors = 0, 0, {}
    with tempfile.TemporaryDirectory(prefix="memo-bench-") as tmp, \
            DifferentialExecutor(backends=["keras-tensorflow"], timeout_s=60) as executor:
        for i, mutant in enumerate(chosen):
            artifact = prepare_artifact(mutant.ir, Path(tmp) / f"m{i}", seed=i)
            result = executor.run(artifact)
            backend = result.backends["keras-tensorflow"]
            if backend.status == "ok":
                ok += 1
            else:
                failure = backend.failure
                signals += int(bool(failure and failure.signal))
                key = f"{mutant.operator}: {failure.exc_type if failure else backend.status}: " \
                      f"{(failure.message if failure else '')[:120]}"
                errors[key] = errors.get(key, 0) + 1
    return {"ran": len(chosen), "ok": ok, "killed_by_signal": signals, "errors": dict(sorted(errors.items(), key=lambda kv: -kv[1])[:5])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", nargs="*", default=list(operator_names()), choices=sorted(OPERATORS))
    parser.add_argument("--per-op", type=int, default=1000, help="mutation attempts per operator")
    parser.add_argument("--run", type=int, default=200, help="mutants per operator run on keras-tensorflow (0: none)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    seeds = load_seeds()
    print(f"seeds: {len(seeds)} reduced ({', '.join(name for name, _ in seeds)})")
    report = {}
    header = (f"{'op':10} {'tried':>6} {'mutants':>7} {'failed':>6} {'crash':>5} {'build%':>7} {'run%':>7} "
              f"{'signal':>6} {'valid/s':>8} {'+build/s':>8}")
    print(header)
    for op in args.ops:
        figures = generate(op, seeds, args.per_op, args.seed)
        mutants = figures.pop("_mutants")
        if args.run and mutants:
            figures["tensorflow"] = run_on_tensorflow(mutants, args.run)
        built_pct = 100.0 * figures["built"] / max(1, figures["mutants"])
        tf = figures.get("tensorflow")
        run_pct = f"{100.0 * tf['ok'] / max(1, tf['ran']):6.1f}%" if tf else "     -"
        killed = f"{tf['killed_by_signal']:6d}" if tf else "     -"
        print(f"{op:10} {figures['attempted']:6d} {figures['mutants']:7d} {figures['failed']:6d} "
              f"{figures['crashed']:5d} {built_pct:6.1f}% {run_pct} {killed} {figures['valid_per_s']:8.1f} "
              f"{figures['valid_per_s_with_full_build']:8.1f}", flush=True)
        for line in figures["examples"][:2]:
            print(f"    e.g. {line[:160]}")
        if tf:
            for key, n in tf["errors"].items():
                print(f"    tf x{n}: {' '.join(key.split())[:150]}")
        report[op] = figures
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
