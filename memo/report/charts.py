"""Inline SVG line charts (no JavaScript library, no external file): coverage over time."""
from __future__ import annotations

from html import escape

WIDTH, HEIGHT = 380, 180
MARGIN_LEFT, MARGIN_BOTTOM, MARGIN_TOP, MARGIN_RIGHT = 48, 28, 22, 10


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** (len(str(int(value))) - 1)
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * magnitude:
            return step * magnitude
    return 10.0 * magnitude


def _format_time(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


def line_chart(title: str, points: list[tuple[float, float]], *, total: int | None = None) -> str:
    """An SVG step chart of ``points`` (elapsed seconds, count); ``total`` is the denominator, if known."""
    label = escape(title + (f" (of {total})" if total else ""))
    if not points:
        return (f'<svg class="chart" role="img" width="{WIDTH}" height="{HEIGHT}" aria-label="{label}">'
                f'<text x="10" y="20">{label}: no data yet</text></svg>')
    x_max = max(max(x for x, _ in points), 1.0)
    y_max = _nice_max(max(y for _, y in points))
    plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = HEIGHT - MARGIN_TOP - MARGIN_BOTTOM

    def sx(x: float) -> float:
        return MARGIN_LEFT + plot_w * x / x_max

    def sy(y: float) -> float:
        return MARGIN_TOP + plot_h * (1 - y / y_max)

    path = []
    previous_y = None
    for x, y in points:
        if previous_y is not None:
            path.append(f"L{sx(x):.1f},{sy(previous_y):.1f}")
        path.append(f"{'M' if previous_y is None else 'L'}{sx(x):.1f},{sy(y):.1f}")
        previous_y = y
    last = points[-1][1]
    percent = f" = {100 * last / total:.1f} %" if total else ""
    axis_y = MARGIN_TOP + plot_h
    return (
        f'<svg class="chart" role="img" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}"'
        f' aria-label="{label}">'
        f'<text x="{MARGIN_LEFT}" y="14" class="title">{label}: {last:g}{escape(percent)}</text>'
        f'<line x1="{MARGIN_LEFT}" y1="{axis_y}" x2="{WIDTH - MARGIN_RIGHT}" y2="{axis_y}" class="axis"/>'
        f'<line x1="{MARGIN_LEFT}" y1="{MARGIN_TOP}" x2="{MARGIN_LEFT}" y2="{axis_y}" class="axis"/>'
        f'<text x="{MARGIN_LEFT - 4}" y="{MARGIN_TOP + 4}" text-anchor="end">{y_max:g}</text>'
        f'<text x="{MARGIN_LEFT - 4}" y="{axis_y}" text-anchor="end">0</text>'
        f'<text x="{WIDTH - MARGIN_RIGHT}" y="{HEIGHT - 8}" text-anchor="end">{escape(_format_time(x_max))}</text>'
        f'<text x="{MARGIN_LEFT}" y="{HEIGHT - 8}">0</text>'
        f'<path d="{" ".join(path)}" class="line"/>'
        f'<circle cx="{sx(points[-1][0]):.1f}" cy="{sy(last):.1f}" r="3" class="dot"/></svg>')
