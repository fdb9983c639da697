"""MXNet 1.9 through its ONNX importer, in its own virtual environment (numpy 1.23, onnx 1.14).

Consumes the opset-11, static-shape conversion (every initializer also listed as a graph input):
MXNet's importer needs both (opset 13+ gives Squeeze/Unsqueeze axes as inputs, which it rejects).
Imports only stdlib, numpy, onnx and mxnet; onnx and mxnet inside the functions below, which run in
the worker only: the orchestrator imports this module to read the spec and must never import a library
under test (nor could it: MXNet lives in its own virtual environment).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memo.backends.spec import BackendSpec, ReproRecipe, UnsupportedPhrase
from memo.backends.versions import distribution_versions

DISTRIBUTIONS = ("mxnet", "onnx", "numpy")
MXNET_PYTHON = os.environ.get("MEMO_MXNET_PYTHON",
                              str(Path(__file__).resolve().parents[2] / ".venv-mxnet" / "bin" / "python"))


def _setup() -> dict[str, str]:
    import mxnet  # noqa: F401

    return distribution_versions(DISTRIBUTIONS)


def _convert(path: Path) -> tuple[Any, Any, Any, list[str]]:
    import onnx
    from mxnet.contrib import onnx as onnx_mxnet

    graph = onnx.load(str(path)).graph
    initializers = {init.name for init in graph.initializer}
    data_names = [arg.name for arg in graph.input if arg.name not in initializers]
    symbol, arg_params, aux_params = onnx_mxnet.import_model(str(path))
    return symbol, arg_params, aux_params, data_names


class _Bound:
    """An MXNet module bound lazily to the input shapes of the first call."""

    def __init__(self, symbol: Any, arg_params: Any, aux_params: Any, data_names: list[str]) -> None:
        self.parts = (symbol, arg_params, aux_params)
        self.data_names = data_names
        self.module: Any = None
        self.shapes: list[tuple[int, ...]] = []

    def forward(self, arrays: list[Any]) -> list[Any]:
        import mxnet as mx

        shapes = [tuple(array.shape) for array in arrays]
        if self.module is None or shapes != self.shapes:
            symbol, arg_params, aux_params = self.parts
            module = mx.mod.Module(symbol=symbol, data_names=self.data_names, label_names=None, context=mx.cpu())
            module.bind(for_training=False, data_shapes=list(zip(self.data_names, shapes)))
            module.set_params(arg_params, aux_params, allow_missing=True, allow_extra=True)
            self.module, self.shapes = module, shapes
        self.module.forward(mx.io.DataBatch([mx.nd.array(array, dtype=array.dtype) for array in arrays]),
                            is_train=False)
        return [out.asnumpy() for out in self.module.get_outputs()]


def _load(converted: tuple[Any, Any, Any, list[str]]) -> _Bound:
    return _Bound(*converted)


def _run(bound: _Bound, inputs: dict[str, Any]) -> list[Any]:
    return bound.forward(list(inputs.values()))


# MXNet's ONNX importer refuses ops with NotImplementedError ("Operator Resize not implemented."); the
# one other deliberate refusal in it is Flatten's (mxnet/contrib/onnx/onnx2mx/_op_translations.py).
UNSUPPORTED = (
    UnsupportedPhrase(r"^Flatten operator only supports axis=1$", exc_types=("RuntimeError",),
                      example="Flatten operator only supports axis=1"),
)

SPEC = BackendSpec(name="mxnet", consumes="onnx-opset11", convert=_convert, load=_load, run=_run, setup=_setup,
                   distributions=DISTRIBUTIONS, python=MXNET_PYTHON, unsupported_patterns=UNSUPPORTED,
                   repro=ReproRecipe(requirements=("mxnet==1.9.1", "numpy==1.23.5", "onnx==1.14.1", "protobuf<4")))
