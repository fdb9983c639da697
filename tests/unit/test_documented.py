"""Documented (by-design) differences and upstream status: the declarations, their examples, the matcher.

No library is imported: specs are declarations, the matcher reads the reduced model's IR.
"""
from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from memo.backends import BACKENDS, CONVERTERS, load_spec
from memo.backends.documented import covers, documented_difference, upstream_of
from memo.backends.spec import (UNKNOWN_UPSTREAM, UPSTREAM_STATUSES, DifferenceExample, DocumentedDifference,
                                Upstream)
from memo.kinds import VERDICT_KINDS
from memo.model.ir import INPUT_CLASS, Layer, ModelIR

ALL_SPECS = [*BACKENDS, *CONVERTERS]
FLOAT16 = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float16"}}


def _ir(layers: tuple[tuple[str, dict[str, Any]], ...]) -> ModelIR:
    """A chain model: an input, then ``layers`` in order, named ``layer_0``, ``layer_1``, ..."""
    nodes = [Layer("input", INPUT_CLASS, {"batch_shape": [None, 4]})]
    for index, (class_name, config) in enumerate(layers):
        nodes.append(Layer(f"layer_{index}", class_name, dict(config), [nodes[-1].name]))
    return ModelIR(nodes, [nodes[-1].name])


def _find(library: str, example: DifferenceExample) -> DocumentedDifference | None:
    layer = None if example.layer is None else f"layer_{example.layer}"
    return documented_difference(library, example.kind, _ir(example.layers), layer, example.message)


DECLARED = [(name, declared) for name in ALL_SPECS for declared in load_spec(name).documented_differences]


def test_some_differences_are_declared() -> None:
    assert {name for name, _ in DECLARED} >= {"keras-torch", "keras-export", "onnxruntime-keras-export", "mxnet"}


@pytest.mark.parametrize("name,declared", DECLARED, ids=[f"{n}-{i}" for i, (n, _) in enumerate(DECLARED)])
def test_every_declaration_is_cited_and_matches_its_example(name: str, declared: DocumentedDifference) -> None:
    assert declared.behaviour and declared.source and declared.quote
    assert set(declared.kinds) <= set(VERDICT_KINDS) and declared.example.kind in declared.kinds
    assert _find(name, declared.example) is declared


# ----------------------------------------------------------------- bicubic kernel (Keras on torch, its export)
BICUBIC = (("Resizing", {"height": 7, "width": 7, "interpolation": "bicubic"}),)
INCONSISTENT = "191/196 elements outside atol=0.001*scale rtol=0.001 (scale 1, max |diff| 0.14)"


@pytest.mark.parametrize("library", ["keras-torch", "keras-export", "onnxruntime-keras-export"])
def test_bicubic_kernel_is_documented_for_the_torch_path(library: str) -> None:
    found = documented_difference(library, "inconsistency", _ir(BICUBIC), "layer_0", INCONSISTENT)
    assert found is not None and "-0.75" in found.quote
    up = (("UpSampling2D", {"size": [2, 2], "interpolation": "bicubic"}),)
    assert documented_difference(library, "inconsistency", _ir(up), None, INCONSISTENT) is found


@pytest.mark.parametrize("library", ["openvino", "keras-openvino", "onnxruntime"])
def test_bicubic_on_a_file_that_fixes_the_kernel_stays_a_bug(library: str) -> None:
    # tf2onnx's Resize says cubic_coeff_a=-0.5, exclude_outside=1: an engine computing otherwise ignores the spec
    assert documented_difference(library, "inconsistency", _ir(BICUBIC), "layer_0", INCONSISTENT) is None


@pytest.mark.parametrize("library", ["onnx2torch", "onnx2pytorch"])
def test_a_torch_converter_that_warns_it_ignores_resize_attributes_is_documented(library: str) -> None:
    # both warn at conversion that torch's interpolate has no such attribute and "the results might differ"
    found = documented_difference(library, "inconsistency", _ir(BICUBIC), "layer_0", INCONSISTENT)
    assert found is not None and "might differ" in found.quote
    assert documented_difference(library, "crash", _ir(BICUBIC), "layer_0", "RuntimeError: x") is None
    dense = (("Dense", {"units": 3}),)
    assert documented_difference(library, "inconsistency", _ir(dense), "layer_0", INCONSISTENT) is None


def test_bicubic_near_misses() -> None:
    bilinear = (("Resizing", {"height": 7, "width": 7, "interpolation": "bilinear"}),)
    assert documented_difference("keras-torch", "inconsistency", _ir(bilinear), "layer_0", INCONSISTENT) is None
    assert documented_difference("keras-torch", "crash", _ir(BICUBIC), "layer_0", "RuntimeError: x") is None
    # localized to another layer than the resize: that layer's difference is not the kernel's
    two = (*BICUBIC, ("Dense", {"units": 3}))
    assert documented_difference("keras-torch", "inconsistency", _ir(two), "layer_1", INCONSISTENT) is None
    assert documented_difference("keras-torch", "inconsistency", _ir(two), "layer_0", INCONSISTENT) is not None
    assert documented_difference("keras-torch", "inconsistency", _ir(two), None, INCONSISTENT) is not None
    assert documented_difference("keras-torch", "inconsistency", None, None, INCONSISTENT) is None  # no model


