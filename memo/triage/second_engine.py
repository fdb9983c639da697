"""A second engine on the file another engine crashed on: ONNX's checker and ONNX Runtime (as a user runs it) on the
bug folder's reduced file and inputs, in a child process (:mod:`memo.backends.ort_unoptimized` ``--optimized``).

What convinces an engine's maintainers that their crash is theirs is the same file accepted by ONNX's checker and
run by another engine (t55's reader checked both by hand for OpenVINO's Loop: the issue text did not say it).
ONNX's reference evaluator (:mod:`memo.triage.onnx_reference`) is the specification's opinion, but it mis-evaluates
some control flow (tf2onnx's Loop: shape (4, 8) where Keras gives (2, 4, 8)); ONNX Runtime runs such files.
The answer is kept in ``bug.json`` (:data:`SECOND_ENGINE_KEY`: ``engine`` with its version, ``checker`` "passes" or
what it raised, ``status`` runs or fails, the output ``shapes`` or the ``message``) and the issue text states it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from memo.backends import CONVERTERS, find_spec
from memo.bug_files import INPUTS_FILE, read_bug_file, write_bug_file
from memo.json_types import JsonObject
from memo.triage.onnx_reference import onnx_file_of
from memo.backends.ort_unoptimized import OPTIMIZED
from memo.triage.ort_unoptimized import FAILS, FILE, RUNS, failure_line, run_child

SECOND_ENGINE_KEY = "second_engine"
PASSES = "passes"


def applies(info: JsonObject, folder: Path) -> bool:
    """A crash of an engine other than ONNX Runtime reading an ONNX file the folder keeps."""
    library = str(info.get("library") or "")
    spec = find_spec(library)
    return info.get("kind") == "crash" and onnx_file_of(library) is not None and library not in CONVERTERS \
        and spec is not None and getattr(spec, "engine_name", library) != "onnxruntime" \
        and (folder / FILE).is_file() and (folder / INPUTS_FILE).is_file()


def probe_second_engine(folder: Path, scratch: Path, timeout_s: float = 60.0) -> JsonObject | None:
    """ONNX's checker and ONNX Runtime on the folder's file, once, kept in its ``bug.json`` (None: not such a
    crash, or the run did not finish in ``timeout_s``)."""
    info = read_bug_file(folder)
    if SECOND_ENGINE_KEY in info:
        return info[SECOND_ENGINE_KEY]
    if not applies(info, folder):
        return None
    out = scratch / "second_engine.npz"
    done = run_child(folder, out, timeout_s, OPTIMIZED)
    if done is None:
        return None
    said = dict(line.split(": ", 1) if ": " in line else (line, "") for line in done.stdout.splitlines())
    engine = next((line for line in done.stdout.splitlines() if line.startswith("onnxruntime ")), "onnxruntime")
    answer: JsonObject = {"engine": engine, "checker": said.get("checker", "")}
    if done.returncode == 0 and out.exists():
        with np.load(out, allow_pickle=False) as data:
            answer.update(status=RUNS, shapes=[list(data[f"out_{i}"].shape) for i in range(len(data.files))])
    else:
        answer.update(status=FAILS, message=failure_line(done)[:300])
    write_bug_file(folder, {**info, SECOND_ENGINE_KEY: answer})
    return answer


def second_engine_text(info: JsonObject) -> str:
    """The issue text's sentence on the second engine (a sentence opening with a space; "" where it did not run the
    file)."""
    answer = info.get(SECOND_ENGINE_KEY) or {}
    if answer.get("status") != RUNS:
        return ""
    shapes = ", ".join(str(tuple(shape)) for shape in answer.get("shapes") or [])
    valid = " `onnx.checker.check_model(..., full_check=True)` accepts the attached file, and" \
        if answer.get("checker") == PASSES else ""
    return f"{valid} {answer.get('engine') or 'ONNX Runtime'} runs it" + (f" (output shape {shapes})." if shapes
                                                                         else ".")


__all__ = ["SECOND_ENGINE_KEY", "probe_second_engine", "second_engine_text"]
