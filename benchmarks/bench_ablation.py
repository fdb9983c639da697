"""MEMO's ablations (RQ3, RQ4) as one table: coverage reached by equal-time campaigns that differ in one part.

    .venv/bin/python benchmarks/bench_ablation.py --minutes 5 [--seed S | --seeds 0,1,2] [--execute]
    .venv/bin/python benchmarks/bench_ablation.py --iterations 400     (equal mutant counts; wall time shown)

Variants: memo as shipped (MH search, reduced seeds, MEMO's operators and memo's own; half of the mutations
made by the directed operator Target on the model MH chose); MH with Target as one operator among the others
(``--directed 0``); MH without Target (undirected); RQ3: original (unreduced) seeds; RQ4: random seed selection
(MEMO_r), MCTS, MEMO's seven operators only, and LEMON-style operators (weight shuffle, neuron effect block,
activation removal/replacement, layer copy/removal).
Without ``--execute`` the campaigns generate and measure coverage only; with it every diverse mutant also runs
on the default backends, execution feeds the seed pool, and coverage counts executed models only. The table
then also gives the executed models, the share of them the reference could not run, and the layer types in
fewer than 1 % of executed mutants.
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

ALL_BUT_TARGET = "NLA,LResh,LMerg,LConn,CShape,CMode,NaN,LRemove,ERemove,TSM,DType,SameInput,Block"
VARIANTS: dict[str, list[str]] = {
    "memo: MH choosing, half of the mutations directed (Target)": [],
    "MH, Target as one operator among 14 (no directed share)": ["--directed", "0"],
    "MH, undirected (no Target)": ["--ops", ALL_BUT_TARGET],
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
    return {**end, **executed_figures(workdir / name / "campaign.sqlite"), "wall": time.monotonic() - began}


def executed_figures(database: Path) -> dict:
    """From a campaign's store (the report's own figures, :func:`memo.report.data.generation`): executed
    mutants, the share the reference could not run, and how many layer types appear in fewer than 1 % of the
    executed mutants (seeds excluded)."""
    if not database.exists():
        return {}
    sys.path.insert(0, str(REPO))
    from memo.report.data import generation
    from memo.store import CampaignStore
    with CampaignStore(database.parent) as store:
        figures = generation(store)
    if not figures["executed"]:
        return {"executed_mutants": 0}
    return {"executed_mutants": figures["executed"], "reference_failed": figures["reference_failed_share"],
            "rare_types": len(figures["rare_types"])}


def row(label: str, seed: str, end: dict) -> tuple[str, dict[str, float]]:
    """One Markdown row, and its figures for the mean over seeds."""
    cov = end["coverage"]
    figures = {"generated": end["generated"], "valid": end["valid"], "diverse": end["diverse"],
               **{k: cov[k][0] for k in ("types", "pairs", "params")}, "wall": end["wall"]}
    if "executed_mutants" in end:
        figures["executed"] = end["executed_mutants"]
    if "reference_failed" in end:
        figures["reference_failed"] = 100 * end["reference_failed"]
    if "rare_types" in end:
        figures["rare_types"] = end["rare_types"]
    return cells(label, seed, figures, {k: cov[k][1] for k in ("types", "pairs", "params")}), figures


def cells(label: str, seed: str, f: dict[str, float], totals: dict[str, int]) -> str:
    def num(key: str, fmt: str = "{:.0f}") -> str:
        return fmt.format(f[key]) if key in f else "-"
    return (f"| {label} | {seed} | {num('generated')} | {num('valid')} | {num('diverse')} | {num('executed')} "
            f"| {num('reference_failed', '{:.1f} %')} | {num('rare_types')} | "
            + " | ".join(f"{num(k)}/{totals[k]}" for k in ("types", "pairs", "params")) + f" | {num('wall')} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--minutes", type=float, default=5.0)
    budget.add_argument("--iterations", type=int, help="equal mutant counts instead of equal time")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", help="comma-separated seeds (each variant runs once per seed; a mean row "
                                        "follows); overrides --seed")
    parser.add_argument("--execute", action="store_true")
    parser.add_argument("--only", help="comma-separated substrings of variant names to run")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else [args.seed]
    workdir = Path(tempfile.mkdtemp(prefix="memo-ablation-"))
    print(f"command: {' '.join([sys.executable, *sys.argv])}")
    budget = ["--iterations", str(args.iterations)] if args.iterations else ["--minutes", str(args.minutes)]
    print("\n| variant | seed | mutants | valid | diverse | executed | reference failed | types < 1 % | types | pairs "
          "| params | wall s |\n|---|---|---|---|---|---|---|---|---|---|---|---|")
    for index, (label, flags) in enumerate(VARIANTS.items()):
        if args.only and not any(part in label for part in args.only.split(",")):
            continue
        runs: list[dict[str, float]] = []
        totals: dict[str, int] = {}
        for seed in seeds:
            end = run_variant(flags, budget, seed, args.execute, workdir, f"v{index}-s{seed}")
            if "error" in end:
                print(f"| {label} | {seed} | failed: {end['error']} | | | | | | | | | |", flush=True)
                continue
            text, figures = row(label, str(seed), end)
            totals = {k: end["coverage"][k][1] for k in ("types", "pairs", "params")}
            runs.append(figures)
            print(text, flush=True)
        if len(runs) > 1:
            mean = {key: sum(r[key] for r in runs) / len(runs) for key in runs[0] if all(key in r for r in runs)}
            print(cells(f"**{label}**", f"mean of {len(runs)}", mean, totals), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
