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

from memo.library_coverage.measured import MeasuredCode
from memo.backends import trackers
from memo.backends.idioms import ONNX, ONNX_IMPORTS, Idiom
from memo.backends.spec import (BackendSpec, DifferenceExample, DocumentedDifference, MessageMask, MessageRules,
                                ModelInputs, ReproRecipe, UnsupportedPhrase, Upstream)
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


def _run(bound: _Bound, inputs: ModelInputs) -> list[Any]:
    return bound.forward(list(inputs.values()))


# MXNet's ONNX importer refuses ops with NotImplementedError ("Operator Resize not implemented."); the
# one other deliberate refusal in it is Flatten's (mxnet/contrib/onnx/onnx2mx/_op_translations.py).
# MXNet's own operators then decline, as CHECKs naming the unsupported case (MXNetError, a RuntimeError;
# at bind time wrapped in "simple_bind error. Arguments: ..."), documented in the operators' docstrings:
# * Pad (src/operator/pad-inl.h:215,218; docstring ".. note:: Current implementation only supports 4D and 5D
#   input arrays with padding applied only on axes 1, 2 and 3."): a 3-D input (ZeroPadding1D) and padding
#   on the batch or channel axis of a channels-last 4-D input. Examples from memo 0.x on MXNet 1.9.1
#   (ZeroPadding1D(2) on (5, 3); an ONNX Pad of (1, 5, 6, 2) on axes 1 and 2).
# * The linalg operators behind the importer's Gemm/MatMul (linalg_gemm2; src/operator/tensor/la_op.h:743,
#   docstring ".. note:: The operator supports float32 and float64 data types only."): a float16 Dense.
#   Example: Dense(4, dtype="float16") on (6,), `memo run` on mxnet.
UNSUPPORTED = (
    UnsupportedPhrase(r"^Flatten operator only supports axis=1$", exc_types=("RuntimeError",),
                      example="Flatten operator only supports axis=1"),
    UnsupportedPhrase(r"Current implementation (only supports 4-D or 5-D input|expects padding on the first two "
                      r"axes to be zero)\.", exc_types=("RuntimeError",),
                      example="simple_bind error. Arguments:\ninput_layer_2: (2, 5, 3)\nMXNetError: Error in "
                              "operator functional_2_1/zero_padding1d_1/Pad: [06:21:51] ../src/operator/./pad-inl.h:"
                              "215: Current implementation only supports 4-D or 5-D input."),
    UnsupportedPhrase(r"MXNetError: This operation only supports 32-bit and 64-bit floating point$",
                      exc_types=("RuntimeError",),
                      example="Traceback (most recent call last):\n  File \"../src/operator/tensor/./la_op.h\", "
                              "line 743\nMXNetError: This operation only supports 32-bit and 64-bit floating point"),
    # src/operator/linalg_impl.h:166, LOG(FATAL) in the CPU gemm for mshadow::half::half_t: MXNet has no float16
    # matrix multiply on CPU (a float16 Dense shows it)
    UnsupportedPhrase(r"MXNetError: FP16 gemm on cpu not implemented!$", exc_types=("MXNetError", "RuntimeError"),
                      example="Traceback (most recent call last):\n  File \"../src/operator/nn/./../linalg_impl.h\", "
                              "line 166\nMXNetError: FP16 gemm on cpu not implemented!"),
)

# MXNet's ONNX importer has no translator for ONNX's LSTM (its operator table, mxnet/contrib/onnx/onnx2mx/
# _import_helper.py, lists none; import_onnx.py would raise "Operator LSTM not implemented."). tf2onnx writes
# a Keras LSTM as one ONNX LSTM node whose optional sequence_lens input is omitted (the empty name ''), and the
# importer looks every input name up before it looks the operator up: the refusal surfaces as KeyError ''
# (`memo run --backends keras-tensorflow,mxnet` on LSTM(4) over (5, 3): convert stage "KeyError: ''").
# A KeyError is never a phrase of UNSUPPORTED, so this is declared on the model: an LSTM layer and exactly
# that message. (GRU and SimpleRNN become ONNX Loop nodes: "Operator Loop not implemented.", a refusal.)
DOCUMENTED = (
    DocumentedDifference(
        behaviour="MXNet's ONNX importer cannot import an ONNX LSTM node (no translator for the operator); on "
                  "tf2onnx's LSTM node it fails looking up the omitted optional input '' before it gets to say so",
        source="mxnet 1.9.1, python/mxnet/contrib/onnx/onnx2mx/import_onnx.py (GraphProto._convert_operator)",
        quote='raise NotImplementedError("Operator {} not implemented.".format(op_name))',
        kinds=("crash",), layer_classes=("LSTM",), message=r"^(KeyError: )?''$", at_layer=False,
        example=DifferenceExample("crash", (("LSTM", {"units": 4}),), None, "KeyError: ''")),
)

# How MXNet fails (BackendSpec.messages): when binding fails, it lists the inputs ("simple_bind error. Arguments:
# input_layer: (1, 3) indices: (1,)"), named after each model's input layers; its ONNX import names the operator
# it has no translator for ("Operator Loop not implemented.").
MESSAGES = MessageRules(masks=(MessageMask(r"(simple_bind error\. Arguments:)(?:\s+\S+: SHAPE)+", r"\1 INPUTS",
                                           stage="numbers",
                                           example="simple_bind error. Arguments: input_layer: SHAPE indices: SHAPE"),),
                        declined_features=(r"\bOperator ([A-Za-z]\w*) not implemented",))

UPSTREAM = Upstream("retired", "https://github.com/apache/mxnet/issues",
                    "retired to the Apache Attic in 2023; 1.9.1 is its last release: bugs are not fixed", trackers.MXNET)

SPEC = BackendSpec(name="mxnet", consumes="onnx-opset11", convert=_convert, load=_load, run=_run, setup=_setup,
                   distributions=DISTRIBUTIONS, python=MXNET_PYTHON, unsupported_patterns=UNSUPPORTED,
                   documented_differences=DOCUMENTED, upstream=UPSTREAM, messages=MESSAGES,
                   library_code=(MeasuredCode("mxnet", ("mxnet/contrib/onnx",)),),  # the importer memo runs
                   repro=ReproRecipe(requirements=("mxnet==1.9.1", "numpy==1.23.5", "onnx==1.14.1", "protobuf<4")),
                   idiom=Idiom(ONNX, (*ONNX_IMPORTS, "import mxnet as mx", "from mxnet.contrib import onnx as onnx_mxnet"),
                               '"mxnet", mx.__version__, "onnx", onnx.__version__', (
                       'onnx.save(model, "bug.onnx")',
                       'symbol, arg_params, aux_params = onnx_mxnet.import_model("bug.onnx")',
                       "module = mx.mod.Module(symbol=symbol, data_names=list(feed), label_names=None, context=mx.cpu())",
                       "module.bind(for_training=False, data_shapes=[(k, v.shape) for k, v in feed.items()])",
                       "module.set_params(arg_params, aux_params, allow_missing=True, allow_extra=True)",
                       "module.forward(mx.io.DataBatch([mx.nd.array(v, dtype=v.dtype) for v in feed.values()]), "
                       "is_train=False)",
                       "actual = [out.asnumpy() for out in module.get_outputs()]")))
