"""The HTML report: one self-contained file (inline CSS, JS and SVG), rendered by jinja2 with autoescaping,
so any text that comes from a library (messages, tracebacks, layer names) is HTML-escaped."""
from __future__ import annotations

import time
from typing import Any

import jinja2

from memo.diskspace import format_size
from memo.json_types import JsonObject
from memo.report.charts import line_chart
from memo.triage.describe import symptom

TEMPLATE = "report.html.j2"


def _when(seconds: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds)) + " UTC" if seconds else "-"


def _yesno(value: bool | None) -> str:
    return "not checked" if value is None else ("yes" if value else "no")


def _shape(value: Any) -> str:
    if value is None:
        return "-"
    return "(" + ", ".join("None" if d is None else str(d) for d in value) + ")"


def _num(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return _shape(value)
    return "-" if value is None else str(value)


def _duration(seconds: float) -> str:
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours} h {minutes:02d} min {secs:02d} s" if hours else f"{minutes} min {secs:02d} s"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("memo.report", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True)
    env.filters.update(when=_when, yesno=_yesno, shape=_shape, num=_num, symptom=symptom, size=format_size)
    return env


def render_html(data: JsonObject) -> str:
    charts = [line_chart(series["title"], series["points"], total=series["total"]) for series in data["coverage"]]
    library = data.get("library")
    library_charts = [line_chart(f"{name} lines", points, total=library["figures"][name]["total"])
                      for name, points in library["curves"].items()] if library else []
    kinds = sorted({bug["kind"] for bug in data["bugs"]})
    return environment().get_template(TEMPLATE).render(
        s=data["summary"], generated=_when(data["generated"]), memo_version=data["memo_version"],
        duration=_duration(data["summary"]["duration_s"]), charts=charts, coverage=data["coverage"],
        bugs=data["bugs"], kinds=kinds,
        unsupported=data["unsupported"], verdict_counts=data["verdict_counts"], engines=data["engines"],
        generation=data.get("generation"),
        triage=data["triage"], left=data["triage_left"], sections=data.get("sections") or [],
        awaiting_localization=data["awaiting_localization"], unconfirmed=data["unconfirmed"], special=data["special"],
        training=data.get("training") or [], training_optimizers=data.get("training_optimizers") or [],
        training_coverage=data.get("training_coverage") or {},
        triage_errors=data["triage_errors"], known=data.get("known") or {"database": None},
        newest=data.get("newest") or {"python": None},
        library=library, library_charts=library_charts)