# ----------------------------------------------------------------- MXNet's importer has no LSTM
def test_mxnet_lstm_key_error_is_documented_also_wrapped() -> None:
    assert documented_difference("mxnet", "crash", _ir((("LSTM", {"units": 4}),)), None, "KeyError: ''")
    wrapped = (("Bidirectional", {"layer": {"class_name": "LSTM", "config": {"units": 3}}}),)
    assert documented_difference("mxnet", "crash", _ir(wrapped), None, "KeyError: ''") is not None


def test_mxnet_lstm_near_misses() -> None:
    lstm = _ir((("LSTM", {"units": 4}),))
    assert documented_difference("mxnet", "crash", _ir((("GRU", {"units": 4}),)), None, "KeyError: ''") is None
    assert documented_difference("mxnet", "crash", lstm, None, "KeyError: 'lstm/W'") is None
    assert documented_difference("mxnet", "inconsistency", lstm, None, "KeyError: ''") is None
    assert documented_difference("onnx2torch", "crash", lstm, None, "KeyError: ''") is None


# ----------------------------------------------------------------- Keras's export is float32-only
def test_float16_export_refusal_needs_a_float16_layer_and_a_dtype_message() -> None:
    dense16 = _ir((("Dense", {"units": 4, "dtype": FLOAT16}),))
    dense32 = _ir((("Dense", {"units": 4, "dtype": "float32"}),))
    half = "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'"
    assert documented_difference("keras-export", "crash", dense16, None, half) is not None
    assert documented_difference("keras-export", "crash", _ir((("Dense", {"units": 4, "dtype": "bfloat16"}),)),
                                 None, "Type Error: Type (tensor(bfloat16)) of input parameter") is not None
    assert documented_difference("keras-export", "crash", dense32, None, half) is None
    # Conv3D fails to export in float32 too; in float16 its message merely prints a Half tensor: a finding
    conv3d = ("SymbolicValueError: onnx memory_format support is not implemented  [Caused by the value 'kernel.3 "
              "defined in (%kernel.3 : Half(2, 1, 2, 2, 2, strides=[1, 2, 8, 4, 2], requires_grad=1, device=cpu)")
    conv16 = _ir((("Conv3D", {"filters": 2, "kernel_size": [2, 2, 2], "dtype": FLOAT16}),))
    assert documented_difference("keras-export", "crash", conv16, None, conv3d) is None


def test_unregistered_library_declares_nothing() -> None:
    assert documented_difference("my-plugin", "inconsistency", _ir(BICUBIC), "layer_0", INCONSISTENT) is None


def test_a_declaration_without_layer_conditions_needs_no_model() -> None:
    anywhere = DocumentedDifference("b", "s", "q", ("crash",), DifferenceExample("crash"), message=r"^boom$")
    assert covers(anywhere, "crash", None, None, "boom")
    assert not covers(anywhere, "crash", None, None, "boom!")


# ----------------------------------------------------------------- upstream status
@pytest.mark.parametrize("name", ALL_SPECS)
def test_every_registered_library_declares_its_upstream(name: str) -> None:
    upstream = upstream_of(name)
    assert upstream is not UNKNOWN_UPSTREAM and upstream.status in UPSTREAM_STATUSES
    assert upstream.tracker.startswith("https://") and upstream.reason


def test_upstream_facts_and_plugin_fallback() -> None:
    assert upstream_of("mxnet").status == "retired" and "1.9.1" in upstream_of("mxnet").reason
    assert upstream_of("onnx2torch").status == "maintenance"
    assert upstream_of("a-plugin") == Upstream("active", "", "not declared by its spec")
    with pytest.raises(ValueError):
        Upstream("abandoned")


def test_matcher_imports_no_dl_library() -> None:
    code = ("import sys, memo.backends.documented as d;"
            "[d.upstream_of(n) for n in ('mxnet', 'keras-export', 'tf2onnx')];"
            "heavy = {'tensorflow', 'torch', 'jax', 'keras', 'onnx', 'mxnet', 'openvino', 'onnxruntime'};"
            "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_an_openvino_plugin_failure_reported_by_keras_on_openvino_is_openvinos() -> None:
    from memo.backends.documented import delegated_library

    plugin = ("Exception from src/inference/src/cpp/core.cpp:117:\nException from src/inference/src/dev/plugin.cpp:54:"
              "\nCheck 'active.size() != reg_pool.size()' failed at src/common/snippets/src/lowered/pass/"
              "assign_registers.cpp:201:\nCan't allocate registers for a snippet: not enough registers")  # p30
    assert delegated_library("keras-openvino", plugin) == "openvino"
    assert delegated_library("keras-openvino", "Exception from src/plugins/intel_cpu/src/node.cpp:1: x") == "openvino"
    # a shape helper Keras's backend called wrongly stays Keras's
    core = ("Exception encountered when calling MelSpectrogram.call(). Exception from "
            "src/core/src/partial_shape.cpp:261: to_shape was called on a dynamic shape")
    assert delegated_library("keras-openvino", core) is None
    assert delegated_library("keras-jax", plugin) is None and delegated_library("a-plugin", plugin) is None
