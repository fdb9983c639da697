"""``memo mutate SEED --op NAME``: apply one mutation operator to a seed and write the mutants for inspection."""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from memo.errors import UsageError
from memo.json_types import JsonObject

# The handlers below import the rest of memo when they run: the CLI imports every command module to
# build its parser, and `memo --help` must not pay for the campaign, triage, Keras or rich.

ATTEMPTS_PER_MUTANT = 5  # MutationFailed is retryable: the next attempt draws from a fresh generator


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("mutate", help="apply a mutation operator to a seed and write the mutants")
    parser.add_argument("seed_model", metavar="SEED", help="a bundled seed name or a model file (.keras, .h5, .json)")
    parser.add_argument("--op", required=True, metavar="NAME", help="operator name (see docs/mutation.md)")
    parser.add_argument("-n", type=int, default=1, metavar="N", help="number of mutants (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (same seed, same mutants)")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="directory for the mutants")
    parser.add_argument("--keras", action="store_true", help="also save each mutant as .keras with generated weights")
    parser.add_argument("--full", action="store_true", help="mutate a bundled seed as published, not reduced")
    parser.add_argument("--unsafe", action="store_true", help="allow model files whose layers carry Python code")
    parser.add_argument("--json", action="store_true", help="print a JSON summary")
    parser.set_defaults(func=handle)


def load_parent(text: str, *, full: bool, safe_mode: bool) -> tuple[str, Any]:
    """(name, IR) of a model file path or of a bundled seed (reduced unless ``full``)."""
    path = Path(text)
    if path.exists():
        from memo.model.files import load_model_file

        return path.stem, load_model_file(path, safe_mode=safe_mode).ir
    from memo.seeds import discover_seeds, reduced_seed

    seeds = {seed.name: seed for seed in discover_seeds(safe_mode=safe_mode)}
    if text not in seeds:
        raise UsageError(f"unknown seed {text!r}: not a file and not a bundled seed "
                         f"(bundled: {', '.join(sorted(seeds))})")
    seed = seeds[text]
    return seed.name, seed.ir if full else reduced_seed(seed)


def describe(change: JsonObject) -> str:
    """One short line for a lineage entry."""
    action = change["action"]
    if "class_name" in change and "node" in change:
        return f"{action} {change['node']} ({change['class_name']})"
    keys = [k for k in ("node", "target", "value", "old_inputs", "new_inputs", "old_shape", "new_shape", "block")
            if k in change]
    return f"{action} " + " ".join(f"{k}={change[k]}" for k in keys)


def handle(args: argparse.Namespace) -> int:
    from memo.coverage import CoverageTracker, model_coverage
    from memo.mutation import MutationFailed, get_operator, mutate

    op = get_operator(args.op)  # unknown operator: UsageError before any work
    if args.n < 1:
        raise UsageError("-n must be at least 1")
    name, parent = load_parent(args.seed_model, full=args.full, safe_mode=not args.unsafe)
    args.out.mkdir(parents=True, exist_ok=True)
    tracker = CoverageTracker()
    tracker.add(model_coverage(parent))
    written: list[JsonObject] = []
    failures: list[str] = []
    for index in range(args.n):
        mutant = None
        for attempt in range(ATTEMPTS_PER_MUTANT):
            rng = random.Random(f"{args.seed}/{index}/{attempt}")
            try:
                mutant = mutate(parent, op.name, rng, tracker, parent=name)
                break
            except MutationFailed as exc:
                failures.append(str(exc))
        if mutant is None:
            continue
        delta = tracker.add(model_coverage(mutant.ir))
        stem = f"{name}-{op.name}-{index:03d}"
        (args.out / f"{stem}.json").write_text(mutant.ir.dumps())
        entry = {"file": f"{stem}.json", **mutant.lineage(), "seed": args.seed, "index": index,
                 "new_coverage": delta.counts()}
        if args.keras:
            from memo.model.files import save_keras_artifact

            save_keras_artifact(mutant.ir, args.out / f"{stem}.keras", seed=args.seed)
            entry["keras"] = f"{stem}.keras"
        written.append(entry)
    (args.out / "lineage.json").write_text(json.dumps({"parent": name, "operator": op.name, "seed": args.seed,
                                                       "mutants": written}, indent=1, sort_keys=True))
    summary = {"parent": name, "operator": op.name, "seed": args.seed, "out": str(args.out),
               "written": len(written), "failed_attempts": len(failures),
               "mutants": [{"file": e["file"], "changes": len(e["changes"]), "new_coverage": e["new_coverage"]}
                           for e in written]}
    if args.json:
        print(json.dumps(summary, indent=1, sort_keys=True))
    else:
        for entry in written:
            print(f"{entry['file']}: {len(entry['changes'])} changes")
            for change in entry["changes"]:
                print(f"    {describe(change)}")
        print(f"{len(written)} mutant(s) of {name} by {op.name} in {args.out}"
              + (f" ({len(failures)} attempts found no site)" if failures else ""))
    if not written:
        raise MutationFailed(f"{op.name} found no applicable site in {name}: {failures[-1] if failures else ''}")
    return 0
