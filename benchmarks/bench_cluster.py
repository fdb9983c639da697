"""A campaign on a two-node Ray cluster on this machine against the same campaign run locally, and the head's
own cost per mutant, from which where one head saturates.

    .venv/bin/python benchmarks/bench_cluster.py --minutes 10 [--seed S] [--backends a,b] [--skip-local]

Runs ``memo fuzz --minutes M`` twice (locally with memo's default --jobs, then with ``--cluster local:2``, whose
default --jobs is the nodes' slots), then a generation-only run (``--no-execute --iterations 200``). Every figure
comes from the process tree (psutil; a local cluster's Ray processes are children of the head), the JSON events
and the campaign's store. The head's cost is the CPU of the ``memo fuzz`` process alone: generation, search,
coverage, the oracle, the store, triage's orchestration and, on a cluster, Ray's client side.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_campaign import sample_tree  # noqa: E402  (the same process-tree sampling as the campaign benchmark)


# A local cluster's own processes (GCS, raylets, agents, the node actors, which retitle themselves): one role.
_RAY_PARTS = re.compile(r"ray|agent|gcs|dashboard|monitor|NodeRunner")
_RAY_ROLE = "ray (GCS, raylets, agents, node actors)"


@dataclass
class Run:
    """One ``memo fuzz`` run's figures."""

    label: str
    wall_s: float = 0.0
    fuzz_s: float = 0.0
    generated: int = 0
    executed: int = 0
    tree_cpu_s: float = 0.0
    head_cpu_s: float = 0.0
    peak_rss_mb: float = 0.0
    cpu_by_role: dict[str, float] = field(default_factory=dict)
    end: dict[str, Any] = field(default_factory=dict)

    @property
    def executed_per_hour(self) -> float:
        return 3600.0 * self.executed / self.fuzz_s if self.fuzz_s else 0.0


