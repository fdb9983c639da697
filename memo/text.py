"""Cleaning a library's message: what it prints for a terminal or quotes as context rather than says.

One place for the patterns that bug signatures (:mod:`memo.triage.signature`), one-line descriptions
(:mod:`memo.triage.describe`) and known outcomes (:mod:`memo.campaign.known`) all need. Stdlib only: it
sits below every package of memo.
"""
from __future__ import annotations

import re

# Terminal colours and weights (Keras prints the cause of a failing layer call in bold).
ANSI_CODE = re.compile(r"\x1b\[[0-9;]*m")
_BOLD = re.compile(r"\x1b\[1m(.*?)\x1b\[0m", re.DOTALL)
# torch.onnx's export errors end by quoting the traced graph around the value they concern
# ("msg  [Caused by the value 'kernel.23 defined in (%kernel.23 : Float(*, 4, 13...) = onnx::Transpose...]"):
# which value, its shape and scope vary from model to model for one failure; the message before it states it.
TRACED_GRAPH_TAIL = re.compile(r"\s*\[Caused by the value .*$", re.DOTALL)


def without_ansi(text: str) -> str:
    """``text`` without terminal colour codes."""
    return ANSI_CODE.sub("", text)


def bold_parts(text: str) -> list[str]:
    """The non-blank parts of ``text`` printed in bold, in order."""
    return [part for part in _BOLD.findall(text) if part.strip()]


def without_traced_graph(text: str) -> str:
    """``text`` without torch.onnx's quoted graph tail (and the blanks before it)."""
    return TRACED_GRAPH_TAIL.sub("", text)
