"""A long-lived worker process for one library: ``python -m memo.backends.worker --spec NAME | --plugin PATH``.

Protocol (JSON lines; stdin carries requests, the process's original stdout carries events; everything a
library prints goes to stderr, which the supervisor writes to a file):

  -> {"event": "ready", "versions": {spec: {distribution: version}}}           once, after the imports
  -> {"event": "failed", "stage": "start", ...}                                 the library would not import
  <- {"id": 1, "op": "run", "backend": NAME, "model": PATH, "inputs": NPZ, "input_names": [...],
      "out": NPZ}                  (op "export" for a converter; "train": the training check; "exit" to stop)
  -> {"event": "stage", "id": 1, "stage": "load"}                               before each stage starts
  -> {"event": "done", "id": 1, "stages": [StageResult...], "outputs": PATH | null,
      "library": {library: {"total": M, "files": {file: [line...]}}}}  (with --library-coverage only)

Announcing each stage before starting it lets the supervisor name the stage in which the process died.
Arrays travel through ``.npz`` files, never through the pipe.

Imports stdlib and numpy only, so it runs in the MXNet environment as well.
"""
from __future__ import annotations

import argparse
import faulthandler
import importlib.util
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, TextIO

import numpy as np

from memo.backends import load_spec
from memo.backends.coverage_probe import CoverageProbes
from memo.backends.failure_cause import primary_failure
from memo.backends.result import ConversionProblem, StageFailure
from memo.backends.spec import (SPEC_NAME, NEVER_UNSUPPORTED, AnySpec, BackendSpec, ConverterSpec,
                                UnsupportedPatterns, UnsupportedPhrase)
from memo.json_types import JsonObject


def load_plugin(path: Path) -> BackendSpec:
    """Import a plugin file and return its ``SPEC`` (done in the worker only: it may import anything)."""
    module_spec = importlib.util.spec_from_file_location(f"memo_plugin_{path.stem}", path)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"cannot import plugin {path}")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    spec = getattr(module, SPEC_NAME, None)
    if not isinstance(spec, BackendSpec):
        raise TypeError(f"plugin {path} defines no SPEC = BackendSpec(...)")
    return spec


def _type_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def classify(exc: BaseException, patterns: UnsupportedPatterns = ()) -> str:
    """"unsupported" for a deliberate refusal, else "error".

    The exception type decides first: NotImplementedError is a refusal; a TypeError, KeyError, IndexError,
    AssertionError or AttributeError never is, whatever its message ("unsupported operand type(s)" is a
    bug). Otherwise only an exact phrase the backend declares (``patterns``: :class:`UnsupportedPhrase`, or a
    plain regular expression applying to any other type) makes it one.
    """
    names = _type_names(exc)
    if isinstance(exc, NotImplementedError):
        return "unsupported"
    if names & set(NEVER_UNSUPPORTED):
        return "error"
    text = str(exc)
    for phrase in patterns:
        if isinstance(phrase, str):
            phrase = UnsupportedPhrase(phrase)
        if phrase.exc_types and not names & set(phrase.exc_types):
            continue
        if re.search(phrase.pattern, text):
            return "unsupported"
    return "error"


