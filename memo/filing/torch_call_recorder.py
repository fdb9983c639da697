"""Run a Keras-on-torch script and record the torch calls Keras makes, and how it calls ``torch.onnx.export``.

A standalone script (standard library and torch only; memo is not importable where it runs): copied next to a
bug's Keras minimal script and run in a fresh process by :mod:`memo.filing.torch_onnx_code`. It reads
:data:`REQUEST_FILE` (``{"script": ..., "names": [...]}``), runs the script under a ``TorchFunctionMode`` that
records each call of a torch function or tensor method named in ``names`` made from Keras's own code (its
target, its arguments: a tensor as its shape and dtype, any other value as itself, and the Keras line that made
it), and the keyword arguments the script's export passed to ``torch.onnx.export`` with the line that made that
call; it prints them as one JSON line opened by :data:`RESULT_MARK`. The script's own exception (the bug) is
expected and kept as text.
"""
from __future__ import annotations

import json
import runpy
import sys
import traceback
from typing import Any

REQUEST_FILE = "record_request.json"
RESULT_MARK = "memo recorded torch calls: "  # opens the one stdout line holding the result (JSON)
CALLER_PART = "/keras/src/"  # the frames whose innermost one made the call
EXPORT_KEYS = ("dynamo", "opset_version")  # torch.onnx.export's arguments a torch-only script passes on
MAX_CALLS = 50


class Unrecordable(Exception):
    """An argument a script cannot state as a literal (a generator, a device object...)."""


def _caller() -> str:
    """``path:line:function:source`` of the innermost Keras frame on the stack ("" when Keras made no call)."""
    for frame in reversed(traceback.extract_stack()):
        if CALLER_PART in frame.filename:
            path = frame.filename[frame.filename.index(CALLER_PART) + 1:]
            return f"{path}:{frame.lineno}:{frame.name}:{(frame.line or '').strip()}"
    return ""


def _value(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return {"tensor": [int(d) for d in value.shape], "dtype": str(value.dtype).removeprefix("torch.")}
    if isinstance(value, torch.dtype):
        return {"dtype_value": str(value).removeprefix("torch.")}
    if isinstance(value, torch.Size):
        return [int(d) for d in value]
    if isinstance(value, (list, tuple)):
        items = [_value(item) for item in value]
        return items if isinstance(value, list) else {"tuple": items}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise Unrecordable(type(value).__name__)


def _target(func: Any) -> str:
    """How a script names ``func``: ``torch.squeeze``, ``torch.nn.functional.pad``, ``Tensor.squeeze``."""
    import torch

    name = getattr(func, "__name__", "")
    for module in ("torch", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft"):
        if getattr(sys.modules.get(module), name, None) is func:
            return f"{module}.{name}"
    return f"Tensor.{name}" if getattr(torch.Tensor, name, None) is func else ""


def main() -> None:
    import torch
    from torch.overrides import TorchFunctionMode

    with open(REQUEST_FILE) as handle:
        request = json.load(handle)
    names = set(request["names"])
    calls: list[dict[str, Any]] = []
    export: dict[str, Any] = {}

    class Recorder(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            kwargs = kwargs or {}
            if getattr(func, "__name__", "") in names and len(calls) < MAX_CALLS:
                caller, target = _caller(), _target(func)
                try:
                    if caller and target:
                        calls.append({"target": target, "args": [_value(a) for a in args],
                                      "kwargs": {k: _value(v) for k, v in kwargs.items()}, "caller": caller})
                except Unrecordable:
                    pass
            return func(*args, **kwargs)

    real_export = torch.onnx.export

    def recording_export(*args: Any, **kwargs: Any) -> Any:
        export.update({key: kwargs.get(key) for key in EXPORT_KEYS}, caller=_caller())
        return real_export(*args, **kwargs)

    torch.onnx.export = recording_export
    error = ""
    try:
        with Recorder():
            runpy.run_path(request["script"], run_name="__main__")
    except BaseException as exc:  # the bug itself, expected
        error = f"{type(exc).__name__}: {exc}"[:2000]
    from torch.onnx import _constants

    if export and export.get("opset_version") is None:  # torch.onnx's default, which Keras's None means
        export["opset_version"] = _constants.ONNX_DEFAULT_OPSET
    print(RESULT_MARK + json.dumps({"calls": calls, "export": export, "error": error}), flush=True)


if __name__ == "__main__":
    main()
