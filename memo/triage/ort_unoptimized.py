"""Whether ONNX Runtime's finding comes from one of its graph optimization passes: the bug folder's file run again
with every optimization off (:mod:`memo.backends.ort_unoptimized`, a child process).

* a crash the unoptimized session does not raise: a pass rewrote the graph into one a kernel refuses (p41's Resize:
  the transpose optimizer moves an NCHW cubic Resize to NHWC, whose kernel rejects the scales below 1);
* a numeric finding the unoptimized session does not show (its outputs agree with ``expected.npz``): a pass computes
  differently from the kernels it replaced;
* the same failure or difference without optimizations: the kernel itself.

The answer is kept in ``bug.json`` (:data:`UNOPTIMIZED_KEY`: ``status`` runs or fails, ``message``, ``agrees`` with the
expected outputs, None where there are none) and the issue text states it (:mod:`memo.filing.issue`): a maintainer
reads where to look, and a user reads the workaround.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from memo.backends import find_spec
from memo.bug_files import EXPECTED_FILE, INPUTS_FILE, read_bug_file, write_bug_file
from memo.json_types import JsonObject
from memo.oracle import Thresholds
from memo.oracle.criterion import agree
from memo.triage.onnx_reference import ENGINE, ONNX_REFERENCE_ARRAYS, ONNX_REFERENCE_KEY

UNOPTIMIZED_KEY = "unoptimized"
RUNS, FAILS = "runs", "fails"
FILE = "model.onnx"  # the converted file a bug folder keeps (memo.triage.bugdir)
KINDS = frozenset({"crash", "nan", "inconsistency"})
SETTING = "SessionOptions.graph_optimization_level = ORT_DISABLE_ALL"


def applies(info: JsonObject, folder: Path) -> bool:
    """An ONNX Runtime finding (an engine that is ONNX Runtime on the CPU) whose folder keeps the file it read."""
    spec = find_spec(str(info.get("library") or ""))
    return info.get("kind") in KINDS and spec is not None and getattr(spec, "engine", "") == "onnxruntime" \
        and (folder / FILE).is_file() and (folder / INPUTS_FILE).is_file()


def _expected(folder: Path, info: JsonObject) -> list[np.ndarray] | None:
    """The outputs the issue calls expected: ONNX's reference evaluator's on the same file where it blamed this engine
    (:attr:`memo.filing.folder.BugFolder.against_evaluator`), else the reference library's."""
    opinion = info.get(ONNX_REFERENCE_KEY) or {}
    evaluated = folder / ONNX_REFERENCE_ARRAYS
    blamed = opinion.get("decision") == ENGINE and opinion.get("blamed") == info.get("library")
    path = evaluated if blamed and evaluated.is_file() else folder / EXPECTED_FILE
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as data:
        return [data[f"out_{i}"] for i in range(len(data.files)) if f"out_{i}" in data.files] or None


def run_child(folder: Path, out: Path, timeout_s: float, *flags: str) -> subprocess.CompletedProcess[str] | None:
    """:mod:`memo.backends.ort_unoptimized` (with ``flags``) on the folder's file and inputs in a child process, its
    outputs written to ``out``; None when it did not finish in ``timeout_s``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    try:
        return subprocess.run([sys.executable, "-m", "memo.backends.ort_unoptimized", str(folder / FILE),
                               str(folder / INPUTS_FILE), str(out), *flags], capture_output=True, text=True,
                              timeout=timeout_s, env=env, check=False)
    except subprocess.TimeoutExpired:
        return None


def failure_line(done: subprocess.CompletedProcess[str]) -> str:
    """What a failed child said last (its ``Type: message`` line), else its exit status."""
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    return lines[-1] if lines else f"exit {done.returncode}"


def probe_unoptimized(folder: Path, scratch: Path, timeout_s: float = 60.0) -> JsonObject | None:
    """Run the folder's file with ONNX Runtime's optimizations off, once, and keep the answer in its ``bug.json``
    (None: not an ONNX Runtime finding with its file, or the run did not finish in ``timeout_s``)."""
    info = read_bug_file(folder)
    if UNOPTIMIZED_KEY in info:
        return info[UNOPTIMIZED_KEY]
    if not applies(info, folder):
        return None
    out = scratch / "unoptimized.npz"
    done = run_child(folder, out, timeout_s)
    if done is None:
        return None
    if done.returncode != 0 or not out.exists():
        answer: JsonObject = {"status": FAILS, "message": failure_line(done)[:500], "agrees": None}
    else:
        with np.load(out, allow_pickle=False) as data:
            outputs = [data[f"out_{i}"] for i in range(len(data.files))]
        expected = _expected(folder, info)
        answer = {"status": RUNS, "message": "", "agrees": None if expected is None
                  else bool(agree(outputs, expected, Thresholds()))}
    write_bug_file(folder, {**info, UNOPTIMIZED_KEY: answer})
    return answer


def unoptimized_text(info: JsonObject) -> str:
    """The issue text's sentence on the unoptimized run ("" where there was none)."""
    answer = info.get(UNOPTIMIZED_KEY) or {}
    status, agrees = answer.get("status"), answer.get("agrees")
    off = f"With graph optimizations off (`{SETTING}`)"
    if info.get("kind") == "crash":
        if status == RUNS:
            return (f"{off} the same file loads and runs" + (", to the expected outputs" if agrees else "")
                    + ": one of ONNX Runtime's optimization passes rewrites the graph into one its kernel refuses.")
        if status == FAILS:
            return f"{off} it fails as well (`{answer.get('message', '')}`): the kernel itself, not a pass."
        return ""
    if status == RUNS and agrees:
        return (f"{off} ONNX Runtime computes the expected outputs on the same file: the difference comes from one "
                f"of its optimization passes.")
    if status == RUNS and agrees is False:
        return f"{off} the outputs still differ: the kernel itself, not a pass."
    return ""


__all__ = ["UNOPTIMIZED_KEY", "probe_unoptimized", "unoptimized_text"]