class Worker:
    def __init__(self, specs: dict[str, AnySpec], channel: TextIO) -> None:
        self.specs = specs
        self.channel = channel
        self.coverage = CoverageProbes()  # what --library-coverage measures, per spec (none without it)
        # (key, handle or the exception) of the last model a converter loaded: a model that fails to load
        # fails once, not once per conversion
        self.cache: tuple[Any, Any] | None = None

    def emit(self, event: JsonObject) -> None:
        self.channel.write(json.dumps(event) + "\n")
        self.channel.flush()

    def stage(self, request_id: int, name: str, spec: AnySpec, records: list[JsonObject],
              action: Callable[[], Any]) -> tuple[bool, Any]:
        self.emit({"event": "stage", "id": request_id, "stage": name})
        start = time.perf_counter()
        record: JsonObject = {"stage": name, "status": "ok"}
        value = None
        try:
            value = action()
        except Exception as exc:  # noqa: BLE001  (every library failure is a result, never a worker failure)
            cause: BaseException = exc
            if isinstance(exc, StageFailure):  # failed in an earlier stage of a multi-stage callable
                record["stage"], cause = exc.stage, exc.cause
            cause = primary_failure(cause)
            record.update(status=classify(cause, spec.unsupported_patterns), exc_type=type(cause).__name__,
                          message=str(cause)[:4000], traceback=_format(cause)[-8000:])
        record["seconds"] = time.perf_counter() - start
        records.append(record)
        return record["status"] == "ok", value

    def handle(self, request: JsonObject) -> None:
        spec = self.specs[request["backend"]]
        with self.coverage.measuring(spec if request.get("library") else None) as library:
            done = self._handle(spec, request)
        self.emit({**done, **({"library": library} if library else {})})

    def _handle(self, spec: AnySpec, request: JsonObject) -> JsonObject:
        if request.get("op") == "train":
            return self._train(spec, request)
        request_id = request["id"]
        records: list[JsonObject] = []
        model_path = Path(request["model"])
        ok, inputs = True, _read_inputs(Path(request["inputs"]), request["input_names"])
        out = Path(request["out"])
        if isinstance(spec, ConverterSpec):
            ok, handle = self.stage(request_id, "load", spec, records, lambda: self._cached_load(spec, model_path))
            if ok:
                ok, problems = self.stage(request_id, "convert", spec, records,
                                          lambda: spec.export(handle, inputs, out))
                if ok and problems:
                    records[-1].update(_problem_record(problems))
                    ok = False
        else:
            source: Any = model_path
            if spec.convert is not None:
                ok, source = self.stage(request_id, "convert", spec, records, lambda: spec.convert(model_path))
            handle = None
            if ok:
                ok, handle = self.stage(request_id, "load", spec, records, lambda: spec.load(source))
            if ok:
                ok, outputs = self.stage(request_id, "execute", spec, records, lambda: spec.run(handle, inputs))
                if ok:
                    _write_outputs(out, outputs)
        return {"event": "done", "id": request_id, "stages": records,
                "outputs": str(out) if ok and out.exists() else None}

    def _train(self, spec: AnySpec, request: JsonObject) -> JsonObject:
        """The training check (:mod:`memo.backends.training`): load, prepare, then every training stage; the arrays
        of the stages that finished go to ``out`` (one ``.npz``)."""
        request_id = request["id"]
        records: list[JsonObject] = []
        inputs, out = _read_inputs(Path(request["inputs"]), request["input_names"]), Path(request["out"])
        train = getattr(spec, "train", None)
        if train is None:
            records.append({"stage": "prepare", "status": "skipped", "message": f"{spec.name} has no training check"})
            return {"event": "done", "id": request_id, "stages": records, "outputs": None}
        convert = getattr(spec, "convert", None)  # a converted module (onnx2torch): converted from the ONNX file
        ok, handle = self.stage(request_id, "load", spec, records, lambda: spec.load(
            convert(Path(request["model"])) if convert is not None else Path(request["model"])))
        arrays: dict[str, np.ndarray] = {}
        if ok:
            options = request.get("options") or {}
            ok, prepared = self.stage(request_id, "prepare", spec, records, lambda: train(handle, inputs, options))
            stages, names = prepared if ok else ([], {})
            arrays.update(names)
            for name, action in stages:  # each from the weights as loaded: a stage that raised stops no other
                ok, values = self.stage(request_id, name, spec, records, action)
                arrays.update(values if ok else {})
        if arrays:
            out.parent.mkdir(parents=True, exist_ok=True)
            np.savez(out, **arrays)
        return {"event": "done", "id": request_id, "stages": records, "outputs": str(out) if arrays else None}

    def _cached_load(self, spec: ConverterSpec, path: Path) -> Any:
        key = (spec.load, str(path), path.stat().st_mtime_ns)
        if self.cache is None or self.cache[0] != key:
            self.cache = None  # free the previous model before loading the next
            try:
                self.cache = (key, spec.load(path))
            except Exception as exc:
                self.cache = (key, exc)
        if isinstance(self.cache[1], Exception):
            raise self.cache[1]
        return self.cache[1]


def _format(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def _problem_record(problems: list[Any]) -> JsonObject:
    """The stage record for what a converter noticed without raising.

    An exception inside a handler (status "error") is the converter crashing: the first one is the stage's
    exception. Otherwise every problem is an op without a handler: "unsupported", named ``UnconvertedOps``.
    """
    items = [p if isinstance(p, ConversionProblem) else ConversionProblem("unsupported", str(p)) for p in problems]
    errors = [p for p in items if p.status != "unsupported"]
    if errors:
        first = errors[0]
        # the other problems go with the traceback, not the message: which of them a run notices (and in
        # which order) varies, and the message is what identifies the bug and what its script checks
        others = [p.message for p in items if p is not first]
        also = f"\n(the conversion also noticed {len(others)} more: {'; '.join(others)})" if others else ""
        return {"status": "error", "exc_type": first.exc_type or "ConversionError", "message": first.message[:4000],
                "traceback": (first.traceback + also)[-8000:]}
    return {"status": "unsupported", "exc_type": "UnconvertedOps",
            "message": "; ".join(p.message for p in items)[:4000]}


def _read_inputs(path: Path, names: list[str]) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in names}


def _write_outputs(path: Path, outputs: Any) -> None:
    if isinstance(outputs, dict):
        outputs = list(outputs.values())
    elif not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **{f"out_{i}": np.asarray(array) for i, array in enumerate(outputs)})


def _protocol_channel() -> TextIO:
    """Keep the real stdout for the protocol; send fd 1 (anything a library prints) to stderr."""
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return channel


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="memo.backends.worker")
    parser.add_argument("--spec", action="append", default=[], help="registered backend or converter name")
    parser.add_argument("--plugin", action="append", default=[], type=Path, help="plugin file")
    parser.add_argument("--library-coverage", action="store_true",
                        help="measure the lines each model reaches in the specs' library code")
    args = parser.parse_args(argv)
    faulthandler.enable()  # a segfault leaves a Python stack in the stderr file
    channel = _protocol_channel()
    worker = Worker({}, channel)
    versions: dict[str, dict[str, str]] = {}
    try:
        specs: list[AnySpec] = [load_spec(name) for name in args.spec] + [load_plugin(p) for p in args.plugin]
        for spec in specs:
            versions[spec.name] = spec.setup() if spec.setup else {}
            worker.specs[spec.name] = spec
        if args.library_coverage:
            worker.coverage.prepare(specs)
    except Exception as exc:  # noqa: BLE001
        worker.emit({"event": "failed", "stage": "start", "exc_type": type(exc).__name__, "message": str(exc)[:4000],
                     "traceback": traceback.format_exc()[-8000:]})
        return 1
    worker.emit({"event": "ready", "versions": versions, "pid": os.getpid()})
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if request.get("op") == "exit":
            break
        worker.handle(request)
    return 0


if __name__ == "__main__":
    sys.exit(main())
