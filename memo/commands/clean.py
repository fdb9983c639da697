"""``memo clean NAME``: delete a campaign's regenerable artifacts, keep its database and bug folders.

Every executed model can be rebuilt from the mutant's IR in the database and the campaign seed, so
``mutants/NAME/`` and triage's scratch folder are safe to delete; ``campaigns/NAME/campaign.sqlite``
(mutants, findings, coverage, resume state) and ``campaigns/NAME/bugs/`` (minimal models, scripts) are not.
"""
from __future__ import annotations

import argparse
import shutil

from memo.diskspace import format_size, tree_bytes

# The handlers below import the rest of memo when they run: the CLI imports every command module to
# build its parser, and `memo --help` must not pay for the campaign, triage, Keras or rich.


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("clean", help="delete a campaign's regenerable artifacts (mutants/NAME)",
                              description="Delete the campaign's executed-model artifacts under mutants/NAME and "
                                          "triage's scratch folder; the database and the bug folders stay. "
                                          "Run it on a stopped campaign.")
    p.add_argument("campaign", metavar="NAME", help="campaign name (under ./campaigns/) or directory")
    p.add_argument("--dry-run", action="store_true", help="only say what would be deleted and how much it frees")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memo.paths import campaign_dir
    from memo.campaign.disk import regenerable_paths
    from memo.store import CampaignStore

    with CampaignStore(campaign_dir(args.campaign)) as store:
        paths = regenerable_paths(store)
        sizes = {path: tree_bytes(path) for path in paths}
        where = ", ".join(str(path) for path in paths) or "nothing to delete"
        total = format_size(sum(sizes.values()))
        if args.dry_run:
            print(f"memo clean: would free {total} ({where})")
            return 0
        for path in paths:
            shutil.rmtree(path, ignore_errors=True)
        forgotten = store.clear_artifact_dirs()
    print(f"memo clean: freed {total} ({where}; {forgotten} artifact records cleared)")
    return 0
