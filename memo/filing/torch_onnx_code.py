"""A torch-only minimal script for a bug that arises inside torch.onnx while Keras exports a model.

Keras's ``model.export(format="onnx")`` on the torch backend calls torch.onnx's TorchScript exporter
(``dynamo=False``). A failure inside it (a symbolic function failing, an invalid node written:
:mod:`memo.backends.inner_libraries`) is torch.onnx's, and its maintainers want it without Keras: one torch call
in an ``nn.Module``, exported as Keras exports. Which call: the bug's Keras script runs once under
:mod:`memo.filing.torch_call_recorder`, which records Keras's calls of the torch functions reaching the culprit
(the symbolic function's name, or the invalid node's operator through ``InnerLibrary.caller_calls``) with their
arguments' shapes, dtypes and values, and the arguments Keras passed to ``torch.onnx.export``. Each distinct call
becomes a script; :mod:`memo.filing.check` keeps the first that reproduces the bug's exception and message head.
"""
from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memo.backends.inner_libraries import LIBRARIES, InnerLibrary, inner_culprit
from memo.bugdb.recheck import run_script
from memo.filing import torch_call_recorder as recorder
from memo.filing.folder import BugFolder
from memo.filing.pycode import INDENT, literal

SOURCE = "torch-only"  # a Candidate's source: the script calls torch alone
EXPORTED_FILE = "call.onnx"
RECORD_TIMEOUT_S = 60.0
RECORD_MIN_S = 20.0  # a recording needs this much (Keras and torch imported, the model exported), as a check does
MAX_SCRIPTS = 3
# How a script states where its call comes from (issue texts read these lines back: :func:`found_through`)
EXPORT_MARK = "# Keras's model.export(format=\"onnx\") on the torch backend calls torch.onnx.export("
CALL_MARK = "# The call below is Keras's, at "
# A recorded input tensor, by its dtype's kind: how the script makes it (seeded)
INPUT_MAKERS: dict[str, str] = {
    "float": "torch.rand({shape}, dtype=torch.{dtype})",
    "int": "torch.randint(0, 3, {shape}, dtype=torch.{dtype})",
    "bool": "torch.rand({shape}) > 0.5",
}
_DTYPE_KIND = re.compile(r"float|int|bool")  # bfloat16 -> float, uint8 -> int


@dataclass(frozen=True)
class TorchOnlyScript:
    """A torch-only script and the text its error output must hold besides the exception's name (the message's
    head, or the invalid node's operator)."""

    text: str
    symptom: str


class _NotStated(Exception):
    """A recorded call a script cannot state (a tensor of a dtype without a maker)."""


def _inner(folder: BugFolder) -> tuple[InnerLibrary, str] | None:
    inner = LIBRARIES.get(folder.inside or "")
    culprit = inner_culprit(inner.name, str(folder.info.get("error_message") or ""), folder.frames) if inner else None
    return (inner, culprit) if inner and culprit else None


def record_calls(keras_script: str, files: dict[str, bytes], python: str, names: tuple[str, ...],
                 timeout_s: float = RECORD_TIMEOUT_S) -> dict[str, Any]:
    """Run ``keras_script`` (with its ``files``) under :mod:`memo.filing.torch_call_recorder` in a fresh process;
    what it recorded (``calls``, ``export``, ``error``), empty when it recorded nothing."""
    with tempfile.TemporaryDirectory(prefix="memo-record-") as scratch:
        root = Path(scratch)
        for name, data in {**files, "keras_script.py": keras_script.encode()}.items():
            (root / name).write_bytes(data)
        (root / recorder.REQUEST_FILE).write_text(json.dumps({"script": "keras_script.py", "names": list(names)}))
        runner = Path(recorder.__file__).name
        (root / runner).write_text(Path(recorder.__file__).read_text())
        run = run_script(root, python or sys.executable, timeout_s, runner, stderr_apart=True, tail=None,
                         remember=True)
    found = [line for line in run.output.splitlines() if line.startswith(recorder.RESULT_MARK)]
    try:
        return json.loads(found[-1][len(recorder.RESULT_MARK):]) if found else {}
    except ValueError:  # a line cut short (the process killed while printing): nothing recorded
        return {}


def _value(value: Any, tensors: list[dict[str, Any]]) -> str:
    """A recorded argument as source; a tensor becomes the next parameter (``x0``, ``x1``...)."""
    if isinstance(value, dict) and "tensor" in value:
        tensors.append(value)
        return f"x{len(tensors) - 1}"
    if isinstance(value, dict) and "dtype_value" in value:
        return f"torch.{value['dtype_value']}"
    if isinstance(value, dict) and "tuple" in value:
        items = [_value(item, tensors) for item in value["tuple"]]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if isinstance(value, list):
        return f"[{', '.join(_value(item, tensors) for item in value)}]"
    return literal(value)


def _tensor_line(index: int, tensor: dict[str, Any]) -> str:
    kind = _DTYPE_KIND.search(str(tensor["dtype"]))
    maker = INPUT_MAKERS.get(kind.group(0) if kind else "")
    if maker is None:
        raise _NotStated(f"a {tensor['dtype']} tensor")
    return f"x{index} = " + maker.format(shape=literal(tuple(tensor["tensor"])), dtype=tensor["dtype"])


