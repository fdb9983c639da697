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
    # tensor after it (torch's "Tensor:" then rows of numbers) is data, not the cause. Keras prints the cause
    # of a failing layer call in bold, between "Exception encountered when calling X.call()." and the list of
    # the call's arguments ("• training=False" is no headline). torch's exporter states the cause first, then
    # the value it concerns ("[Caused by the value ..." and the graph around it, or "Tensor:" and its rows).
    raw = bug.get("error_message") or bug.get("message") or ""
    bold = [part for part in _BOLD.findall(raw) if part.strip()]
    text = _ANSI.sub("", bold[-1] if bold else raw)
    for context in (TORCH_CAUSED_BY.search(text), _TORCH_TENSOR.search(text)):
        if context and text[:context.start()].strip():
            text = text[:context.start()]
    lines = [line.strip().lstrip(") ") for line in text.splitlines()
             if line.strip() and not _is_argument(line.strip())]
    stated = [line for line in lines if not _is_data(line) and not line.endswith(":")] or lines
    return f"{bug['library']} ({bug.get('stage') or '?'}): {exception}: {stated[-1] if stated else ''}".strip()


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_BOLD = re.compile(r"\x1b\[1m(.*?)\x1b\[0m", re.DOTALL)
# torch.onnx's exporter, after its complaint: the traced graph around the value it concerns
TORCH_CAUSED_BY = re.compile(r"\s*\[Caused by the value .*$", re.DOTALL)
_TORCH_TENSOR = re.compile(r"^Tensor:$", re.MULTILINE)  # torch.jit, after its complaint: the tensor's rows
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _is_data(line: str) -> bool:
    """A row of a printed array or tensor: numbers, with fewer letters than the rest of the line."""
    letters = sum(ch.isalpha() for ch in _NUMBER.sub("", line))
    return len(_NUMBER.findall(line)) >= 2 and letters * 2 < len(line.replace(" ", ""))


def _is_argument(line: str) -> bool:
    """A line of Keras's "Arguments received by X.call():" list."""
    return line.startswith("•") or line.startswith("Arguments received by ")
