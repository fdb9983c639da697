"""One-line descriptions of bugs, shared by the scripts, the report and the issue text."""
from __future__ import annotations

import re
from typing import Any


def symptom(bug: dict[str, Any]) -> str:
    """One line saying what goes wrong."""
    kind = bug["kind"]
    if kind in ("nan", "inconsistency"):
        where = f" starting at layer `{bug['layer']}` ({bug.get('layer_class') or '?'})" if bug.get("layer") else ""
        what = "produces NaN/Inf" if kind == "nan" else f"disagrees with {bug.get('reference') or 'the reference'}"
        return f"{bug['library']} {what}{where}"
    exception = bug.get("exception") or kind
    # the last line of a multi-line message usually states the cause (MXNet, ONNX Runtime, XLA); a printed
    # tensor after it (torch's "Tensor:" then rows of numbers) is data, not the cause
    text = _ANSI.sub("", bug.get("error_message") or bug.get("message") or "")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    stated = [line for line in lines if not _is_data(line) and not line.endswith(":")] or lines
    return f"{bug['library']} ({bug.get('stage') or '?'}): {exception}: {stated[-1] if stated else ''}".strip()


_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Keras prints the cause in bold
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _is_data(line: str) -> bool:
    """A row of a printed array or tensor: numbers, with fewer letters than the rest of the line."""
    letters = sum(ch.isalpha() for ch in _NUMBER.sub("", line))
    return len(_NUMBER.findall(line)) >= 2 and letters * 2 < len(line.replace(" ", ""))
