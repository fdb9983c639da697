"""Bug signatures: masking of run-specific details, library frames, what makes two findings one bug."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from memo.backends.result import ExecutionResult
from memo.model.ir import Layer, ModelIR
from memo.oracle import Verdict
from memo.triage.describe import symptom
from memo.triage.signature import (library_frames, library_modules, normalize_message, signature,
                                   signature_parts, unsupported_feature)

ORT_TRACEBACK = """Traceback (most recent call last):
  File "/work/main/memo/backends/worker.py", line 77, in stage
    value = action()
  File "/venv/lib/python3.11/site-packages/onnxruntime/capi/onnxruntime_inference_collection.py", line {line}, in run
    return self._sess.run(output_names, input_feed, run_options)
onnxruntime.capi.onnxruntime_pybind11_state.Fail: [ONNXRuntimeError] : 1 : FAIL : bad
"""


def _result(reference: str, backends: dict[str, list[dict[str, Any]]]) -> ExecutionResult:
    """An execution result with these stages per backend (the fields signatures do not read are filler)."""
    return ExecutionResult.from_json({"artifact_dir": "gone", "reference": reference, "backends": {
        name: {"name": name, "consumes": "onnx", "stages": stages} for name, stages in backends.items()}})


def _verdict(kind: str, backend: str = "", message: str = "") -> Verdict:
    return Verdict(kind=kind, backend=backend, stage="execute", message=message)


def _crash(message: str, exc_type: str = "Fail", line: int = 220,
           backend: str = "onnxruntime") -> tuple[Verdict, ExecutionResult]:
    verdict = _verdict("crash", backend, message)
    result = _result("keras-tensorflow", {backend: [
        {"stage": "convert", "status": "ok"},
        {"stage": "execute", "status": "error", "exc_type": exc_type, "message": message,
         "traceback": ORT_TRACEBACK.format(line=line)}]})
    return verdict, result


def test_masking_removes_addresses_paths_names_shapes_and_numbers() -> None:
    text = ("Error at 0x7f3a2b1c in /usr/lib/python3/x.py: tensor 'conv2d_3/BiasAdd:0' has shape (2, 3, None) "
            "vs [1,4]; node model/dense_12/MatMul failed after 1.5e-3 s [23:54:09]")
    masked = normalize_message(text)
    for leaked in ("0x7f3a", "/usr/lib", "conv2d_3", "(2, 3, None)", "[1,4]", "dense_12", "1.5e-3", "23:54"):
        assert leaked not in masked, leaked
    assert masked.startswith("Error at 0xADDR in PATH: tensor 'NAME' has shape SHAPE vs SHAPE")


def test_torchscript_value_names_are_masked() -> None:
    # torch.onnx quotes the traced graph: the same export failure names %inputs.27 in one model, %inputs.11 in another
    first, second = (normalize_message(f"onnx memory_format support is not implemented [Caused by the value "
                                       f"'{n} defined in (%{n} : Float(*, 9, 9) = onnx::Transpose(%inputs.{i})")
                     for n, i in ((225, 27), (288, 11)))
    assert first == second and "memory_format" in first and "Caused by a value of the traced graph" in first
    assert "%NAME" in normalize_message("Failed to export a node '%inputs.27 : Long() = onnx::Cast[to=7](%x.3)'")


def test_masking_keeps_the_words_that_name_the_bug() -> None:
    masked = normalize_message("Conv2D with float32 input: kernel_size must be positive, got dense_3")
    assert "Conv2D" in masked and "float32" in masked and "kernel_size" in masked and "got NAME" in masked


def test_library_frames_are_innermost_first_inside_the_library_only() -> None:
    frames = library_frames(ORT_TRACEBACK.format(line=1), library_modules("onnxruntime"))
    assert frames == ["onnxruntime/capi/onnxruntime_inference_collection.py:run"]
    faulthandler_dump = ('Current thread 0x00007f (most recent call first):\n'
                         '  File "/v/site-packages/torch/nn/functional.py", line 9 in conv2d\n'
                         '  File "/v/site-packages/torch/nn/modules/conv.py", line 4 in forward\n')
    assert library_frames(faulthandler_dump, ("torch",))[0] == "torch/nn/functional.py:conv2d"


def test_library_modules_come_from_the_backend_registry() -> None:
    assert library_modules("keras-tensorflow") == ("keras", "tensorflow")
    assert "mxnet" in library_modules("mxnet") and "numpy" not in library_modules("mxnet")


def test_two_occurrences_differing_only_in_details_share_a_signature() -> None:
    a = _crash("Got invalid dimensions for input: dense_1 index: 1 Got: 5 Expected: 3", line=220)
    b = _crash("Got invalid dimensions for input: dense_7 index: 2 Got: 9 Expected: 4", line=230)
    assert signature(*a, None) == signature(*b, None)


def test_a_different_exception_type_stage_or_library_is_a_different_bug() -> None:
    base = signature(*_crash("bad input"), None)
    assert signature(*_crash("bad input", exc_type="InvalidArgument"), None) != base
    assert signature(*_crash("bad input", backend="onnx2torch"), None) != base
    verdict, result = _crash("bad input")
    assert signature(replace(verdict, stage="load"), result, None) != base
    assert signature(*_crash("entirely different words"), None) != base


def test_a_native_crash_is_identified_by_its_signal_and_stderr() -> None:
    verdict = _verdict("crash", "onnx2torch")
    result = _result("", {"onnx2torch": [{"stage": "execute", "status": "crash", "signal": 11,
                                           "stderr_tail": "Fatal Python error: Segmentation fault"}]})
    parts = signature_parts(verdict, result, None)
    assert parts["exception"] == "signal 11" and "Segmentation fault" in parts["message"]


def _ir(*classes: str) -> ModelIR:
    layers = [Layer("x", "InputLayer", {"batch_shape": [None, 4]})]
    for i, name in enumerate(classes):
        layers.append(Layer(f"l{i}", name, {}, [layers[-1].name]))
    return ModelIR(layers, [layers[-1].name])


def test_numeric_signature_is_the_library_pair_and_the_divergent_layer_class() -> None:
    verdict = _verdict("inconsistency", "mxnet", "12/30 elements")
    result = _result("keras-tensorflow", {})
    one = signature_parts(verdict, result, _ir("Dense", "AveragePooling1D"), divergent_layer="l1")
    other = signature_parts(replace(verdict, message="3/8 elements"), result, _ir("AveragePooling1D", "Flatten"),
                            divergent_layer="l0")
    assert one == other == {"kind": "inconsistency", "library": "mxnet", "reference": "keras-tensorflow",
                            "layer": "AveragePooling1D"}
    assert signature_parts(verdict, result, None)["layer"] == "?"  # not localized yet


def _declined(message: str) -> Verdict:
    return _verdict("unsupported", "onnx2torch", message)


def test_unsupported_feature_is_taken_from_the_message() -> None:
    assert unsupported_feature(_declined("Unsupported ops: Counter({'DepthwiseConv3D': 1})")) == "DepthwiseConv3D"
    onnx2torch = ("NotImplementedError: Converter is not implemented (OperationDescription(domain='', "
                  "operation_type='Loop', version=13))")
    assert unsupported_feature(_declined(onnx2torch)) == "Loop"
    assert unsupported_feature(_declined("AvgPool with non symmetrical padding is not implemented.")) == "AvgPool"
    mxnet = ("RuntimeError: simple_bind error. MXNetError: Error in operator causal_1/conv1d_3_1/Pad: "
             "Current implementation only supports 4-D or 5-D input.")
    assert unsupported_feature(_declined(mxnet)) == "Pad"
    assert unsupported_feature(_declined("node 'model/x' has op Erfinv, not an ONNX op")) == "Erfinv"
    # torch.onnx: aten operators in lower case, then the traced graph, whose "(type 'Tensor')" is no feature
    torch_onnx = ("Unsupported: ONNX export of operator adaptive_max_pool3d, output size that are not factor of "
                  "input size. [Caused by the value '228 defined in (%228 : Long(3)) (type 'Tensor') in the graph.")
    assert unsupported_feature(_declined(torch_onnx)) == "adaptive_max_pool3d"
    aten = "Exporting the operator 'aten::rms_norm' to ONNX opset version 20 is not supported"
    assert unsupported_feature(_declined(aten)) == "rms_norm"
    aten = "Exporting the operator 'aten::_upsample_bilinear2d_aa' to ONNX opset version 20 is not supported"
    assert unsupported_feature(_declined(aten)) == "_upsample_bilinear2d_aa"
    ort = ("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for Conv(11) node with "
           "name 'Conv__11028'")
    assert unsupported_feature(_declined(ort)) == "Conv", "the op, not the node's generated name"
    assert unsupported_feature(_declined("NotImplementedError: Operator Loop not implemented.")) == "Loop"


def test_a_printed_tensor_does_not_split_one_bug() -> None:
    head = ("Exception encountered when calling Conv2D.call(). Cannot insert a Tensor that requires grad as a "
            "constant. Consider making it a parameter or input, or detaching the gradient Tensor: (1,1,.,.) = ")
    one = head + "Columns 1 to 9 -0.2441 0.2254 -0.0184 0.0572 -0.1411 0.0942 0.0905 -0.1598 0.2061 Columns 10 to 18"
    two = head + "Columns 1 to 8 -0.12441 0.2254 -0.0184 0.0572 -0.1411 0.0942 0.0905 -0.1598 Columns 9 to 16 0.1"
    assert normalize_message(one) == normalize_message(two)
    assert "Cannot insert a Tensor that requires grad" in normalize_message(one)


def test_the_symptom_line_names_the_cause_not_a_printed_tensor() -> None:
    message = ("Exception encountered when calling Dense.call().\n\n\x1b[1mCannot insert a Tensor that requires grad "
               "as a constant.\nTensor:\nColumns 1 to 10 0.1033  0.1212 -0.1290  0.0219\n 0.0585  0.0883 -0.0444")
    line = symptom({"kind": "crash", "library": "keras-export", "stage": "convert", "exception": "RuntimeError",
                    "message": message})
    assert line == "keras-export (convert): RuntimeError: Cannot insert a Tensor that requires grad as a constant."
    mxnet = symptom({"kind": "crash", "library": "mxnet", "stage": "load", "exception": "MXNetError",
                     "message": "Traceback:\nCheck failed: shape 1 2 3 4 vs 2"})
    assert mxnet.endswith("Check failed: shape 1 2 3 4 vs 2"), "a message line with numbers is not data"


def test_the_symptom_line_is_the_cause_keras_and_torch_print_among_their_context() -> None:
    """Headlines a 20-minute campaign's report gave (2026-11-26): "TypeError: • training=False" (a line of Keras's
    argument list), "RuntimeError: [ torch.FloatTensor{100,1} ]" (the end of a printed tensor) and
    "SymbolicValueError: )  (type 'List[int]')" (the end of the graph torch's exporter prints after the cause)."""
    def line(exception: str, message: str, library: str = "keras-export") -> str:
        return symptom({"kind": "crash", "library": library, "stage": "execute", "exception": exception,
                        "error_message": message})

    keras = ("Exception encountered when calling RandomGrayscale.call().\n\n\x1b[1m'OpenVINOKerasTensor' object cannot "
             "be interpreted as an integer\x1b[0m\n\nArguments received by RandomGrayscale.call():\n  • data=array("
             "shape=(None, 71, 71, 3), dtype=float32)\n  • training=False")
    assert line("TypeError", keras, "keras-openvino").endswith(
        "TypeError: 'OpenVINOKerasTensor' object cannot be interpreted as an integer")
    tensor = ("Exception encountered when calling Dense.call().\n\n\x1b[1mCannot insert a Tensor that requires grad as "
              "a constant.\nTensor:\n-0.1718\n 0.1586\n[ torch.FloatTensor{100,1} ]\x1b[0m\n\nArguments received by "
              "Dense.call():\n  • inputs=torch.Tensor(shape=torch.Size([1, 17, 100]), dtype=float32)")
    assert line("RuntimeError", tensor).endswith("RuntimeError: Cannot insert a Tensor that requires grad as a constant.")
    exporter = ("Failed to export a node '%119 : Long(device=cpu) = onnx::Gather[axis=0](%116, %118), scope: x\n' (in "
                "list node %120 : int[] = prim::ListConstruct(%119), scope: y\n) because it is not constant.  [Caused by "
                "the value '120 defined in (%120 : int[] = prim::ListConstruct(%119), scope: y\n)' (type 'List[int]') in "
                "the TorchScript graph.]\n\n    Inputs:\n        #0: 119 defined in (%119)\n    )  (type 'Tensor')")
    assert line("SymbolicValueError", exporter).endswith(
        "SymbolicValueError: Failed to export a node because it is not constant."), "the sentence, not its end"
    assert line("KeyError", "''", "mxnet").endswith("KeyError: ''"), "quotes are part of the message"


def test_one_bug_in_the_forms_a_campaign_printed_it_is_one_signature() -> None:
    """Seen in one 45-minute campaign: torch.jit's complaint printed with the tensor laid out three ways, Keras's
    argument list cut off or not, a Python set in either order, MXNet naming each model's inputs."""
    head = ("Exception encountered when calling Dense.call().\n\n\x1b[1mCannot insert a Tensor that requires grad as a "
            "constant. Consider making it a parameter or input, or detaching the gradient\nTensor:\n")
    forms = [head + "-0.7719\n 0.7127\n-0.0581\n 0.1809\n[ torch.FloatTensor{4,1} ]\x1b[0m\n\nArguments received by "
                    "Dense.call():\n  • inputs=torch.Tensor(shape=torch.Size([1, 12, 4]), dtype=float32)\n  • training=False",
             head + "-1.2205\n[ torch.FloatTensor{1,1} ]\x1b[0m\n\nArguments received by Dense.call():\n  • inputs=torch",
             head + "Columns 1 to 10-0.3385  0.3125 -0.0255  0.0793 -0.1957  0.1307  0.1255 -0.2216  0.2857  0.0801\n",
             head + "(1,.,.) = \n 0.7477 -0.4548\n  0.8708  0.4787\n[ torch.FloatTensor{1,2,2} ]\x1b[0m"]
    masked = {normalize_message(form) for form in forms}
    assert masked == {"Exception encountered when calling Dense.call(). Cannot insert a Tensor that requires grad as a "
                      "constant. Consider making it a parameter or input, or detaching the gradient Tensor: VALUES"}
    rfft = "Failed to convert node 'x' (op RFFT): only allows ComplexAbs as consumer not {}"
    assert (normalize_message(rfft.format("{'Imag', 'Real'}")) == normalize_message(rfft.format("{'Real', 'Imag'}"))
            != normalize_message(rfft.format("{'Real', 'Mul'}")))
    bind = ("simple_bind error. Arguments:\n{}\nMXNetError: Error in operator node_3: Current implementation expects "
            "padding on the first two axes to be zero.")
    assert (normalize_message(bind.format("input_layer: (1, 28, 28, 1)"))
            == normalize_message(bind.format("input: (1, 3)\nindices: (1, 5)")))
    assert "padding on the first two axes" in normalize_message(bind.format("input: (1, 3)"))


def test_openvino_node_counters_do_not_split_one_bug() -> None:
    message = ("Exception encountered when calling GRU.call(). Check 'element::Type::merge(result_et, "
               "get_input_element_type(1), get_input_element_type(2))' failed at src/core/src/op/select.cpp:57: "
               "While validating node 'opset1::Select Select_{0} (opset8::Gather Gather_{1}[?,1]:boolean[?,1], "
               "opset1::Add Add_{2}[?,64]:f32[?,64]) -> (dynamic[...])'")
    first, second = (normalize_message(message.format(*ids)) for ids in ((5262773, 5262772, 5262771),
                                                                         (6240392, 6240391, 6240390)))
    assert first == second and "Gather_" not in first and "GRU.call()" in first
