"""Apache TVM (Relax, LLVM CPU target) on tf2onnx's default-opset conversion.

TVM compiles for the input shapes it is given. Its ONNX frontend imports some of tf2onnx's shape
computations for the dynamic batch only when the batch is known: a Dense layer on a 3-D input
(``Shape -> Gather -> Concat -> Reshape``) fails to import with a symbolic batch ("Reshape requires the
input new shape to be Shape") and imports with a fixed one. The convert callable receives only the file,
so the import and the compilation happen in ``run``, once the inputs' shapes are known, and each step's
failure is recorded under its own stage (through :class:`StageFailure`):

* ``convert``: the file parsed (``onnx.load``, in the worker's ``convert`` stage itself), and the ONNX
  graph imported into Relax (``tvm.relax.frontend.onnx.from_onnx``, the inputs' shapes and dtypes fixed);
* ``load``: ``tvm.compile(..., target="llvm")`` (Relax and TIR lowering to LLVM IR) and the virtual
  machine's creation (LLVM's code generation, as costly as the rest);
* ``execute``: the Relax virtual machine running ``main``.

So the worker's ``load`` stage only hands the parsed graph on, and its ``execute`` seconds include the
import and the compilation; a process that dies or hangs while importing or compiling is recorded at
``execute`` (the stage the worker had announced).

TVM runs single-threaded (``TVM_NUM_THREADS=1``). tvm and onnx are imported inside the functions below,
which run in the worker only: the orchestrator imports this module to read the spec and must never import
a library under test.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from memo.backends import trackers
from memo.backends.result import StageFailure
from memo.library_coverage.measured import MeasuredCode
from memo.backends.spec import BackendSpec, ModelInputs, ReproRecipe, UnsupportedPhrase, Upstream
from memo.backends.versions import distribution_versions

DISTRIBUTIONS = ("apache-tvm", "onnx")
TARGET = "llvm"
# Compiling is most of TVM's cost, up to seconds per bundled seed model (docs/benchmarks.md), which several
# workers sharing two cores can stretch past the executor's default 30 s.
COMPILE_TIMEOUT_S = 120.0


def _setup() -> dict[str, str]:
    import tvm  # noqa: F401
    from tvm.relax.frontend import onnx  # noqa: F401  (the frontend's imports, once per worker)

    return distribution_versions(DISTRIBUTIONS)


def _convert(path: Path) -> Any:
    import onnx

    return onnx.load(str(path))


def _load(graph: Any) -> Any:
    """Nothing to do before the inputs' shapes are known: the graph is imported and compiled by ``_run``."""
    return graph


def _graph_inputs(graph: Any) -> list[str]:
    """The names of the ONNX graph's inputs, initializers left out (the model's inputs, in order)."""
    initializers = {init.name for init in graph.graph.initializer}
    return [arg.name for arg in graph.graph.input if arg.name not in initializers]


def _compile(graph: Any, inputs: ModelInputs) -> Any:
    """Import (stage ``convert``) and compile (stage ``load``) the graph for these inputs' shapes and dtypes;
    the Relax virtual machine that runs it."""
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    names = _graph_inputs(graph)
    arrays = list(inputs.values())
    try:
        module = from_onnx(graph, shape_dict={name: list(a.shape) for name, a in zip(names, arrays)},
                           dtype_dict={name: str(a.dtype) for name, a in zip(names, arrays)},
                           keep_params_in_input=False)
    except Exception as exc:
        raise StageFailure("convert", exc) from exc
    try:  # the virtual machine's creation is where LLVM generates the machine code (half the time)
        return relax.VirtualMachine(tvm.compile(module, target=TARGET), tvm.cpu())
    except Exception as exc:
        raise StageFailure("load", exc) from exc


def _flatten(value: Any) -> list[Any]:
    """The VM's result (a tensor, or a possibly nested tuple of them) as numpy arrays, in order."""
    if hasattr(value, "numpy"):
        return [value.numpy()]
    return [array for item in value for array in _flatten(item)]


def _run(graph: Any, inputs: ModelInputs) -> list[Any]:
    import tvm

    machine = _compile(graph, inputs)
    return _flatten(machine["main"](*(tvm.runtime.tensor(np.ascontiguousarray(a)) for a in inputs.values())))


# TVM's ONNX frontend refuses an op it has no converter for with OpNotImplemented, a NotImplementedError
# ("The following operators are not supported for frontend ONNX: LSTM"): no phrase is needed for it.
UNSUPPORTED: tuple[UnsupportedPhrase, ...] = ()

SPEC = BackendSpec(name="tvm", consumes="onnx", convert=_convert, load=_load, run=_run, setup=_setup,
                   distributions=DISTRIBUTIONS, env={"TVM_NUM_THREADS": "1"}, unsupported_patterns=UNSUPPORTED,
                   repro=ReproRecipe(), timeout_s=COMPILE_TIMEOUT_S,
                   library_code=(MeasuredCode("tvm", ("tvm/relax/frontend/onnx",)),),
                   upstream=Upstream("active", "https://github.com/apache/tvm/issues",
                                     "Apache TVM releases regularly (0.27.0 installed)", trackers.TVM))
