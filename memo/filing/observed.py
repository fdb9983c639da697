"""What an issue text quotes of a bug: the checked minimal script's own run on the reduced model, never the campaign's
run of the unreduced one (whose layer names, shapes and message belong to a model the maintainer never sees).

Quoted output is cleaned first: no terminal codes, no log timestamps (MXNet's ``[11:46:29]``), and no folder of this
machine (memo's checkout, its virtual environments up to ``site-packages/``).
"""
from __future__ import annotations

import re
from pathlib import Path

import memo
from memo.filing.check import MinimalScript, symptoms
from memo.filing.folder import BugFolder
from memo.text import (bold_parts, without_ansi, without_listed_alternatives, without_local_paths, without_timestamps,
                       without_traced_graph)
from memo.triage.describe import symptom

ERROR_LINES = 25
ACTUAL_CHARS = 300
# Where numpy's assert_allclose message stops stating the mismatch and starts printing the arrays, and where Keras
# stops stating a failing call's cause and lists its arguments.
_ARGUMENTS = "Arguments received by "
_DATA_STARTS = (" ACTUAL:", "ACTUAL:", _ARGUMENTS)
# Notes a library adds after an exception's message when the traceback is printed (not part of the message: the
# campaign's signatures never see them), which would otherwise become the quoted cause, the title and the search
# words: JAX's note on the frames it filtered out.
_TRACEBACK_NOTES = re.compile(r"(?:\n-{8,})?\nFor simplicity, JAX has removed its internal frames from the traceback "
                              r"of the following exception\. Set JAX_TRACEBACK_FILTERING=off to include these\.")


def local_roots() -> tuple[str, ...]:
    """The folders of this machine a quoted output must not name: memo's checkout (its campaigns, its venvs)."""
    return (str(Path(memo.__file__).resolve().parents[1]),)


def quoted(text: str) -> str:
    """``text`` as an issue may quote it."""
    return without_local_paths(without_timestamps(_TRACEBACK_NOTES.sub("", without_ansi(text))), local_roots())


def error_text(folder: BugFolder, checked: MinimalScript) -> str:
    """What the checked script printed from the exception it raised on (its symptom) to the end, cleaned; "" when
    no minimal script reproduced the bug."""
    if not checked.reproduces or not checked.output:
        return ""
    text = checked.output
    found = max(text.rfind(f"{word}:") for word in symptoms(folder) or ("Error",))
    start = text.rfind("\n", 0, found) + 1 if found >= 0 else 0
    return quoted(text[start:]).strip()


def error_excerpt(folder: BugFolder, checked: MinimalScript) -> list[str]:
    """:func:`error_text`'s first lines (a message may go on with data), without the values of the arguments Keras
    lists after a failing call's message (t51: a training crash's log was 20 lines of its input array)."""
    lines = error_text(folder, checked).splitlines()
    listed = next((index for index, line in enumerate(lines) if line.startswith(_ARGUMENTS)), None)
    if listed is not None:
        lines = [*lines[:listed + 1], "  (the values of the arguments left out)"]
    return lines[:ERROR_LINES] + (["..."] if len(lines) > ERROR_LINES else [])


# Lines of a message that state no cause: Keras's preamble to a failing call's cause, MXNet's back-trace and C++
# stack lines, a Python traceback's lines.
_PREAMBLE = re.compile(r"^(?:Exception encountered when calling \S+\.|Stack trace:|\[bt\]|Traceback \(most recent"
                       r"|File \"|\d+# |-+$)")


_WORDS = re.compile(r"\b[A-Za-z]{2,}\b")


def without_exception_names(text: str, exception: str) -> str:
    """``text`` without the exception's name (module-qualified or not, once or repeated) opening it:
    ``mxnet.base.MXNetError: MXNetError: Invalid ...`` -> ``Invalid ...``."""
    if not exception:
        return text.strip()
    opening = re.compile(rf"^\s*(?:[\w.]*\.)?{re.escape(exception)}:\s*")
    while (shorter := opening.sub("", text, count=1)) != text:
        text = shorter
    return text.strip()


