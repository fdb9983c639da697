"""``memo seeds list|add``: the seed models, their sizes and coverage before and after reduction."""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

from memo.errors import UsageError

# The handlers below import the rest of memo when they run: the CLI imports every command module to
# build its parser, and `memo --help` must not pay for the campaign, triage, Keras or rich.


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("seeds", help="list seed models or add one")
    parser.add_argument("--seeds-dir", type=Path, default=None, metavar="DIR",
                        help="seed directory (default: the bundled seeds/)")
    parser.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                        help="cache of reduced seeds (default: .cache/seeds)")
    sub = parser.add_subparsers(dest="seeds_command", metavar="ACTION", parser_class=type(parser))
    listing = sub.add_parser("list", help="per seed: layers, weights, coverage counts, reduced size")
    listing.add_argument("--json", action="store_true", help="print one JSON object")
    listing.add_argument("--unsafe", action="store_true", help="allow seed files whose layers carry Python code")
    listing.set_defaults(func=handle_list)
    add = sub.add_parser("add", help="validate a model file, copy it into the seed directory and reduce it")
    add.add_argument("path", type=Path, help=".keras, .h5 or Keras JSON model file (or a memo seed recipe)")
    add.add_argument("--name", help="seed name (default: the file name without its suffix)")
    add.add_argument("--unsafe", action="store_true",
                     help="allow layers that carry Python code (Lambda); their code may run while loading")
    add.add_argument("--force", action="store_true", help="replace a seed of the same name")
    add.set_defaults(func=handle_add)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def _dirs(args: argparse.Namespace) -> tuple[Path, Path]:
    from memo.seeds import DEFAULT_CACHE, SEEDS_DIR

    return args.seeds_dir or SEEDS_DIR, args.cache_dir or DEFAULT_CACHE


def _count(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1_000_000 else f"{n / 1e3:.0f}k" if n >= 1000 else str(n)


def _row(summary: Any) -> list[str]:
    o, r = summary.original, summary.reduced
    return [summary.name, f"{o.layers} -> {r.layers}", f"{_count(o.weights)} -> {_count(r.weights)}",
            f"{o.types}/{o.pairs}/{o.params}", f"{summary.reduction_seconds:.1f}"]


def handle_list(args: argparse.Namespace) -> int:
    from memo.seeds import discover_seeds, seed_summary

    seeds_dir, cache_dir = _dirs(args)
    problems: list[str] = []
    summaries = [seed_summary(seed, cache_dir) for seed in discover_seeds(seeds_dir, safe_mode=not args.unsafe,
                                                                           problems=problems)]
    if args.json:
        print(json.dumps({"seeds": [s.to_json() for s in summaries], "skipped": problems}, indent=1))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"memo seeds ({seeds_dir})")
    for column in ("seed", "layers", "weights", "types/pairs/params", "reduce s"):
        table.add_column(column)
    for summary in summaries:
        table.add_row(*_row(summary))
    console = Console()
    console.print(table)
    for problem in problems:
        console.print(f"skipped: {problem}", markup=False)
    return 0


def handle_add(args: argparse.Namespace) -> int:
    from memo.seeds import cached_entry, has_seed_name, is_seed_file, load_seed, store_entry

    seeds_dir, cache_dir = _dirs(args)
    source: Path = args.path
    seed = load_seed(source, safe_mode=not args.unsafe)  # refuses unreadable files and unknown layers
    name = args.name or source.stem
    target = seeds_dir / f"{name}{source.suffix.lower()}"
    if not has_seed_name(target):
        raise UsageError(f"{target.name}: a seed name must not start with '_' or '.'")
    existing = [p for p in seeds_dir.glob(f"{name}.*") if is_seed_file(p)] if seeds_dir.is_dir() else []
    if existing and not args.force:
        raise UsageError(f"a seed named {name!r} already exists ({existing[0]}); use --force to replace it")
    seed.name, seed.ir.name = name, name
    entry = cached_entry(seed, None)  # validates by building, and reduces, before anything is copied
    seeds_dir.mkdir(parents=True, exist_ok=True)
    for old in existing:
        old.unlink()
    shutil.copyfile(source, target)
    seed.path = target
    entry["summary"]["path"] = str(target)
    store_entry(seed, cache_dir, entry)  # same bytes, same key: `seeds list` and campaigns find it
    summary, kept = entry["summary"], [layer["name"] for layer in entry["ir"]["layers"]]
    o, r = summary["original"], summary["reduced"]
    print(f"added seed {name!r}: {target}")
    print(f"reduced {o['layers']} -> {r['layers']} layers, {o['weights']:,} -> {r['weights']:,} weights; coverage "
          f"{o['types']} types, {o['pairs']} pairs, {o['params']} params (unchanged)")
    print("kept: " + ", ".join(kept))
    return 0
