"""An exception message as a repro script compares it: the same wherever the script runs from.

A script's crash check compares the message its run raises with the one memo recorded, both normalized as
the bug signature normalizes messages (:func:`memo.triage.masks.normalize_message`). That mask knows
absolute paths, but a message may quote the script's own file as Python named it (TensorFlow's "in user
code: File "bugs/ID//repro.py", line 12": a relative path, a doubled slash) or its folder under a name with
spaces: then the answer depended on where the script was run from. Here every traceback frame's file, and
every spelling of the script's own folder, is masked first. Inlined verbatim into the scripts
(:mod:`memo.triage.inline`), so it imports nothing but the stdlib and memo modules that inline too.
"""
from __future__ import annotations

import os
import re
from typing import Sequence

from memo.triage.masks import normalize_message

# the file of a traceback frame as Python and TensorFlow print it: File "any/path.py", line 3
_FRAME_FILE = re.compile(r'File "[^"\n]*"')
# what a script's own folder becomes: an absolute path of two parts, which normalize_message masks as any other
FOLDER_STAND_IN = "/repro/folder"


def comparable_message(message: str | None, folders: Sequence[str] = ()) -> str:
    """``message`` normalized as a bug signature normalizes it, after masking every traceback frame's file and
    each of ``folders`` (the script's own folder, as spelled in this run) that it mentions."""
    text = message or ""
    # only absolute spellings: a relative one ("bugs", ".") would also match words of the message
    wanted = {f.rstrip("/\\") for f in folders if os.path.isabs(f) and len(f.rstrip("/\\")) > 1}
    for folder in sorted(wanted, key=len, reverse=True):
        text = text.replace(folder, FOLDER_STAND_IN)
    return normalize_message(_FRAME_FILE.sub('File "PATH"', text))
