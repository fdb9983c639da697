"""torch.compile on onnx2torch's module: PyTorch's compiler stack (TorchDynamo, AOTAutograd, Inductor) as
an engine under test, on the same ``torch.fx`` module that the ``onnx2torch`` backend runs eagerly.

Two specs share one worker (group ``torch-compile``):

* ``torch-compile``: ``backend="aot_eager"`` (Dynamo's capture and AOTAutograd's tracing and
  decompositions, then eager kernels). Cheap; runs on every model. Its outputs should equal eager
  onnx2torch's almost bit for bit: a difference is a bug in the compiler's capture, not in onnx2torch.
* ``torch-inductor``: ``backend="inductor"`` (C++ code generation through g++ on CPU). A first compile costs
  seconds to minutes, so it runs on one model in ``sample_every`` and has a longer time limit; its FX graph
  cache lives in a persistent per-user folder (``~/.cache/memo/torchinductor``), so a model seen before
  compiles warm.

Stages: ``convert`` is onnx2torch (a failure there is onnx2torch's, as for the onnx2torch backend);
``load`` resets Dynamo's state (nothing compiled for one model may serve the next one in this long-lived
worker) and wraps the module with ``torch.compile``, which compiles nothing yet; ``execute`` is the first
call, which captures, compiles and runs. A failure of the compiler therefore shows at ``execute``, with the
compiler's own exception type (``torch._dynamo.exc.InternalTorchDynamoError``, ``TorchRuntimeError``,
``BackendCompilerFailed``, ``Unsupported`` ...). When the compiled call fails, the eager module is run on
the same inputs: if it fails too, the failure is the module's, not the compiler's, and the eager
exception is raised instead (the onnx2torch backend's type and message, with a note saying so). Dynamo's
listing of the user code it was tracing (the model's own fx code, with its layer names) is moved from the
message to a note of the traceback, so that one compiler bug reads the same on every model.

Graph breaks are allowed (onnx2torch's Reshape, Squeeze and Slice read tensor values, which Dynamo does not
trace), but errors are never suppressed into a silent eager fallback (``suppress_errors`` off), and reaching
the recompile limit raises (declared "unsupported": a bound memo sets) instead of running the frame eagerly.
The number of graphs compiled and of graph breaks is written to the worker's stderr for each model.

torch and onnx2torch are imported inside the functions below, which run in the worker only: the
orchestrator imports this module to read the specs and must never import a library under test.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from memo.backends import trackers
from memo.backends.idioms import onnx2torch_idiom
from memo.backends.spec import BackendSpec, ModelInputs, ReproRecipe, UnsupportedPhrase, Upstream
from memo.backends.torch_common import TORCH_MESSAGES, run_module_on, setup_torch, setup_torch_cuda, to_cuda
from memo.backends.versions import distribution_versions

DISTRIBUTIONS = ("torch", "onnx2torch", "onnx")
GROUP = "torch-compile"
# Inductor's compile caches (FX graph cache, AOTAutograd cache, compiled C++ modules): kept between runs.
INDUCTOR_CACHE_DIR = "~/.cache/memo/torchinductor"
# Dynamo compiles a frame at most this many times per model, then raises (fail_on_recompile_limit_hit). With
# the default, 8, and no failure, Dynamo would run the frame eagerly without a word: onnx2torch's Slice breaks
# the graph, and a chain of 12 slices of different shapes reaches 8.
RECOMPILE_LIMIT = 64


def _configure() -> None:
    """Settings of the compiler stack, applied before each compile (idempotent)."""
    import torch._dynamo
    import torch._inductor.config
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    # importing torch's submodules already wrote the default (a per-user folder in /tmp) to the variable;
    # a folder the user chose is kept
    chosen = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if chosen is None or os.path.abspath(chosen) == os.path.abspath(default_cache_dir()):
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.expanduser(INDUCTOR_CACHE_DIR)
    torch._dynamo.config.suppress_errors = False  # never an eager fallback hiding a compiler error
    torch._dynamo.config.recompile_limit = RECOMPILE_LIMIT
    torch._dynamo.config.fail_on_recompile_limit_hit = True
    torch._inductor.config.fx_graph_cache = True
    torch._inductor.config.compile_threads = 1  # compile in the worker: no pool of compile processes


def _setup() -> dict[str, str]:
    import onnx2torch  # noqa: F401

    setup_torch()
    _configure()
    return distribution_versions(DISTRIBUTIONS)


def _convert(path: Path) -> Any:
    """onnx2torch's conversion, as the onnx2torch backend runs it: a failure here is onnx2torch's."""
    import onnx2torch

    try:
        return onnx2torch.convert(str(path))
    except Exception as exc:
        exc.add_note("(raised by onnx2torch.convert, before torch.compile: onnx2torch's failure, which the "
                     "onnx2torch backend records as well)")
        raise


# torch.compile's backends, as the specs and their minimal scripts name them
AOT_EAGER = "aot_eager"
INDUCTOR = "inductor"


def _compile(module: Any, backend: str) -> Any:
    """A fresh Dynamo (no compiled code or guards left from the previous model), then the lazy wrapper."""
    import torch
    import torch._dynamo
    from torch._dynamo.utils import counters

    _configure()
    torch._dynamo.reset()
    counters.clear()
    return torch.compile(module.eval(), backend=backend, dynamic=False)


def _load_aot_eager(module: Any) -> Any:
    return _compile(module, AOT_EAGER)


def _load_inductor(module: Any) -> Any:
    return _compile(module, INDUCTOR)


def _load_inductor_cuda(module: Any) -> Any:
    """Inductor on the GPU: Triton kernels generated for the module moved to CUDA."""
    return _compile(to_cuda(module), INDUCTOR)


def _setup_cuda() -> dict[str, str]:
    import onnx2torch  # noqa: F401

    setup_torch_cuda()
    _configure()
    return distribution_versions(DISTRIBUTIONS)


def _run(compiled: Any, inputs: ModelInputs) -> list[Any]:
    return _run_on(compiled, inputs, "cpu")


def _run_cuda(compiled: Any, inputs: ModelInputs) -> list[Any]:
    return _run_on(compiled, inputs, "cuda")


def _run_on(compiled: Any, inputs: ModelInputs, device: str) -> list[Any]:
    """The first call of the compiled module: Dynamo captures, the backend compiles, then it runs."""
    from torch._dynamo.utils import counters

    try:
        outputs = run_module_on(compiled, inputs, device)
    except Exception as compiled_failure:
        _raise_if_eager_fails(compiled._orig_mod, inputs, device, compiled_failure)
        _move_user_code_to_note(compiled_failure)
        raise
    print(f"torch.compile: {counters['stats']['unique_graphs']} graph(s) compiled, "
          f"{sum(counters['graph_break'].values())} graph break(s)", file=sys.stderr, flush=True)
    return outputs


def _raise_if_eager_fails(module: Any, inputs: ModelInputs, device: str, compiled_failure: Exception) -> None:
    """Raise the eager module's own exception when it fails without the compiler too."""
    try:
        run_module_on(module, inputs, device)
    except Exception as eager_failure:
        eager_failure.add_note(f"(raised by the eager onnx2torch module as well, without torch.compile: "
                               f"not the compiler's failure; the compiled call raised "
                               f"{type(compiled_failure).__name__})")
        raise eager_failure from compiled_failure


