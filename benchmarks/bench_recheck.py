"""How long rechecking recorded bugs takes, and what each says on the installed library versions.

    .venv/bin/python benchmarks/bench_recheck.py [CAMPAIGN ...] [--limit 40] [--jobs 2] [--timeout 120]
        [--python PATH] [--library NAME] [--json OUT]

Copies the bug folders of the campaigns (default campaigns/p30 and campaigns/p20; a bug id found in several is
taken once, from the first) to a scratch folder, only the files each script reads, and runs
:func:`memo.bugdb.recheck.recheck_all` on them, ``--jobs`` at once. ``--limit`` picks that many bugs spread
over their groups (kind and library, round-robin in name order) so that every library is in the sample; 0: all.
``--python`` runs every script with that interpreter (another release of a library: scripts/make_recheck_env.sh)
and ``--library`` keeps the bugs whose id names that library. Prints one line per bug as it ends, then the counts
per result, the wall time and the per-bug seconds: the figures in docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memo.bugdb.recheck import RESULTS, RecheckResult, read_facts, recheck_all  # noqa: E402
from memo.paths import CAMPAIGNS_DIR  # noqa: E402
from memo.bug_files import BUG_FILE, BUGS_DIR, REPRO_FILE  # noqa: E402


def bug_folders(campaigns: list[Path]) -> dict[str, Path]:
    """Each bug id once, from the first campaign that has it."""
    found: dict[str, Path] = {}
    for campaign in campaigns:
        for folder in sorted((campaign / BUGS_DIR).glob("*")):
            if (folder / REPRO_FILE).is_file():
                found.setdefault(folder.name, folder)
    return found


def group_of(bug_id: str) -> str:
    """``crash-onnxruntime-53e3373378`` -> ``crash-onnxruntime``."""
    return bug_id.rsplit("-", 1)[0]


def spread(bug_ids: list[str], limit: int) -> list[str]:
    """``limit`` ids taken round-robin over their groups (0: all of them)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for bug_id in sorted(bug_ids):
        groups[group_of(bug_id)].append(bug_id)
    picked: list[str] = []
    while any(groups.values()) and (limit <= 0 or len(picked) < limit):
        for name in sorted(groups):
            if groups[name] and (limit <= 0 or len(picked) < limit):
                picked.append(groups[name].pop(0))
    return picked


def copy_bug(source: Path, scratch: Path) -> Path:
    """The script, bug.json and the files the script reads, in a fresh folder."""
    target = scratch / source.name
    target.mkdir(parents=True)
    for name in (REPRO_FILE, BUG_FILE, *read_facts(source).files):
        if (source / name).is_file():
            shutil.copy2(source / name, target / name)
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("campaigns", nargs="*", type=Path,
                        default=[CAMPAIGNS_DIR / "p30", CAMPAIGNS_DIR / "p20"])
    parser.add_argument("--limit", type=int, default=40, help="bugs to recheck, spread over groups (0: all)")
    parser.add_argument("--jobs", type=int, default=2, help="scripts at once (default 2)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per script (a hang: its own limit)")
    parser.add_argument("--python", help="interpreter for every script (default: the one each library needs)")
    parser.add_argument("--library", help="only bugs whose id names this library (e.g. onnxruntime)")
    parser.add_argument("--json", type=Path, help="write the per-bug results here")
    args = parser.parse_args()

    folders = bug_folders(args.campaigns)
    if args.library:
        folders = {bug_id: path for bug_id, path in folders.items() if f"-{args.library}-" in bug_id}
    chosen = spread(list(folders), args.limit)
    scratch = Path(tempfile.mkdtemp(prefix="memo-bench-recheck-"))
    copies = {bug_id: copy_bug(folders[bug_id], scratch) for bug_id in chosen}
    print(f"- {len(chosen)} of {len(folders)} bugs ({len({group_of(b) for b in chosen})} groups) from "
          f"{', '.join(str(c) for c in args.campaigns)}, copied to {scratch}; {args.jobs} at once, "
          f"{platform.node()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}", flush=True)
    results: dict[str, RecheckResult] = {}
    started = time.monotonic()
    checked = recheck_all([copies[bug_id] for bug_id in chosen], python=args.python, timeout_s=args.timeout,
                          jobs=args.jobs)
    for done, (folder, result) in enumerate(checked, 1):
        results[folder.name] = result
        print(f"[{done:3d}/{len(chosen)}] {folder.name:50s} {result.result:10s} {result.seconds:6.1f} s  "
              f"{result.detail[:110]}", flush=True)
    wall = time.monotonic() - started
    counts = Counter(result.result for result in results.values())
    seconds = sorted(result.seconds for result in results.values())
    slowest = sorted(results, key=lambda bug_id: results[bug_id].seconds, reverse=True)[:3]
    print(f"- verdicts: {', '.join(f'{counts[name]} {name}' for name in RESULTS)} (of {len(results)})")
    print(f"- wall time: {wall:.0f} s ({args.jobs} at once); per bug: median {statistics.median(seconds):.1f} s, "
          f"max {seconds[-1]:.1f} s, sum {sum(seconds):.0f} s")
    print(f"- slowest: {', '.join(f'{b} {results[b].seconds:.0f} s' for b in slowest)}")
    per_group: dict[str, Counter[str]] = defaultdict(Counter)
    for bug_id, result in results.items():
        per_group[group_of(bug_id)][result.result] += 1
    print("- per group: " + "; ".join(f"{name} {dict(counter)}" for name, counter in sorted(per_group.items())))
    if args.json:
        args.json.write_text(json.dumps([{"id": bug_id, **results[bug_id].to_json()} for bug_id in chosen], indent=1))
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
