"""Minimal scripts over every bug folder of some campaigns: how many reproduce, and their length.

    python benchmarks/minimal_scripts.py campaigns/p20 campaigns/p30 [--json OUT]

Each folder's script is generated and checked in a fresh process (memo.filing), and kept in the folder's
``minimal/``: run it on copies of campaigns you want left as they are.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from memo.filing import minimal_script


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("campaigns", nargs="+", type=Path)
    parser.add_argument("--json", type=Path, help="write one row per bug here")
    parser.add_argument("--refresh-failed", action="store_true", help="check again the scripts kept as not reproducing")
    args = parser.parse_args()
    rows = []
    for folder in sorted(path for campaign in args.campaigns for path in (campaign / "bugs").iterdir()
                         if (path / "bug.json").is_file()):
        started = time.monotonic()
        result = minimal_script(folder)
        if args.refresh_failed and not result.reproduces:
            result = minimal_script(folder, refresh=True)
        rows.append({"bug": folder.name, "reproduces": result.reproduces, "lines": result.lines,
                     "source": result.source, "reason": result.reason, "seconds": round(time.monotonic() - started, 1)})
        print(f"{folder.name}: {'reproduces' if result.reproduces else 'no'} {result.lines} lines "
              f"{result.reason}", flush=True)
    shown = [row["lines"] for row in rows if row["reproduces"]]
    median = statistics.median(shown) if shown else 0
    print(f"{len(rows)} bugs; {len(shown)} minimal scripts reproduce; median {median} lines "
          f"(max {max(shown, default=0)})")
    print("reproducing scripts by where the model, weights and inputs come from:",
          dict(Counter(row["source"] for row in rows if row["reproduces"])))
    kinds = Counter(row["bug"].rsplit("-", 1)[0] for row in rows if row["reproduces"])
    print("reproduce by kind and library:", dict(kinds))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