def run_fuzz(label: str, workdir: Path, args: list[str], budget_s: float | None, sample_every: float) -> Run:
    """Run ``memo fuzz ARGS --json`` in ``workdir`` and measure it; ``budget_s``: the fuzzing time whose
    executions count (models that finish during the final drain and triage do not)."""
    cmd = [sys.executable, "-m", "memo", "fuzz", *args, "--json", "--out", label, "--name", label]
    proc = subprocess.Popen(cmd, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    run, cpu, began = Run(label), {}, time.monotonic()

    def sample() -> None:
        while proc.poll() is None:
            run.peak_rss_mb = max(run.peak_rss_mb, sample_tree(proc.pid, cpu))
            time.sleep(sample_every)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    assert proc.stdout is not None
    for line in proc.stdout:
        event = json.loads(line)
        if event["event"] == "end":
            run.end = event
    proc.wait()
    sampler.join(timeout=sample_every + 1)
    run.wall_s = time.monotonic() - began
    run.generated = int(run.end.get("generated", 0))
    for role, seconds in cpu.values():
        role = _RAY_ROLE if _RAY_PARTS.search(role) or not role.strip() else role
        run.cpu_by_role[role] = run.cpu_by_role.get(role, 0.0) + seconds
    run.tree_cpu_s = sum(run.cpu_by_role.values())
    run.head_cpu_s = cpu.get(proc.pid, ("memo", 0.0))[1]
    with sqlite3.connect(workdir / label / "campaign.sqlite") as db:
        rows = db.execute("SELECT elapsed, executed FROM coverage_history ORDER BY elapsed").fetchall()
    inside = [row for row in rows if budget_s is None or row[0] <= budget_s + 1] or rows
    run.fuzz_s, run.executed = (inside[-1][0], inside[-1][1]) if inside else (0.0, 0)
    if budget_s is None:
        run.executed = int(run.end.get("executed", 0))
    return run


def describe(run: Run) -> None:
    per_model = run.tree_cpu_s / run.executed if run.executed else 0.0
    print(f"\n### {run.label}\n")
    print("| figure | value |\n|---|---|")
    print(f"| mutants generated / executed within the budget | {run.generated} / {run.executed} at {run.fuzz_s / 60:.1f} min |")
    print(f"| executed per hour of fuzzing | {run.executed_per_hour:.0f} |")
    print(f"| CPU seconds per executed model (whole tree, final triage included) | {per_model:.2f} ({run.tree_cpu_s:.0f} s over {run.wall_s:.0f} s wall) |")
    print(f"| head (`memo fuzz` process) CPU per generated / per executed mutant | "
          f"{run.head_cpu_s / max(1, run.generated):.3f} s / {run.head_cpu_s / max(1, run.executed):.3f} s |")
    print(f"| peak RSS of the tree | {run.peak_rss_mb / 1024:.1f} GB |")
    top = sorted(run.cpu_by_role.items(), key=lambda item: -item[1])[:8]
    print("| CPU by process | " + ", ".join(f"{role} {seconds:.0f} s" for role, seconds in top) + " |")
    cluster = run.end.get("cluster")
    if cluster:
        nodes = "; ".join(f"{node['host']}:{node['node'][:6]} {node['executed']} runs, {node['worker_sets']} sets, "
                          f"{node['slots']} slots, {node['state']}" for node in cluster["nodes"])
        print(f"| nodes | {nodes} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backends")
    parser.add_argument("--skip-local", action="store_true", help="only the cluster run")
    parser.add_argument("--generation-iterations", type=int, default=200)
    parser.add_argument("--sample-every", type=float, default=5.0)
    parser.add_argument("--keep", help="copy the campaign folders here")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="memo-bench-cluster-"))
    common = ["--minutes", str(args.minutes), "--seed", str(args.seed), "--seeds-dir", str(REPO / "seeds")]
    if args.backends:
        common += ["--backends", args.backends]
    budget = 60.0 * args.minutes
    print(f"# memo cluster benchmark ({time.strftime('%Y-%m-%d')}, {platform.node()}, {os.cpu_count()} cores)")
    runs = [] if args.skip_local else [run_fuzz("local", workdir, common, budget, args.sample_every)]
    runs.append(run_fuzz("cluster", workdir, [*common, "--cluster", "local:2"], budget, args.sample_every))
    generation = run_fuzz("generation", workdir, ["--no-execute", "--iterations", str(args.generation_iterations),
                                                  "--seed", str(args.seed), "--seeds-dir", str(REPO / "seeds")],
                          None, 1.0)
    for run in runs:
        describe(run)
    gen_cost = generation.head_cpu_s / max(1, generation.generated)
    print(f"\n- generation alone (`--no-execute --iterations {args.generation_iterations}`): "
          f"{gen_cost:.3f} head CPU seconds per mutant ({generation.generated} mutants)")
    local = next((run for run in runs if run.label == "local"), None)
    cluster = runs[-1]
    if local is not None and local.executed_per_hour:
        ratio = cluster.executed_per_hour / local.executed_per_hour
        print(f"- cluster / local executed per hour: {ratio:.2f} (goal: within 10 %, 0.90 or more)")
    head_per_executed = cluster.head_cpu_s / max(1, cluster.executed)
    nodes = len((cluster.end.get("cluster") or {}).get("nodes") or []) or 2
    per_node = cluster.executed_per_hour / nodes
    ceiling = 3600.0 / head_per_executed if head_per_executed else 0.0
    print(f"- head CPU per executed model on the cluster: {head_per_executed:.3f} s, so one head core sustains about "
          f"{ceiling:,.0f} executed models per hour, {ceiling / per_node:.0f} nodes like these "
          f"({per_node:.0f} per hour each)" if per_node else "- no cluster executions")
    if args.keep:
        keep = Path(args.keep)
        keep.mkdir(parents=True, exist_ok=True)
        for run in runs:
            shutil.copytree(workdir / run.label, keep / run.label, dirs_exist_ok=True)
    command = " ".join(["benchmarks/bench_cluster.py", "--minutes", f"{args.minutes:g}", "--seed", str(args.seed),
                        *(["--backends", args.backends] if args.backends else []),
                        *(["--skip-local"] if args.skip_local else [])])
    print(f"\nreproduce: .venv/bin/python {command}")
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