def _call_expression(call: dict[str, Any], tensors: list[dict[str, Any]]) -> str:
    args = [_value(arg, tensors) for arg in call["args"]]
    kwargs = [f"{key}={_value(value, tensors)}" for key, value in call["kwargs"].items()]
    module, _, name = str(call["target"]).rpartition(".")
    if module == "Tensor":  # a tensor method: its first argument is the tensor
        return f"{args[0]}.{name}({', '.join([*args[1:], *kwargs])})"
    return f"{module}.{name}({', '.join([*args, *kwargs])})"


def script_text(bug_id: str, call: dict[str, Any], export: dict[str, Any]) -> str:
    """The torch-only script making the recorded ``call`` inside an ``nn.Module`` exported with Keras's
    ``export`` arguments, then checked by onnx.checker (the file torch.onnx wrote must be valid)."""
    tensors: list[dict[str, Any]] = []
    expression = _call_expression(call, tensors)
    if not tensors:
        raise _NotStated("a call without a tensor argument")
    params = ", ".join(f"x{i}" for i in range(len(tensors)))
    arguments = ", ".join(f"{key}={literal(export[key])}" for key in recorder.EXPORT_KEYS if key in export)
    path, line, function, source = (str(call.get("caller", "")).split(":", 3) + ["", "", "", ""])[:4]
    export_at = str(export.get("caller", "")).split(":")
    lines = [f"# torch.onnx: memo bug {bug_id}; exits 1 (an exception) when the bug shows",
             f"{EXPORT_MARK}..., {arguments}) at {':'.join(export_at[:2])}",
             f"{CALL_MARK}{path}:{line} ({function}): {source}",
             "import onnx", "import torch", "", "",
             "class Call(torch.nn.Module):", f"{INDENT}def forward(self, {params}):",
             f"{INDENT * 2}return {expression}", "", "",
             "torch.manual_seed(0)", *(_tensor_line(i, t) for i, t in enumerate(tensors)),
             'print("torch", torch.__version__, "onnx", onnx.__version__)',
             f"torch.onnx.export(Call(), ({params},), {EXPORTED_FILE!r}, {arguments})",
             f"onnx.checker.check_model(onnx.load({EXPORTED_FILE!r}), full_check=True)",
             'print("no error: the bug does not reproduce")']
    return "\n".join(lines) + "\n"


def _symptom(folder: BugFolder, inner: InnerLibrary, culprit: str) -> str:
    """What the error output must hold besides the exception's name: the invalid node's operator as the checker
    names it, else the head of the recorded message."""
    if folder.exception in inner.writes:
        return f"op_type:{culprit}"
    return str(folder.info.get("error_message") or "").strip().splitlines()[0][:60] if \
        str(folder.info.get("error_message") or "").strip() else ""


def torch_only_scripts(folder: BugFolder, keras_script: str, files: dict[str, bytes], python: str,
                       deadline: float | None = None) -> list[TorchOnlyScript]:
    """The torch-only scripts for ``folder`` (a crash inside torch.onnx), one per distinct recorded call, at most
    :data:`MAX_SCRIPTS`; none for another bug, when the recording found no call (the Keras script remains), or when
    ``deadline`` (monotonic clock) leaves no time to record and then check a script."""
    found = _inner(folder)
    timeout_s = RECORD_TIMEOUT_S if deadline is None else min(
        RECORD_TIMEOUT_S, deadline - time.monotonic() - RECORD_MIN_S)
    if found is None or timeout_s < RECORD_MIN_S:
        return []
    inner, culprit = found
    recorded = record_calls(keras_script, files, python, inner.callers_of(culprit), timeout_s)
    export = recorded.get("export") or {}
    if not export:  # Keras never reached torch.onnx.export: nothing to say how it exports
        return []
    symptom = _symptom(folder, inner, culprit)
    out: list[TorchOnlyScript] = []
    seen: set[str] = set()
    for call in recorded.get("calls") or []:
        key = json.dumps([call["target"], call["args"], call["kwargs"]], sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        try:
            out.append(TorchOnlyScript(script_text(folder.id, call, export), symptom))
        except _NotStated:
            continue
        if len(out) == MAX_SCRIPTS:
            break
    return out


def found_through(text: str) -> str:
    """What an issue says of a torch-only script's origin (read back from its :data:`EXPORT_MARK` and
    :data:`CALL_MARK` lines): Keras's export uses the TorchScript exporter, and the Keras line making the call;
    "" for another script."""
    export = next((line for line in text.splitlines() if line.startswith(EXPORT_MARK)), "")
    call = next((line for line in text.splitlines() if line.startswith(CALL_MARK)), "")
    if not export:
        return ""
    arguments, _, where = export[len(EXPORT_MARK):].rpartition(") at ")
    site = call[len(CALL_MARK):]
    location, _, source = site.partition(": ")
    made = f" The call that fails is Keras's `{source.strip()}` at {location}." if site else ""
    return (f"Found through Keras's `model.export(format=\"onnx\")` on the torch backend, which calls torch.onnx's "
            f"TorchScript exporter: `torch.onnx.export({arguments})` at {where}.{made} The script below "
            f"makes that one call, with the shapes and arguments Keras passed, in an `nn.Module` exported the same "
            f"way, without Keras.")
