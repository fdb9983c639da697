"""The campaign report: HTML (self-contained, offline), JSON and Markdown renderings of one data structure."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from memo.errors import UsageError
from memo.report.data import collect
from memo.report.html import render_html
from memo.report.markdown import report_markdown
from memo.store import CampaignStore
from memo.triage.remember import database_path

REPORTS_DIR = Path("reports")


def _render_json(data: dict) -> str:
    return json.dumps(data, indent=1, sort_keys=True, default=str)


FORMATS: dict[str, tuple[str, Callable[[dict], str]]] = {
    "html": (".html", render_html), "json": (".json", _render_json), "markdown": (".md", report_markdown)}


def default_report_path(campaign_name: str, fmt: str = "html") -> Path:
    return REPORTS_DIR / f"{campaign_name}{FORMATS[fmt][0]}"


def write_report(campaign_dir: Path, out: Path | None = None, fmt: str = "html", bugs_db: Path | None = None) -> Path:
    """Write the report of the campaign in ``campaign_dir`` (``reports/<name>.<ext>`` by default).

    Safe while the campaign runs: it reads a consistent snapshot (SQLite WAL) and only refreshes the
    deduplication tables, which needs no execution. ``bugs_db``: the bug database that says which bugs are known
    (default: the one the campaign was started with, if any).
    """
    if fmt not in FORMATS:
        raise UsageError(f"unknown report format {fmt!r} (choose from {', '.join(FORMATS)})")
    with CampaignStore(Path(campaign_dir)) as store:
        data = collect(store, database_path(store, bugs_db))
    out = Path(out) if out is not None else default_report_path(data["summary"]["campaign"], fmt)
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(out.name + ".tmp")
    temporary.write_text(FORMATS[fmt][1](data), encoding="utf-8")
    temporary.replace(out)  # a browser reloading the report never sees half a file
    return out


__all__ = ["FORMATS", "REPORTS_DIR", "default_report_path", "write_report"]
