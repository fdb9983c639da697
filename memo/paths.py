"""Where a campaign's folders are, relative to where memo runs: ``campaigns/NAME`` (its database, bug folders
and triage's scratch folder) and ``mutants/NAME`` (its executed artifacts).

Below every package that names a campaign (the commands, the campaign, the report), so that the report finds
a campaign without importing the campaign package.
"""
from __future__ import annotations

from pathlib import Path

CAMPAIGNS_DIR = Path("campaigns")
MUTANTS_DIR = Path("mutants")


def campaign_dir(name_or_path: str) -> Path:
    """A campaign named ``name`` lives in ``campaigns/name``; a path is taken as it is."""
    path = Path(name_or_path)
    if path.is_dir() or path.is_absolute() or len(path.parts) > 1:
        return path
    return CAMPAIGNS_DIR / name_or_path
