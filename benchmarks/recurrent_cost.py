"""What recurrent layers cost a campaign: its mutants by number of recurrent layers, and the libraries' time on each.

    .venv/bin/python benchmarks/recurrent_cost.py CAMPAIGN [CAMPAIGN ...] [--last N]

For each campaign (a name under ``campaigns/`` or a folder), over its last ``--last`` diverse mutants (all by
default): how many hold 0, 1, 2, 3 and 4 or more recurrent layers (:func:`memo.mutation.analysis.recurrent_layers`,
a Bidirectional counting two), and, for those executed, the mean stage seconds of all libraries together and of
keras-export's conversion (wall seconds inside the workers: on a loaded machine they include waiting for a
core), with each group's share of the libraries' time. A generation-only campaign (``--no-execute``) shows the
counts alone.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memo.paths import campaign_dir  # noqa: E402
from memo.model.ir import ModelIR  # noqa: E402
from memo.mutation.analysis import recurrent_layers  # noqa: E402
from memo.store import CampaignStore  # noqa: E402

GROUPS = ("0", "1", "2", "3", "4+")


def _group(count: int) -> str:
    return GROUPS[min(count, len(GROUPS) - 1)]


def _stage_seconds(result: dict, backend: str | None = None) -> float:
    entries = result.get("backends", {})
    chosen = [entries[backend]] if backend and backend in entries else [] if backend else list(entries.values())
    return sum(float(stage.get("seconds") or 0.0) for entry in chosen for stage in entry.get("stages", [])
               if backend is None or stage.get("stage") == "convert")


def table(directory: Path, last: int | None) -> list[str]:
    with CampaignStore(directory) as store:
        rows = store._rows("SELECT m.id, m.ir, e.result FROM mutants m LEFT JOIN executions e ON e.mutant_id = m.id "
                           "WHERE m.diverse = 1 AND m.iteration >= 0 ORDER BY m.id DESC" + (f" LIMIT {int(last)}" if last else ""))
    stats = {group: [0, 0, 0.0, 0.0] for group in GROUPS}  # mutants, executed, all stage s, keras-export convert s
    for row in rows:
        entry = stats[_group(recurrent_layers(ModelIR.loads(row["ir"])))]
        entry[0] += 1
        if row["result"]:
            result = json.loads(row["result"])
            entry[1] += 1
            entry[2] += _stage_seconds(result)
            entry[3] += _stage_seconds(result, "keras-export")
    total_mutants = sum(e[0] for e in stats.values()) or 1
    total_seconds = sum(e[2] for e in stats.values()) or 1.0
    lines = [f"{directory.name}: {total_mutants} diverse mutants",
             "recurrent layers | mutants | share | executed | mean stage s | mean keras-export convert s | share of stage s"]
    for group, (mutants, executed, seconds, export) in stats.items():
        mean = f"{seconds / executed:.1f}" if executed else "-"
        mean_export = f"{export / executed:.1f}" if executed else "-"
        lines.append(f"{group} | {mutants} | {mutants / total_mutants:.0%} | {executed} | {mean} | {mean_export} | "
                     f"{seconds / total_seconds:.0%}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("campaigns", nargs="+")
    parser.add_argument("--last", type=int, default=None, help="only the last N diverse mutants")
    args = parser.parse_args()
    for name in args.campaigns:
        directory = campaign_dir(name)
        print("\n".join(table(directory, args.last)), end="\n\n")
    print("command: .venv/bin/python benchmarks/recurrent_cost.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