def message_head(folder: BugFolder, checked: MinimalScript) -> str:
    """The first line of a crash's message that states something, from the checked script's run (the campaign's
    record without one): the exception's name, Keras's preamble, back-traces, the arguments Keras lists and
    torch.onnx's quoted graph left out."""
    recorded = str(folder.info.get("error_message") or folder.info.get("message") or "")
    raw = error_text(folder, checked) or recorded
    bold = bold_parts(raw)  # Keras's bold cause (the campaign's record keeps the terminal codes; quoting drops them)
    text = without_listed_alternatives(without_traced_graph(quoted(bold[-1] if bold else raw)))
    text = without_exception_names(text, folder.exception)
    lines, source_line = [], False
    for line in text.splitlines():
        line = without_exception_names(line.strip(), folder.exception)
        if line.startswith(_DATA_STARTS):
            break
        if line and not _PREAMBLE.match(line) and not source_line:
            lines.append(line)
        source_line = line.startswith('File "')  # the next line is that frame's code (TensorFlow's "in user code:")
    # a line announcing what follows (OpenVINO's "Exception from src/...cpp:132:", MXNet's "Arguments:") or a
    # value it lists ("predictions: (2, 10)") states nothing
    lines = [kept for kept in (_REPORT_REQUEST.sub("", line).strip() for line in lines) if kept]
    stated = [line for line in lines if not line.endswith(":") and len(_WORDS.findall(line)) >= 3]
    return (stated or lines or [""])[0]


# A library's request that its own tracker hear of the error (torch.onnx's "Please send a bug report at
# https://github.com/pytorch/pytorch/issues."): no part of what failed, and the issue says which tracker it is for
_REPORT_REQUEST = re.compile(r"\s*Please (?:send|file|open|submit|report)\b(?:[^.]|\.(?=\S))*?\b(?:bug|issue)s?\b"
                             r"(?:[^.]|\.(?=\S))*\.?", re.IGNORECASE)


def whole_words(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word's end ("..." where cut)."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 3].rsplit(" ", 1)[0].rstrip(" ,;:(")
    return cut + "..."


def actual(folder: BugFolder, checked: MinimalScript) -> str:
    """One line of what the library did on the reduced model, from the checked script's run: for a crash the
    exception and its message's first line that states something (the traceback stays in the log), for a numeric
    bug the mismatch as the script's assertion states it (its arrays left out). Without a reproducing minimal
    script: the campaign's record, saying so."""
    if not folder.numeric and not (folder.converter_blamed and checked.reproduces):  # a converter's: an assertion
        head = message_head(folder, checked)
        if any(mark in head for mark in ("%", "::")):  # a quoted graph node: the sentence around it, without it
            head = stated_message(folder, checked) or head
        said = f"{folder.exception}: {head}" if folder.exception and head else head or folder.exception
        unreduced = "" if error_text(folder, checked) else (" (as the campaign recorded it on the unreduced model: "
                                                            "no minimal script reproduces it)")
        return whole_words(said, ACTUAL_CHARS) + unreduced if said else ""
    lines: list[str] = []
    for line in error_text(folder, checked).splitlines():
        if line.startswith(_DATA_STARTS):
            break
        if line.strip():
            lines.append(line.strip())
    text = " ".join(lines)
    if not text:
        recorded = quoted(str(folder.info.get("message") or folder.info.get("error_message") or ""))
        return f"{' '.join(recorded.split())} (as the campaign recorded it on the unreduced model: no minimal " \
               f"script reproduces it)" if recorded else ""
    return whole_words(text, ACTUAL_CHARS)


def stated_message(folder: BugFolder, checked: MinimalScript) -> str:
    """A crash's cause as stated by the checked run (the last stated line, as :func:`symptom` picks it), without
    its ``Exception:`` prefix; the campaign's message where no minimal script reproduces."""
    raw = error_text(folder, checked)
    exception = folder.exception
    raw = without_exception_names(raw, exception) if raw else raw
    info = {**folder.info, "error_message": raw, "message": raw} if raw else dict(folder.info)
    text = quoted(symptom(info))
    cause = text.split(f"{exception}: ", 1)[-1] if exception and f"{exception}: " in text else text.split(": ", 1)[-1]
    return _REPORT_REQUEST.sub("", without_exception_names(cause, exception)).strip()
