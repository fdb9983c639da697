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
from memo.text import without_ansi, without_local_paths, without_timestamps
from memo.triage.describe import symptom

ERROR_LINES = 25
ACTUAL_CHARS = 300
# Where numpy's assert_allclose message stops stating the mismatch and starts printing the arrays, and where Keras
# stops stating a failing call's cause and lists its arguments.
_DATA_STARTS = (" ACTUAL:", "ACTUAL:", "Arguments received by ")
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
    """:func:`error_text`'s first lines (a message may go on with data)."""
    lines = error_text(folder, checked).splitlines()
    return lines[:ERROR_LINES] + (["..."] if len(lines) > ERROR_LINES else [])


def actual(folder: BugFolder, checked: MinimalScript) -> str:
    """One line of what the library did on the reduced model, from the checked script's run: the exception and its
    stated cause, or the numeric mismatch as the script's assertion states it (its arrays left out). Without a
    reproducing minimal script: the campaign's record, saying so."""
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
    return text if len(text) <= ACTUAL_CHARS else text[:ACTUAL_CHARS - 3].rstrip() + "..."


def stated_message(folder: BugFolder, checked: MinimalScript) -> str:
    """A crash's cause as stated by the checked run (the last stated line, as :func:`symptom` picks it), without
    its ``Exception:`` prefix; the campaign's message where no minimal script reproduces."""
    raw = error_text(folder, checked)
    exception = folder.exception
    if raw and exception and raw.startswith(f"{exception}:"):
        raw = raw[len(exception) + 1:].lstrip()
    info = {**folder.info, "error_message": raw, "message": raw} if raw else dict(folder.info)
    text = quoted(symptom(info))
    return text.split(f"{exception}: ", 1)[-1] if exception and f"{exception}: " in text else text.split(": ", 1)[-1]
