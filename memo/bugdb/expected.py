"""A numeric bug's expected output (the reference library's ``expected.npz``) in the bug database, within the per-bug
cap, so that ``memo bugs recheck`` can still judge the bug.

Kept in one of three ways (``bugs.expected``): ``stored`` (the file as the bug folder has it), ``compressed`` (the
same arrays rewritten with ``np.savez_compressed``, which ``np.load`` reads the same way: the repro script needs no
change) or ``digest`` (too big even so: a SHA-256 of every array, its shape and dtype). A ``digest`` bug's recheck
first reruns the reference library on the stored model and inputs to write ``expected.npz`` again: the digest says
whether the rerun gave exactly the recorded arrays; where it does not (another release of the reference), the
rerun is the truth the recheck judges by, and it says so.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Mapping

import numpy as np

from memo.backends import find_spec
from memo.json_types import JsonObject

EXPECTED_FILE = "expected.npz"
DIGEST_FILE = "expected.digest.json"
STORED, COMPRESSED, DIGEST = "stored", "compressed", "digest"
RERUN_TIMEOUT_S = 300.0
AS_RECORDED = "expected output as recorded"  # the usual case: the recheck's one line does not repeat it
DEFAULT_REFERENCE = "keras-tensorflow"

# The reference's run, as memo's Keras worker runs a model (memo.backends.keras_common._run), in a fresh process
# of the reference's interpreter: argv = input names, in the model's order. Prints nothing on success.
_RERUN = """
import sys
import numpy as np
import keras
model = keras.saving.load_model("model.keras", compile=False, safe_mode=True)
with np.load("inputs.npz", allow_pickle=False) as data:
    names = sys.argv[1:] or list(data.files)
    arrays = [data[name] for name in names]
outputs = model(arrays, training=False)
if isinstance(outputs, dict):
    outputs = list(outputs.values())
elif not isinstance(outputs, (list, tuple)):
    outputs = [outputs]
np.savez_compressed("expected.npz", **{"out_%d" % i: keras.ops.convert_to_numpy(out) for i, out in enumerate(outputs)})
"""


def compressed(data: bytes) -> bytes:
    """The arrays of the ``.npz`` ``data`` rewritten with ``np.savez_compressed`` (same names, same values)."""
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        content = {name: arrays[name] for name in arrays.files}
    out = io.BytesIO()
    np.savez_compressed(out, **content)
    return out.getvalue()


def digest(data: bytes) -> JsonObject:
    """``{array name: {sha256, shape, dtype}}`` of the ``.npz`` ``data``: what a rerun's arrays are checked against."""
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        return {name: {"sha256": hashlib.sha256(np.ascontiguousarray(arrays[name]).tobytes()).hexdigest(),
                       "shape": list(arrays[name].shape), "dtype": str(arrays[name].dtype)}
                for name in arrays.files}


def fit(data: bytes, room: int) -> tuple[str, str, bytes]:
    """``(how, file name, bytes)`` for an ``expected.npz`` of ``data`` with ``room`` bytes left in the bug's cap:
    as is, compressed, or its digest (always small)."""
    if len(data) <= room:
        return STORED, EXPECTED_FILE, data
    try:
        smaller = compressed(data)
        if len(smaller) <= room:
            return COMPRESSED, EXPECTED_FILE, smaller
        summary = digest(data)
    except (OSError, ValueError, zipfile.BadZipFile) as exc:  # not a readable npz: nothing to rerun against
        summary = {"unreadable": str(exc)}
    return DIGEST, DIGEST_FILE, json.dumps({"arrays": summary}, indent=1, sort_keys=True).encode()


def kept_as(files: Mapping[str, bytes]) -> str:
    """How a bug's stored files keep its expected output ("" when it has none: a crash, a hang)."""
    if DIGEST_FILE in files and EXPECTED_FILE not in files:
        return DIGEST
    if EXPECTED_FILE not in files:
        return ""
    try:
        with zipfile.ZipFile(io.BytesIO(files[EXPECTED_FILE])) as archive:
            deflated = any(info.compress_type != zipfile.ZIP_STORED for info in archive.infolist())
    except zipfile.BadZipFile:
        return STORED
    return COMPRESSED if deflated else STORED


def _input_names(folder: Path) -> list[str]:
    """The model's input names in order, from its ``ir.json`` (none: the order ``inputs.npz`` keeps)."""
    try:
        layers = json.loads((folder / "ir.json").read_text())["layers"]
        return [str(layer["name"]) for layer in layers if layer.get("class_name") == "InputLayer"]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def restore(folder: Path, *, timeout_s: float = RERUN_TIMEOUT_S) -> str:
    """Make ``folder/expected.npz`` exist before its script runs; returns what was done, in words, for the recheck's
    line: "" when the folder has no digest to restore from (stored or compressed: the file is there, or the bug has
    none); raises RuntimeError when the reference could not rerun."""
    folder = Path(folder)
    if (folder / EXPECTED_FILE).is_file() or not (folder / DIGEST_FILE).is_file():
        return ""
    recorded = json.loads((folder / DIGEST_FILE).read_text()).get("arrays") or {}
    info = json.loads((folder / "bug.json").read_text()) if (folder / "bug.json").is_file() else {}
    reference = str(info.get("reference") or DEFAULT_REFERENCE)
    spec = find_spec(reference)
    env = {**os.environ, **(dict(spec.env) if spec is not None else {"KERAS_BACKEND": "tensorflow"})}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    python = (spec.python if spec is not None else None) or sys.executable
    done = subprocess.run([python, "-c", _RERUN, *_input_names(folder)], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=timeout_s)
    if done.returncode != 0 or not (folder / EXPECTED_FILE).is_file():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the reference {reference} could not rerun the model for the expected output: {last}")
    again = digest((folder / EXPECTED_FILE).read_bytes())
    same = again == recorded
    return (f"expected output rerun on {reference}" + (", identical to the recorded digest" if same else
            ": differs from the recorded digest (another release?), the rerun is the truth"))


def prepare(folder: Path, *, timeout_s: float = RERUN_TIMEOUT_S) -> str:
    """Before a recheck runs ``folder``'s script: restore its expected output from the reference where only the
    digest was kept (:func:`restore`), and say in words which expected output the verdict is judged by ("" for a
    bug with none)."""
    rerun = restore(folder, timeout_s=timeout_s)
    if rerun:
        return rerun
    path = Path(folder) / EXPECTED_FILE
    if not path.is_file():
        return ""
    how = kept_as({EXPECTED_FILE: path.read_bytes()})
    return AS_RECORDED + (" (stored compressed)" if how == COMPRESSED else "")
