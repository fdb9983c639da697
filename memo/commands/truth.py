"""``memo truth BUG``: recompute a numeric bug's float64 truth on its reduced model and print each library's error."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from memo.errors import UsageError
from memo.json_types import JsonObject


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("truth", help="recompute a numeric bug's float64 truth: which library is wrong",
                              description="Run the bug's reduced model on the libraries it involves and in float64 "
                                          "(Keras on torch, weights and inputs widened), print every library's "
                                          "error against float64 and the verdict, and record it in bug.json.")
    p.add_argument("bug", metavar="BUG", help="bug id (looked up in campaigns/*/bugs/) or a bug folder")
    p.add_argument("--campaign", help="campaign name or directory to look the bug up in")
    p.add_argument("--json", action="store_true", help="print the truth as one JSON object")
    p.set_defaults(func=run)


def truth_of_bug(folder: Path, budget_s: float = 600.0) -> JsonObject:
    """Recompute the truth of the bug in ``folder`` (a campaign's bug folder); the keys written to bug.json."""
    from memo.store import DB_NAME, CampaignStore
    from memo.triage.reassess import reassess_folder
    from memo.triage.session import Session

    campaign = folder.resolve().parent.parent
    if not (campaign / DB_NAME).exists():
        raise UsageError(f"{folder} is not inside a campaign (no {DB_NAME} in {campaign})")
    with CampaignStore(campaign) as store:
        bug = store.triage.load_bug(folder.name)
        if bug is None:
            raise UsageError(f"no bug {folder.name!r} in campaign {campaign}")
        if bug.kind not in ("nan", "inconsistency"):
            raise UsageError(f"bug {bug.id} is a {bug.kind}: the float64 truth judges NaN/Inf and inconsistency bugs")
        session = Session(store, None, budget_s)
        session.needed = set(session.roles(_finding(store, bug)).backends)
        try:
            return reassess_folder(session, bug)
        finally:
            session.close()


def _finding(store: Any, bug: Any) -> Any:
    from memo.triage.finding import load_finding

    finding = load_finding(store, bug.first_verdict)
    if finding is None:
        raise UsageError(f"bug {bug.id}: its finding is not stored")
    return finding


def run(args: argparse.Namespace) -> int:
    from memo.commands.repro import find_bug_folder

    folder = find_bug_folder(args.bug, args.campaign)
    added = truth_of_bug(folder)
    truth = added.get("truth")
    if args.json:
        print(json.dumps(added, indent=1))
    elif truth is None:
        print(f"memo truth: {folder.name}: no verdict (the reduced model did not run on the reference)")
    else:
        print(f"memo truth: {folder.name}: {truth['decision']}: {truth['reason']}")
        for name, error in truth["errors"].items():
            side = "accused" if name in truth["accused"] else "witness" if name in truth["witnesses"] else ""
            print(f"  {name:28} {error if isinstance(error, str) else format(error, '.3g'):>10}  {side}")
        opinion = added.get("onnx_reference")
        if opinion:
            print(f"  ONNX reference on the same file: {opinion['decision']}: {opinion['reason']}")
    return 0 if truth is not None else 2
