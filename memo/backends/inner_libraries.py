"""Libraries inside a backend's stack that have their own tracker: where a failure the backend reports arises in
one of them, the bug is theirs (:mod:`memo.triage.blame`). Pure data, no library imported.

Keras's ONNX export (``keras-export``) is Keras's wrapper around torch.onnx's TorchScript exporter. torch.onnx's
symbolic functions turn each traced torch node into ONNX nodes, and torch.onnx writes every node of the file. By
what torch.onnx raises:

- ``SymbolicValueError`` is torch.onnx refusing a value of the caller's traced graph, named with the source line of
  the caller that defined it ("Failed to export a node ... because it is not constant. Please try to make things
  (e.g. kernel sizes) static", "Unsupported prim::Constant kind ... (type 'Generator')"): the caller's code is what
  to change, so the bug stays with Keras.
- Any other exception whose innermost library frame is in ``torch/onnx/`` is a symbolic function failing on a node
  it was given (``symbolic_opset11.squeeze`` -> ``_get_const``: "only one element tensors can be converted to Python
  scalars"): torch.onnx's bug.
- An invalid file (``InvalidONNX``: onnx.checker rejects a node) was written by torch.onnx, whose symbolic emitted
  that node (ReduceMax with an axis on a rank-0 input): torch.onnx's bug.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from memo.backends import trackers
from memo.backends.onnx_validity import INVALID_ONNX
from memo.backends.spec import Upstream


@dataclass(frozen=True)
class InnerLibrary:
    """``name``: what its bugs are filed under; ``code``: the path prefix of its frames (as
    :func:`memo.triage.masks.library_frames` writes them); ``refusals``: exception types by which it declines a value
    of its caller (those stay with the caller); ``writes``: exception types memo records for an invalid file it
    wrote; ``upstream``: its tracker; ``entry_frames``: a pattern of the frame (``module/path.py:function``) of its
    per-operator code, whose ``module`` and ``function`` name what failed; ``node``: a pattern of the invalid node's
    ``op`` in a checker's message; ``duty``: what it should have done, as an issue's Expected part says it;
    ``caller_calls``: the caller's functions that reach a culprit (an invalid node's operator, or a per-operator
    function's name), where their names differ (otherwise the culprit's function name is the caller's function)."""

    name: str
    code: str
    refusals: tuple[str, ...]
    writes: tuple[str, ...]
    upstream: Upstream
    entry_frames: str = ""
    node: str = r"op_type:\s*(?P<op>\w+)"
    duty: str = "does its part"
    caller_calls: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def callers_of(self, culprit: str) -> tuple[str, ...]:
        """The caller's function names that reach ``culprit`` (``ReduceMax`` -> amax, max;
        ``symbolic_opset11.squeeze`` -> squeeze)."""
        function = culprit.rpartition(".")[2]
        return self.caller_calls.get(function, (function,))


TORCH_ONNX = InnerLibrary(
    "torch.onnx", "torch/onnx/", ("SymbolicValueError",), (INVALID_ONNX,),
    # Keras's export calls torch.onnx.export(..., dynamo=False) for a model with a dynamic axis (keras/src/export/
    # onnx.py: "TorchDynamo has constraint inference issues with dynamic dimensions"), and torch.onnx warns on that
    # call: "You are using the legacy TorchScript-based ONNX export. Starting in PyTorch 2.9, the new
    # torch.export-based ONNX exporter has become the default" (q48's reader: a fix there is unlikely)
    Upstream("legacy", "https://github.com/pytorch/pytorch/issues",
             "Keras's export reaches torch.onnx's legacy TorchScript exporter (dynamo=False), superseded by the "
             "torch.export-based exporter since PyTorch 2.9", trackers.PYTORCH),
    entry_frames=r"/(?P<module>symbolic_opset\d+)\.py:(?P<function>\w+)$",
    duty="exports the traced model to a valid ONNX file, which onnx.checker accepts",
    # the torch functions (or tensor methods) whose symbolic functions write an ONNX operator
    caller_calls={"ReduceMax": ("amax", "max"), "ReduceMin": ("amin", "min"), "ReduceSum": ("sum",),
                  "ReduceMean": ("mean",), "ReduceProd": ("prod",), "ReduceL2": ("norm",),
                  "ReduceLogSumExp": ("logsumexp",), "ArgMax": ("argmax", "max"), "ArgMin": ("argmin", "min"),
                  "Squeeze": ("squeeze",), "Unsqueeze": ("unsqueeze",), "CumSum": ("cumsum",),
                  "TopK": ("topk",)})

# backend or converter name -> the library inside its stack
INSIDE: dict[str, InnerLibrary] = {"keras-export": TORCH_ONNX, "keras-export-opset15": TORCH_ONNX}
LIBRARIES: dict[str, InnerLibrary] = {inner.name: inner for inner in INSIDE.values()}


def inner_library(backend: str, exception: str, frames: list[str]) -> str | None:
    """The library inside ``backend``'s stack that a crash (``exception``, its innermost-first library ``frames``)
    arises in, or None (the backend's own)."""
    inner = INSIDE.get(backend)
    if inner is None or exception in inner.refusals:
        return None
    if exception in inner.writes or (frames and frames[0].startswith(inner.code)):
        return inner.name
    return None


def inner_culprit(name: str, message: str, frames: list[str]) -> str | None:
    """What a title names for a failure inside the library ``name``: the invalid node's operator a checker names
    (``ReduceMax``), else its per-operator function the traceback went through (``symbolic_opset11.squeeze``)."""
    inner = LIBRARIES.get(name)
    if inner is None:
        return None
    node = re.search(inner.node, message) if inner.node else None
    if node:
        return node.group("op")
    entries = [re.search(inner.entry_frames, frame) for frame in frames] if inner.entry_frames else []
    entry = next((match for match in entries if match), None)
    return f"{entry.group('module')}.{entry.group('function')}" if entry else None


__all__ = ["INSIDE", "LIBRARIES", "InnerLibrary", "inner_culprit", "inner_library"]
