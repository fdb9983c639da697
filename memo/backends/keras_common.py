"""The Keras backends (TensorFlow, JAX, torch, OpenVINO) share one implementation; only ``KERAS_BACKEND`` differs.

Keras fixes its backend at import, so each is its own worker process. All of them load the very same
``.keras`` file (written once by the orchestrator), so they run identical weights.

Keras (and JAX) are imported inside the functions below, which run in the worker only: the orchestrator
imports this module to read the specs and must never import a library under test.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import sys
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from memo.backends import trackers
from memo.backends.cuda import DEVICE_CPU, DEVICE_CUDA, device_banner, set_jax_precision, set_torch_precision
from memo.backends.idioms import EAGER, PREDICT, Idiom, keras_idiom
from memo.backends.openvino_backend import CPU_CONFIG as OPENVINO_CPU_CONFIG
from memo.backends.spec import (BackendSpec, DifferenceExample, DocumentedDifference, MessageMask, MessageRules,
                                ModelInputs, ReproRecipe, UnsupportedPhrase, Upstream)
from memo.backends.torch_common import TORCH_MESSAGES
from memo.backends.training import training_stages
from memo.backends.versions import distribution_versions
from memo.library_coverage.measured import keras_code
from memo.model.keras_runtime import cache_attr_skipsets

UNSAFE_VARIABLE = "MEMO_KERAS_UNSAFE"


def _load(path: Path) -> Any:
    import keras

    # safe_mode: never deserialize Python code from the artifact, unless the user allowed it (memo run
    # --unsafe sets MEMO_KERAS_UNSAFE=1 for the workers).
    safe_mode = os.environ.get(UNSAFE_VARIABLE) != "1"
    with _zero_initializers():
        return keras.saving.load_model(path, compile=False, safe_mode=safe_mode)


@contextlib.contextmanager
def _zero_initializers() -> Iterator[None]:
    """Create variables as zeros while a model loads: the file's weights overwrite them anyway.

    On JAX every initializer call compiles an XLA program per new shape (seconds for a model with
    orthogonal and glorot initializers); mutants keep bringing new shapes, so this cost would recur.
    """
    from keras.src import backend

    variable_class = backend.Variable
    original = variable_class.__dict__.get("_initialize_with_initializer")

    def zeros(self: Any, initializer: Any) -> None:
        self._initialize(self._convert_to_tensor(np.zeros(self._shape, dtype=self._dtype)))

    variable_class._initialize_with_initializer = zeros
    try:
        yield
    finally:
        if original is None:
            del variable_class._initialize_with_initializer
        else:
            variable_class._initialize_with_initializer = original


def _run(model: Any, inputs: ModelInputs) -> list[Any]:
    import keras

    arrays = [inputs[name] for name in inputs]
    call = _COMPILED_CALLS.get(keras.backend.backend())
    outputs = call(model, arrays) if call else model(arrays, training=False)
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    return [keras.ops.convert_to_numpy(out) for out in outputs]


def _jax_call(model: Any, arrays: list[Any]) -> Any:
    """Keras on JAX as ``model.predict`` runs it: the whole model as one jitted XLA program.

    Eager JAX compiles every primitive for every new shape; one program per model is both what users
    run and cheaper on memo's mutants (docs/benchmarks.md, "Campaign").
    """
    import jax

    def forward(trainable: Any, non_trainable: Any, xs: Any) -> Any:
        return model.stateless_call(trainable, non_trainable, xs, training=False)[0]

    trainable = [v.value for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]
    return jax.jit(forward)(trainable, non_trainable, arrays)


def _openvino_call(model: Any, arrays: list[Any]) -> Any:
    """Keras on OpenVINO as ``model.predict`` runs it: the model built into one OpenVINO graph and compiled for
    the CPU (an eager call would compile each output separately, with the inputs folded in as constants).
    Keras compiles with ``openvino.compile_model`` and no configuration; memo's for OpenVINO's CPU plugin (the
    openvino backend's: one thread, float32 inference, not the bfloat16 the plugin picks on CPUs with
    AVX512-BF16 or AMX) is added to it."""
    import openvino
    trainer = _openvino_trainer()

    original = openvino.compile_model
    if not getattr(original, "memo_config", False):
        def configured(ov_model: Any, device: Any = "CPU", config: Any = None, **kwargs: Any) -> Any:
            return original(ov_model, device, {**OPENVINO_CPU_CONFIG, **(config or {})}, **kwargs)

        configured.memo_config = True  # type: ignore[attr-defined]
        trainer.ov.compile_model = configured  # trainer.ov is the openvino module
    return model.predict_on_batch(arrays)


# Where Keras on OpenVINO's trainer lives: inside Keras up to 3.15, in the ``keras-openvino`` package that
# keras-nightly loads as a pluggable backend since (``keras.src.utils.module_utils.get_pluggable_backend_module``).
OPENVINO_TRAINER_MODULES = ("keras.src.backend.openvino.trainer", "keras_openvino.src.trainer")


def _openvino_trainer() -> Any:
    """The module whose ``ov`` is the openvino module Keras's OpenVINO trainer compiles with."""
    for name in OPENVINO_TRAINER_MODULES:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    raise ModuleNotFoundError(f"Keras on OpenVINO's trainer: none of {', '.join(OPENVINO_TRAINER_MODULES)}")


