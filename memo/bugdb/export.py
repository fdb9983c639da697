"""The bug list as a table (like NNSmith's): id, library, kind, headline, status, link, first seen."""
from __future__ import annotations

import json
import time
from typing import Callable, Sequence

from memo.bugdb.records import KnownBug

COLUMNS = ("id", "library", "kind", "headline", "status", "link", "first seen")


def _when(seconds: float | None) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(seconds)) if seconds else "-"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def as_markdown(bugs: Sequence[KnownBug]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for bug in bugs:
        first = bug.first
        status = bug.status_text() if bug.status != "filed" else "filed" + (" (regression)" if bug.regression else "")
        seen = f"{_when(first.first_seen)} ({first.campaign_name})" if first else "-"
        lines.append("| " + " | ".join(_cell(value) for value in (
            bug.id, bug.library, bug.kind, bug.headline, status, bug.link, seen)) + " |")
    return "\n".join(lines) + "\n"


def as_json(bugs: Sequence[KnownBug]) -> str:
    return json.dumps([bug.to_json() for bug in bugs], indent=1, sort_keys=True) + "\n"


FORMATS: dict[str, Callable[[Sequence[KnownBug]], str]] = {"markdown": as_markdown, "json": as_json}
