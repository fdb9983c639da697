"""Library code coverage as the report, ``memo coverage --library`` and ``memo run --library-coverage`` show it.

Read from the store's library tables (:mod:`memo.store.library`): per library the lines reached of its executable
statements, the seeds' own share (the seeds run once first: their lines are the baseline), the modules where
mutants reached the most new lines, and one curve per library (lines reached over the campaign's time).
"""
from __future__ import annotations

from typing import Mapping

from memo.json_types import JsonObject
from memo.library_coverage.merge import LibraryFigures, percent
from memo.store import CampaignStore

CURVE_POINTS = 200  # points per curve at most (a line per point would make a long campaign's report heavy)
TOP_MODULES = 10


def _curves(store: CampaignStore, started: float | None) -> dict[str, list[tuple[float, float]]]:
    """Per library, (seconds since the campaign started, lines reached so far), thinned to :data:`CURVE_POINTS`."""
    points: dict[str, list[tuple[float, float]]] = {}
    origin = started
    for library, created in store.library.first_reached():
        origin = created if origin is None else origin
        series = points.setdefault(library, [])
        series.append((max(0.0, created - origin), float(len(series) + 1)))
    for library, series in points.items():
        step = -(-len(series) // CURVE_POINTS)  # at least 1: a series is never empty
        keep = series[step - 1::step]
        points[library] = keep if keep[-1] == series[-1] else [*keep, series[-1]]
    return points


def library_data(store: CampaignStore) -> JsonObject | None:
    """``figures`` ({library: {"covered", "total"}}), ``rows`` (with the seeds' lines and the percentage),
    ``top_modules`` and ``curves``; None for a campaign run without ``--library-coverage``."""
    counts = store.library.counts()
    if not counts:
        return None
    figures = {c.library: LibraryFigures(covered=c.covered, total=c.total) for c in counts}
    rows = [{"library": c.library, "covered": c.covered, "total": c.total, "percent": percent(figures[c.library]),
             "seeds": c.by_seeds, "beyond_seeds": c.covered - c.by_seeds} for c in counts]
    top = [{"library": m.library, "file": m.file, "new_lines": m.new_lines}
           for m in store.library.top_modules(TOP_MODULES)]
    config = store.get_meta("config", {}) or {}
    every = int(config.get("library_every", 1) or 1)  # campaigns before sampling traced every model
    return {"figures": figures, "rows": rows, "top_modules": top, "curves": _curves(store, store.get_meta("started")),
            "traced_every": every}


def _aligned(rows: list[list[str]], left: int = 1) -> str:
    """Columns padded to their widest cell: the first ``left`` ones flush left, the figures flush right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) if i < left else cell.rjust(w) for i, (cell, w) in
                               enumerate(zip(row, widths))).rstrip() for row in rows)


def library_table(figures: Mapping[str, LibraryFigures], seeds: Mapping[str, int] | None = None) -> str:
    """A plain-text table: library, lines covered, total, per cent (and, with ``seeds``, the seeds' lines and
    those beyond them)."""
    header = ["library", "covered", "total", "%"] + (["seeds", "beyond seeds"] if seeds is not None else [])
    rows = [header]
    for name, item in figures.items():
        row = [name, str(item["covered"]), str(item["total"]), f"{percent(item):.1f}"]
        if seeds is not None:
            row += [str(seeds.get(name, 0)), str(item["covered"] - seeds.get(name, 0))]
        rows.append(row)
    return _aligned(rows)


def library_text(data: JsonObject) -> str:
    """What ``memo coverage --library`` prints: the table, then the modules with the most new lines."""
    seeds = {row["library"]: row["seeds"] for row in data["rows"]}
    lines = ["library code coverage (lines of each library's Python code; seeds: reached by the seeds' own runs)",
             library_table(data["figures"], seeds)]
    if data["top_modules"]:
        lines += ["", "modules with the most lines reached beyond the seeds:",
                  _aligned([["library", "module", "new lines"]]
                           + [[m["library"], m["file"], str(m["new_lines"])] for m in data["top_modules"]], left=2)]
    return "\n".join(lines)