_COMPILED_CALLS = {"jax": _jax_call, "openvino": _openvino_call}


def _warm_up(keras: Any) -> None:
    """Run a tiny model once, so the backend's one-time initialization (JAX/XLA's takes seconds) happens at
    worker start, under the start-up timeout, and not inside the first model's per-model timeout."""
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    keras.ops.convert_to_numpy(model(np.zeros((1, 4), dtype="float32"), training=False))


# What each Keras backend says when it declines on purpose, besides NotImplementedError. TensorFlow has its
# own "not implemented" status (UnimplementedError): a kernel missing for a device, layout or dtype.
UNSUPPORTED: dict[str, tuple[UnsupportedPhrase, ...]] = {
    "tensorflow": (UnsupportedPhrase(r".", exc_types=("UnimplementedError",),
                                     example="The Conv2D op currently only supports the NHWC tensor format on "
                                             "the CPU. The op was given the format: NCHW"),),
    "jax": (),
    "torch": (UnsupportedPhrase(r"is not supported by the PyTorch backend", exc_types=("ValueError",),
                                example="Resizing with Lanczos interpolation is not supported by the PyTorch "
                                        "backend. Received: interpolation=lanczos3."),),
}


# Bicubic resizing on Keras's torch backend is torch.nn.functional.interpolate(mode="bicubic"): PyTorch's cubic
# kernel (a = -0.75, border samples clamped), where TensorFlow's (the reference's) is Keys' a = -0.5 with the
# samples outside the image dropped and the weights renormalized; keras.ops.image.resize names only "bicubic".
# Keras's own ONNX export (on torch) writes exactly that: Resize(cubic_coeff_a=-0.75, exclude_outside=0).
# Evidence (memo run, Resizing(7, 7, interpolation="bicubic") on (4, 4, 2)): keras-torch 191/196 elements
# outside tolerance, max |diff| 0.14, and keras-export the same on ONNX Runtime; keras-jax and ONNX Runtime
# on tf2onnx's file (cubic_coeff_a=-0.5, exclude_outside=1) agree with TensorFlow. onnx2torch, onnx2pytorch
# (0.14) and OpenVINO (0.04) differ on that same file, whose attributes fix the kernel: those stay bugs.
BICUBIC_KERNEL = DocumentedDifference(
    behaviour="bicubic resizing uses PyTorch's cubic kernel (a = -0.75, border samples clamped) where "
              "TensorFlow uses Keys' kernel (a = -0.5, samples outside the image excluded); Keras's resize "
              "does not fix the kernel",
    source="ONNX operator Resize, attribute cubic_coeff_a (https://onnx.ai/onnx/operators/onnx__Resize.html)",
    quote="The coefficient 'a' used in cubic interpolation. Two common choice are -0.5 (in some cases of "
          "TensorFlow) and -0.75 (in PyTorch).",
    kinds=("inconsistency",), layer_classes=("Resizing", "UpSampling2D"),
    attributes=(("interpolation", ("bicubic",)),),
    example=DifferenceExample("inconsistency", (("Resizing", {"height": 7, "width": 7, "interpolation": "bicubic"}),),
                              0, "191/196 elements outside atol=0.001*scale rtol=0.001 (scale 1, max |diff| 0.14)"))

# By-design differences per Keras backend (memo.backends.documented).
DOCUMENTED: dict[str, tuple[DocumentedDifference, ...]] = {"torch": (BICUBIC_KERNEL,)}
KERAS_UPSTREAM = Upstream("active", "https://github.com/keras-team/keras/issues",
                          "Keras 3 is released regularly (3.15.1 installed); its backends' bugs are filed to Keras",
                          trackers.KERAS)

