"""Benchmark: the CPU cost of ``--library-coverage`` per executed model, side by side on the same models.

    .venv/bin/python benchmarks/bench_library_coverage_cost.py [--repeat 2] [--seed 3] [--backends a,b,...]
                                                               [--campaign DIR --models N]

The models are the campaign's own first ones: every bundled seed, reduced as a campaign reduces it (or, with
``--campaign``, the first ``--models`` mutants a campaign executed: larger, grown models). Each is run
``--repeat`` times through one warm DifferentialExecutor without library coverage, then through another with it
(the same artifacts: same weights and inputs). The first model of each configuration pays the workers' cold start
(and, with coverage, the statement count when not cached) and is left out. Prints the CPU seconds per model of the
worker processes (user + system), in all and per worker, and the ratio with / without.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_differential import group_cpu, percentile  # noqa: E402  (the same per-worker CPU reading)

from memo.artifact import Artifact, prepare_artifact  # noqa: E402
from memo.backends.executor import DifferentialExecutor  # noqa: E402
from memo.model.ir import ModelIR  # noqa: E402
from memo.seeds.cache import reduced_seed  # noqa: E402
from memo.seeds.loading import discover_seeds  # noqa: E402
from memo.store import CampaignStore  # noqa: E402


def measure(artifacts: list[Artifact], backends: list[str] | None, library_coverage: bool,
            every: int = 1) -> dict[str, list[float]]:
    """CPU seconds per worker group for each warm model (the first model, cold, is left out); key "" is the sum."""
    per_group: dict[str, list[float]] = {"": []}
    with DifferentialExecutor(backends, library_coverage=library_coverage) as executor:
        for index, artifact in enumerate(artifacts):
            before_pids = executor.worker_pids()
            before = group_cpu(before_pids)
            began = time.perf_counter()
            executor.run(artifact, library=library_coverage and index % every == 0)  # a campaign's traced share
            after = group_cpu({g: p for g, p in executor.worker_pids().items() if p == before_pids.get(g)})
            spent = {group: seconds - before.get(group, 0.0) for group, seconds in after.items()}
            print(f"  {'on ' if library_coverage else 'off'} model {index:2d} {artifact.directory.name:28s} "
                  f"CPU {sum(spent.values()):6.2f} s, wall {time.perf_counter() - began:6.2f} s"
                  f"{'  [cold start]' if index == 0 else ''}", flush=True)
            if index == 0 or set(after) != set(before_pids):  # a worker restarted mid-model: not comparable
                continue
            per_group[""].append(sum(spent.values()))
            for group, seconds in spent.items():
                per_group.setdefault(group, []).append(seconds)
    return per_group


def seed_models() -> list[tuple[str, ModelIR]]:
    """Every bundled seed, reduced as a campaign reduces it."""
    return [(seed.name, reduced_seed(seed)) for seed in discover_seeds(ROOT / "seeds")]


def campaign_models(directory: Path, count: int) -> list[tuple[str, ModelIR]]:
    """The first ``count`` mutants (seeds excluded) a campaign executed."""
    with CampaignStore(directory) as store:
        rows = [(f"m{row.mutant_id}", ModelIR.loads(ir)) for _, ir, row in store.executed_mutants()]
    return rows[:count]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs of each model per configuration (default 2)")
    parser.add_argument("--seed", type=int, default=3, help="weights and inputs seed (default 3)")
    parser.add_argument("--backends", help="comma-separated (default: memo's default set)")
    parser.add_argument("--campaign", type=Path, help="run the mutants this campaign executed instead of the seeds")
    parser.add_argument("--models", type=int, default=12, help="with --campaign: how many of its mutants (default 12)")
    parser.add_argument("--every", type=int, default=1,
                        help="with coverage, trace one model in N, as `memo fuzz --library-coverage-every N` does "
                             "(default 1: every model)")
    args = parser.parse_args()
    names = args.backends.split(",") if args.backends else None
    models = campaign_models(args.campaign, args.models) if args.campaign else seed_models()
    with tempfile.TemporaryDirectory(prefix="memo-bench-libcov-") as scratch:
        artifacts = [prepare_artifact(ir, Path(scratch) / f"{name}-{n}", seed=args.seed)
                     for name, ir in models for n in range(args.repeat)]
        artifacts = [artifacts[0], *artifacts]  # the cold start runs the first model once more
        off = measure(artifacts, names, library_coverage=False)
        on = measure(artifacts, names, library_coverage=True, every=args.every)
    print(f"\n{len(off[''])} warm models per configuration ({len(models)} models x {args.repeat}); with coverage, "
          f"one model in {args.every} traced")
    print(f"{'worker':26s} {'off: mean CPU s':>16s} {'on: mean CPU s':>15s} {'on/off':>7s} {'median on/off':>14s}")
    for group in sorted(on, key=lambda g: -sum(on[g])):
        if group not in off or not off[group] or not on[group]:
            continue
        mean_off, mean_on = sum(off[group]) / len(off[group]), sum(on[group]) / len(on[group])
        ratio = mean_on / mean_off if mean_off else float("nan")
        medians = percentile(on[group], 50) / percentile(off[group], 50) if percentile(off[group], 50) else float("nan")
        print(f"{group or 'all workers':26s} {mean_off:16.3f} {mean_on:15.3f} {ratio:7.2f} {medians:14.2f}")
    print(f"\nreproduce: .venv/bin/python benchmarks/bench_library_coverage_cost.py --repeat {args.repeat} "
          f"--seed {args.seed}" + (f" --backends {args.backends}" if args.backends else "")
          + (f" --campaign {args.campaign} --models {args.models}" if args.campaign else "")
          + (f" --every {args.every}" if args.every != 1 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
