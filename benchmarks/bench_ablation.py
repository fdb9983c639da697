"""MEMO's ablations (RQ3, RQ4) as one table: coverage reached by equal-time campaigns that differ in one part.

    .venv/bin/python benchmarks/bench_ablation.py --minutes 5 [--seed S] [--execute]
    .venv/bin/python benchmarks/bench_ablation.py --iterations 400     (equal mutant counts; wall time shown)

Variants: memo as shipped (MH search, reduced seeds, MEMO's operators and memo's own); RQ3: original
(unreduced) seeds; RQ4: random seed selection (MEMO_r), MCTS, MEMO's seven operators only, and LEMON-style
operators (weight shuffle, neuron effect block, activation removal/replacement, layer copy/removal).
Without ``--execute`` the campaigns generate and measure coverage only, which is what the coverage
criteria measure; with it every diverse mutant also runs on the default backends.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

VARIANTS: dict[str, list[str]] = {
    "memo (MH, reduced, all operators)": [],
    "RQ3: original seeds": ["--no-reduce"],
    "RQ4: random search (MEMO_r)": ["--search", "random"],
    "RQ4: MCTS search": ["--search", "mcts"],
    "RQ4: MEMO's seven operators": ["--ops", "NLA,LResh,LMerg,LConn,CShape,CMode,NaN"],
    "RQ4: LEMON-style operators": ["--ops", "LEMON-WS,LEMON-NEB,LEMON-AFRm,LEMON-AFRp,LEMON-LC,LEMON-LR"],
}


def run_variant(flags: list[str], budget: list[str], seed: int, execute: bool, workdir: Path, name: str) -> dict:
    cmd = [sys.executable, "-m", "memo", "fuzz", *budget, "--json", "--seed", str(seed),
           "--seeds-dir", str(REPO / "seeds"), "--out", name, "--name", name, *flags]
    if not execute:
        cmd.append("--no-execute")
    began = time.monotonic()
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    end = next((e for e in events if e["event"] == "end"), None)
    if end is None:
        return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1], "wall": time.monotonic() - began}
    return {**end, "wall": time.monotonic() - began}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--minutes", type=float, default=5.0)
    budget.add_argument("--iterations", type=int, help="equal mutant counts instead of equal time")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--execute", action="store_true")
    parser.add_argument("--only", help="comma-separated substrings of variant names to run")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="memo-ablation-"))
    print(f"command: {' '.join([sys.executable, *sys.argv])}")
    budget = ["--iterations", str(args.iterations)] if args.iterations else ["--minutes", str(args.minutes)]
    print(f"\n| variant | mutants | valid | diverse | types | pairs | params | wall s |\n|---|---|---|---|---|---|---|---|")
    for index, (label, flags) in enumerate(VARIANTS.items()):
        if args.only and not any(part in label for part in args.only.split(",")):
            continue
        end = run_variant(flags, budget, args.seed, args.execute, workdir, f"v{index}")
        if "error" in end:
            print(f"| {label} | failed: {end['error']} | | | | | | |", flush=True)
            continue
        cov = end["coverage"]
        cells = [f"{cov[k][0]}/{cov[k][1]}" for k in ("types", "pairs", "params")]
        print(f"| {label} | {end['generated']} | {end['valid']} | {end['diverse']} | {' | '.join(cells)} "
              f"| {end['wall']:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