# Per Keras backend, environment variables of its worker (and of its repro scripts, which copy a spec's env).
# JAX: XLA keeps every HLO pass (fusion, algebraic simplification, layout: where XLA's own bugs live) but
# generates machine code with LLVM at -O0. Each mutant is compiled once and run once on a batch of two, so
# compilation is the cost: it halves XLA's compile CPU, and the outputs differ by float32 rounding only
# (docs/benchmarks.md).
# TensorFlow: oneDNN's CPU kernels on every x86 machine. TensorFlow turns them on by itself only on CPUs with
# AVX-512 or AMX features, and its other kernels behave differently: on an AVX2-only machine DepthwiseConv2D
# refuses unequal float32 strides (the reference then fails on one mutant in 20) and
# adaptive max pooling no longer dies of SIGFPE. The reference, tf2onnx's trace and the repro scripts then
# behave the same on every machine, as a campaign's seed promises.
BACKEND_ENV: dict[str, dict[str, str]] = {
    "jax": {"XLA_FLAGS": "--xla_backend_optimization_level=0"},
    "tensorflow": {"TF_ENABLE_ONEDNN_OPTS": "1"},
}
# What a minimal script's comment says of each (t60's reader asked why the script sets XLA_FLAGS).
ENV_REASONS: dict[str, str] = {
    "XLA_FLAGS": "XLA_FLAGS: machine code at -O0, every HLO pass kept, as memo's workers compile",
    "TF_ENABLE_ONEDNN_OPTS": "oneDNN's CPU kernels, which TensorFlow picks by itself only on AVX-512/AMX CPUs",
    "TF2ONNX_CATCH_ERRORS": "TF2ONNX_CATCH_ERRORS=FALSE: an optimizer's exception is raised, not logged and skipped",
}


# Failures of a Keras backend that belong to the library under it. OpenVINO's exceptions name their C++ source:
# one raised through a device plugin (src/inference/src/dev/plugin.cpp, src/plugins/...: "Can't allocate
# registers for a snippet" compiling a GRU) is OpenVINO compiling a valid graph, which no code of Keras's backend
# can cause; one from src/core (a shape helper Keras's backend called on a dynamic shape) stays Keras's.
DELEGATES: dict[str, tuple[tuple[str, str], ...]] = {
    "openvino": ((r"Exception from src/(?:plugins/|inference/src/dev/plugin\.cpp)", "openvino"),),
}


# Keras backends whose numbers another registered backend's kernels decide (BackendSpec.computes_with): Keras on
# OpenVINO compiles the model into one OpenVINO graph, run by the same plugin as the openvino backend (otherwise
# one Interpolate defect is filed against both, equally far from float64 in each).
COMPUTES_WITH: dict[str, str] = {"openvino": "openvino"}


# How Keras's failures read (BackendSpec.messages). Its list of the failing call's arguments (input shapes, dtypes,
# flags) is cut off at different points when the message is long: the error is what comes before it. Its note on
# the failing call names the layer class the failure happened in.
KERAS_ARGUMENTS = MessageMask(r"\s*Arguments received by [\w.]+\(\):.*$", "",
                              example="Exception encountered when calling Dense.call(). Negative dimension size "
                                      "Arguments received by Dense.call(): • inputs=tf.Tensor(shape=(2, 3))")
KERAS_FAILING_CALL = r"Exception encountered when calling (?P<cls>\w+)\.call\(\)"
# Per Keras backend, how the library under it fails, and the packages of its frames where a distribution's name is
# not its package's (TensorFlow's CPU wheel, tensorflow-cpu, is the package tensorflow).
BACKEND_MESSAGES: dict[str, MessageRules] = {"torch": TORCH_MESSAGES}
FRAME_MODULES: dict[str, tuple[str, ...]] = {"tensorflow": ("keras", "tensorflow")}


def keras_messages(keras_backend: str) -> MessageRules:
    """How Keras on ``keras_backend`` fails: Keras's mask and failing-call note, then its backend library's."""
    under = BACKEND_MESSAGES.get(keras_backend, MessageRules())
    return MessageRules(masks=(KERAS_ARGUMENTS, *under.masks), failing_classes=(KERAS_FAILING_CALL,),
                        declined_features=under.declined_features, frame_modules=FRAME_MODULES.get(keras_backend, ()))



