"""One-line descriptions of bugs, shared by the scripts, the report and the issue text."""
from __future__ import annotations

import re
from typing import Any

from memo.text import TRACED_GRAPH_TAIL, bold_parts, without_ansi, without_listed_alternatives


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
    bold = bold_parts(raw)
    text = without_listed_alternatives(without_ansi(bold[-1] if bold else raw))
    for context in (TRACED_GRAPH_TAIL.search(text), _TORCH_TENSOR.search(text)):
        if context and text[:context.start()].strip():
            text = text[:context.start()]
    lines = [line.strip().lstrip(") ") for line in text.splitlines()
             if line.strip() and not _is_argument(line.strip())]
    stated = [line for line in lines if not _is_data(line) and not line.endswith(":")] or lines
    cause = full_clause(stated[-1], text) if stated else ""
    return f"{bug['library']} ({bug.get('stage') or '?'}): {exception}: {cause}".strip()


# Words that open the second half of a sentence: a line starting with one continues a sentence a line break (in the
# middle of a quoted graph or tensor) split, and alone reads "because it is not constant".
_CONTINUATIONS = frozenset({"because", "since", "and", "or", "but", "which", "so", "when", "while", "unless", "due",
                            "whereas", "hence", "thus", "though", "although", "then", "where"})
# A quoted or parenthesised span holding code (a graph node, a tensor, a path): not words a clause needs.
_CODE_MARKS = ("%", "=", "::", "/", "[", "]")
_QUOTED = re.compile(r"\s*'[^']*'|\s*\"[^\"]*\"")
_PARENTHESISED = re.compile(r"\s*\([^()]*\)")


def _without_code(text: str) -> str:
    """``text`` without the quoted and parenthesised spans that hold code (innermost parentheses first)."""
    def drop(match: re.Match[str]) -> str:
        return "" if any(mark in match.group(0) for mark in _CODE_MARKS) else match.group(0)

    text = _QUOTED.sub(drop, text)
    while (shorter := _PARENTHESISED.sub(drop, text)) != text:
        text = shorter
    return " ".join(text.split())


def full_clause(line: str, message: str) -> str:
    """``line`` itself, or, where it continues a sentence (it opens with "because", "and", ...), the sentence of
    ``message`` it ends, without the code the sentence quotes ("Failed to export a node because it is not
    constant."); the message's first sentence where ``line`` is not found in it."""
    words = line.split()
    if not words or words[0].lower() not in _CONTINUATIONS:
        return line
    flat, fragment = " ".join(message.split()), " ".join(words)
    at = flat.find(fragment)
    if at < 0:
        first = flat.split(". ", 1)[0]
        return _without_code(first) or line
    start = flat.rfind(". ", 0, at)
    sentence = _without_code(flat[start + 2 if start >= 0 else 0:at + len(fragment)])
    return sentence if len(sentence.split()) > len(words) else line


_TORCH_TENSOR = re.compile(r"^Tensor:$", re.MULTILINE)  # torch.jit, after its complaint: the tensor's rows
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _is_data(line: str) -> bool:
    """A row of a printed array or tensor: numbers, with fewer letters than the rest of the line."""
    letters = sum(ch.isalpha() for ch in _NUMBER.sub("", line))
    return len(_NUMBER.findall(line)) >= 2 and letters * 2 < len(line.replace(" ", ""))


def _is_argument(line: str) -> bool:
    """A line of Keras's "Arguments received by X.call():" list."""
    return line.startswith("•") or line.startswith("Arguments received by ")