# What Dynamo appends to the message of an exception raised while it traces: the user's source lines (the
# model's own fx code, with its layer names) and advice on logging.
_DYNAMO_SUFFIXES = ("\nfrom user code:", "\nSet TORCHDYNAMO_VERBOSE=")


def _move_user_code_to_note(exc: Exception) -> None:
    """Keep the message to what went wrong: Dynamo's "from user code:" listing names the model's layers (so
    one bug would read differently on every model); it goes to a note, which the traceback still shows."""
    text = exc.args[0] if exc.args else None
    if not isinstance(text, str):
        return
    cuts = [index for index in (text.find(suffix) for suffix in _DYNAMO_SUFFIXES) if index >= 0]
    if cuts:
        exc.args = (text[:min(cuts)].rstrip(), *exc.args[1:])
        exc.add_note(text[min(cuts):].strip())


# Reaching RECOMPILE_LIMIT is memo's own bound on the compiles of one model, not a compiler bug.
UNSUPPORTED = (
    UnsupportedPhrase(r"^Hard failure due to fail_on_recompile_limit_hit", exc_types=("FailOnRecompileLimitHit",),
                      example="Hard failure due to fail_on_recompile_limit_hit"),
)
PYTORCH_UPSTREAM = Upstream("active", "https://github.com/pytorch/pytorch/issues",
                            "PyTorch releases torch.compile several times a year (2.14.1 installed)", trackers.PYTORCH)

SPEC = BackendSpec(name="torch-compile", consumes="onnx", convert=_convert, load=_load_aot_eager, run=_run,
                   setup=_setup, distributions=DISTRIBUTIONS, group=GROUP, unsupported_patterns=UNSUPPORTED,
                   repro=ReproRecipe(), builds_on="onnx2torch", upstream=PYTORCH_UPSTREAM, messages=TORCH_MESSAGES,
                   idiom=onnx2torch_idiom(f'torch.compile({{}}, backend="{AOT_EAGER}", dynamic=False)'))

SPEC_INDUCTOR = BackendSpec(name="torch-inductor", consumes="onnx", convert=_convert, load=_load_inductor, run=_run,
                            setup=_setup, distributions=DISTRIBUTIONS, group=GROUP,
                            unsupported_patterns=UNSUPPORTED, repro=ReproRecipe(), timeout_s=240.0, sample_every=10,
                            builds_on="torch-compile",  # Dynamo traces for both: the same failure is one finding
                            upstream=PYTORCH_UPSTREAM, messages=TORCH_MESSAGES,
                            idiom=onnx2torch_idiom(f'torch.compile({{}}, backend="{INDUCTOR}", dynamic=False)'))

# Inductor on the GPU (Triton kernels), on every model: GPU compiles are seconds, and a GPU machine has the cores
# for them. Judged against the reference and against Inductor on the CPU where that runs (torch-inductor).
SPEC_INDUCTOR_CUDA = BackendSpec(name="torch-inductor-cuda", consumes="onnx", convert=_convert,
                                 load=_load_inductor_cuda, run=_run_cuda, setup=_setup_cuda,
                                 distributions=DISTRIBUTIONS, group="torch-compile-cuda",
                                 unsupported_patterns=UNSUPPORTED, repro=ReproRecipe(), timeout_s=240.0,
                                 builds_on="onnx2torch-cuda", upstream=PYTORCH_UPSTREAM, device="cuda",
                                 cpu_twin="torch-inductor", messages=TORCH_MESSAGES)