# Where each Keras backend runs its kernels, by device. A GPU machine's torch and JAX pick the GPU by themselves:
# the CPU backends are pinned to the CPU (so that they stay the CUDA backends' CPU twins), the CUDA ones to the GPU.
# XLA's -O0 code generation (BACKEND_ENV) is a CPU compile-time saving; on the GPU XLA compiles as users run it.
# JAX would otherwise reserve 75 % of the GPU's memory in each worker that touches it.
DEVICE_ENV: dict[tuple[str, str], dict[str, str]] = {
    ("torch", DEVICE_CPU): {"KERAS_TORCH_DEVICE": "cpu"},
    ("torch", DEVICE_CUDA): {"KERAS_TORCH_DEVICE": "cuda"},
    ("jax", DEVICE_CPU): {"JAX_PLATFORMS": "cpu"},
    ("jax", DEVICE_CUDA): {"JAX_PLATFORMS": "cuda", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
}


def _load_cuda(path: Path) -> Any:
    """:func:`_load` on a Keras GPU backend, with the GPU's precision switches set first (strict float32 unless the
    run asks for TF32) and the device named on stderr."""
    import keras

    if keras.backend.backend() == "jax":
        set_jax_precision()
    else:
        set_torch_precision()
    print(device_banner(), file=sys.stderr, flush=True)
    return _load(path)


def _check_device(keras_backend: str, device: str) -> None:
    """Fail the worker's start where the library does not run on ``device`` (no silent CPU fall-back)."""
    if device != DEVICE_CUDA:
        return
    if keras_backend == "jax":
        import jax

        if not any(d.platform == "gpu" for d in jax.devices()):
            raise RuntimeError(f"JAX sees no GPU (devices: {jax.devices()})")
    else:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError(f"torch {torch.__version__} sees no CUDA device")


# Keras backends with a trainer of their own (Keras on OpenVINO runs inference only): the training check's.
TRAINS = frozenset({"tensorflow", "jax", "torch"})


def keras_spec(keras_backend: str, libraries: tuple[str, ...], device: str = DEVICE_CPU) -> BackendSpec:
    """The spec of Keras running on ``keras_backend`` (tensorflow, jax or torch), on ``device`` (cpu or cuda)."""
    distributions = ("keras", *libraries)

    def setup() -> dict[str, str]:
        import keras

        if keras.backend.backend() != keras_backend:
            raise RuntimeError(f"Keras started on {keras.backend.backend()!r}, expected {keras_backend!r}")
        _check_device(keras_backend, device)
        cache_attr_skipsets()
        _warm_up(keras)
        return distribution_versions(distributions)

    name = f"keras-{keras_backend}" + ("" if device == DEVICE_CPU else f"-{device}")
    backend_env = BACKEND_ENV.get(keras_backend, {}) if device == DEVICE_CPU else {}
    return BackendSpec(name=name, consumes="keras", load=_load if device == DEVICE_CPU else _load_cuda, run=_run,
                       setup=setup, distributions=distributions,
                       env={"KERAS_BACKEND": keras_backend, **backend_env,
                            **DEVICE_ENV.get((keras_backend, device), {})},
                       unsupported_patterns=UNSUPPORTED.get(keras_backend, ()), repro=ReproRecipe(),
                       documented_differences=DOCUMENTED.get(keras_backend, ()), upstream=KERAS_UPSTREAM,
                       delegates=DELEGATES.get(keras_backend, ()), computes_with=COMPUTES_WITH.get(keras_backend),
                       messages=keras_messages(keras_backend), device=device,
                       cpu_twin=None if device == DEVICE_CPU else f"keras-{keras_backend}",
                       library_code=(keras_code(keras_backend),),
                       idiom=KERAS_IDIOMS.get(keras_backend) if device == DEVICE_CPU else None,
                       train=training_stages if keras_backend in TRAINS else None)


# How a bug's minimal script calls Keras on each backend (memo.filing): eagerly as the worker does, or by predict
# where the worker runs one compiled program; a failure of the traced call at stage "tf-function" is tf.function's.
KERAS_IDIOMS: dict[str, Idiom] = {
    "tensorflow": keras_idiom("tensorflow", EAGER, stage_calls=(
        ("tf-function", ("actual = tf.function(lambda x: model(x, training=False))(x)",)),)),
    "torch": keras_idiom("torch", EAGER),
    "jax": keras_idiom("jax", PREDICT),
    "openvino": keras_idiom("openvino", PREDICT),
}
