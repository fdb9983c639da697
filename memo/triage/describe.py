"""One-line descriptions of bugs, shared by the scripts, the report and the issue text."""
from __future__ import annotations

from typing import Any


def symptom(bug: dict[str, Any]) -> str:
    """One line saying what goes wrong."""
    kind = bug["kind"]
    if kind in ("nan", "inconsistency"):
        where = f" starting at layer `{bug['layer']}` ({bug.get('layer_class') or '?'})" if bug.get("layer") else ""
        what = "produces NaN/Inf" if kind == "nan" else f"disagrees with {bug.get('reference') or 'the reference'}"
        return f"{bug['library']} {what}{where}"
    exception = bug.get("exception") or kind
    # the last line of a multi-line message usually states the cause (MXNet, ONNX Runtime, XLA)
    lines = [line.strip() for line in (bug.get("error_message") or bug.get("message") or "").splitlines() if line.strip()]
    return f"{bug['library']} ({bug.get('stage') or '?'}): {exception}: {lines[-1] if lines else ''}".strip()
