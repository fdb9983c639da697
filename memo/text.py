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


# A library's log prefix with the time it printed it: MXNet's "[11:46:29] ../src/operator/...", glog's
# "[2026-11-26 11:46:29.123]": a quoted output that differs on every run for nothing.
TIMESTAMP = re.compile(r"\[(?:\d{4}-\d{2}-\d{2}[ T])?\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\] ?")
# An interpreter's installation, up to its site-packages ("/work/main/.venv/lib/python3.11/site-packages/"): where
# memo's environment lives, not part of what a library's maintainer reads.
SITE_PACKAGES = re.compile(r"(?:[A-Za-z]:)?[/\\][^\s\"'(),:]*?[/\\](?:site|dist)-packages[/\\]")


def without_timestamps(text: str) -> str:
    """``text`` without bracketed log timestamps."""
    return TIMESTAMP.sub("", text)


def without_local_paths(text: str, roots: tuple[str, ...] = ()) -> str:
    """``text`` with every installation path shortened to ``site-packages/...`` and each of ``roots`` (folders of
    this machine: memo's checkout, a scratch folder) removed, so that a quoted traceback names no local folder."""
    text = SITE_PACKAGES.sub("site-packages/", text)
    for root in sorted({r.rstrip("/\\") for r in roots if len(r.rstrip("/\\")) > 1}, key=len, reverse=True):
        text = text.replace(root + "/", "").replace(root, ".")
    return text


# A list of alternatives a message announces on a line ending in ":" and then prints one a line: torch's overloads
# ("squeeze() received an invalid combination of arguments - got (tuple, dim=Tensor), but expected one of:", then
# " * (Tensor input, int dim)" lines, each perhaps followed by a deeper "didn't match because ..." line). The
# announcing line, without its "but expected one of" clause, states what went wrong; the alternatives are data.
_LIST_ITEM = re.compile(r"^\s*\* ")
_ANNOUNCING_CLAUSE = re.compile(r",?\s+but\s[^,]*$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def without_listed_alternatives(text: str) -> str:
    """``text`` with each list it announces and prints item by item (``* ...`` lines and the deeper lines under
    them) left out, and the announcing line cut to its statement: ``f() received ... - got (tuple, dim=Tensor)``."""
    lines, out, at = text.splitlines(), [], 0
    while at < len(lines):
        line = lines[at]
        following = next((later for later in lines[at + 1:] if later.strip()), "")
        at += 1
        if not (line.rstrip().endswith(":") and _LIST_ITEM.match(following)):
            out.append(line)
            continue
        out.append(_ANNOUNCING_CLAUSE.sub("", line.rstrip()[:-1]))
        while at < len(lines) and (not lines[at].strip() or _LIST_ITEM.match(lines[at])
                                   or _indent(lines[at]) > _indent(following)):
            at += 1
    return "\n".join(out)
