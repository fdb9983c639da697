"""Which trainable weights a training bug's model assigns in its training-mode call (bug.json's
:data:`ASSIGNED_IN_CALL`), for a folder made before the worker recorded it (:mod:`memo.backends.assigned_weights`,
a child process). The issue text says it (:func:`memo.filing.issue.assigned_text`)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from memo.bug_files import INPUTS_FILE, MODEL_FILE, read_bug_file, write_bug_file

ASSIGNED_IN_CALL = "assigned_in_call"
KINDS = frozenset({"training-nan", "training-inconsistency"})
STAGES = frozenset({"gradients", "forward", "loss", "state"})  # those the forward pass's assignment reaches


def probe_assigned(folder: Path, timeout_s: float = 120.0) -> list[str] | None:
    """The trainable weights the folder's model assigns in a training-mode call, asked once of a child process
    (:mod:`memo.backends.assigned_weights`) where bug.json does not say, and kept there; None: not a training
    bug's gradient finding, or the child failed."""
    info = read_bug_file(folder)
    if ASSIGNED_IN_CALL in info:
        return list(info[ASSIGNED_IN_CALL])
    if info.get("kind") not in KINDS or info.get("stage") not in STAGES \
            or not (folder / MODEL_FILE).is_file() or not (folder / INPUTS_FILE).is_file():
        return None
    with tempfile.TemporaryDirectory(prefix="memo-assigned-") as scratch:
        out = Path(scratch) / "assigned.json"
        try:
            done = subprocess.run([sys.executable, "-m", "memo.backends.assigned_weights", str(folder / MODEL_FILE),
                                   str(folder / INPUTS_FILE), str(out)], capture_output=True, text=True,
                                  timeout=timeout_s, check=False, env={**os.environ, "KERAS_BACKEND": "tensorflow"})
            if done.returncode != 0 or not out.exists():
                return None
            names = [str(name) for name in json.loads(out.read_text())]
        except (subprocess.TimeoutExpired, OSError, ValueError):
            return None
    write_bug_file(folder, {**info, ASSIGNED_IN_CALL: names})
    return names


__all__ = ["ASSIGNED_IN_CALL", "probe_assigned"]
