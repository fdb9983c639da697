"""Issue titles and the Expected part from real messages (issue 38, item 4): the layer named with its wrapper first,
the library's message as a full clause (never the end of a sentence a quoted graph split), a crash's Expected saying
what the reference library returned, and a numeric issue quoting the numbers its minimal script prints. No library
runs here: the checks are given."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from memo.filing.check import MinimalScript
from memo.filing.folder import BugFolder
from memo.filing.issue import culprit, render_issue, title
from memo.filing.observed import actual, message_head
from memo.model.ir import Layer, ModelIR
from memo.text import without_listed_alternatives
from memo.triage.describe import symptom

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
KERAS_CRASH = "crash-keras-torch-7db6bd8ece"
ENGINE_CRASH = "crash-onnxruntime-53e3373378"
NUMERIC = "inconsistency-keras-torch-46585e4668"
# torch.onnx's complaint as Keras's ONNX export raised it (2026-11-26 campaign; tests/unit/test_triage_signature.py)
EXPORTER = ("Failed to export a node '%119 : Long(device=cpu) = onnx::Gather[axis=0](%116, %118), scope: x\n' (in "
            "list node %120 : int[] = prim::ListConstruct(%119), scope: y\n) because it is not constant.  [Caused by "
            "the value '120 defined in (%120 : int[] = prim::ListConstruct(%119), scope: y\n)' (type 'List[int]') in "
            "the TorchScript graph.]\n\n    Inputs:\n        #0: 119 defined in (%119)\n    )  (type 'Tensor')")


def _folder(tmp_path: Path, name: str, ir: ModelIR | None = None, **changes: object) -> BugFolder:
    shutil.copytree(CORPUS / "bugs" / name, tmp_path / name)
    info = json.loads((tmp_path / name / "bug.json").read_text())
    info.update(changes)
    (tmp_path / name / "bug.json").write_text(json.dumps(info))
    if ir is not None:
        (tmp_path / name / "ir.json").write_text(ir.dumps())
    return BugFolder.read(tmp_path / name)


def _captured(case: str) -> str:
    """The first failing stage's message of a captured execution in tests/corpus."""
    result = json.loads((CORPUS / case).read_text())["result"]
    return next(stage["message"] for backend in result["backends"].values() for stage in backend["stages"]
                if stage.get("status") == "error")


def _wrapped(wrapper: str, inner: str, config: dict[str, object]) -> ModelIR:
    return ModelIR([Layer("input", "InputLayer", {"batch_shape": [None, 8, 8, 3], "dtype": "float32"}),
                    Layer("wrapped", wrapper, {"layer": {"class_name": inner, "config": config}}, ["input"])],
                   ["wrapped"], "m")


def test_a_sentence_a_quoted_graph_split_is_quoted_whole_without_the_graph(tmp_path: Path) -> None:
    folder = _folder(tmp_path, KERAS_CRASH, library="keras-export", exception="SymbolicValueError",
                     error_message=EXPORTER, message=EXPORTER)
    text = title(folder, MinimalScript(reason="not checked"))
    assert text.endswith("SymbolicValueError: Failed to export a node because it is not constant."), text
    assert "%" not in text and "::" not in text


def test_a_checked_condition_before_the_cause_is_left_out(tmp_path: Path) -> None:
    message = _captured("adaptive_pool3d_mxnet.json")
    assert "Index type must be set for take operator" in message
    folder = _folder(tmp_path, ENGINE_CRASH, library="mxnet", exception="RuntimeError", error_message=message,
                     message=message)
    text = title(folder, MinimalScript(reason="not checked"))
    assert text.endswith("RuntimeError: Index type must be set for take operator"), text


def test_a_nested_onnxruntime_error_is_titled_by_its_innermost_status(tmp_path: Path) -> None:
    # p41's crash-onnxruntime-33cb1a009a: ORT re-raises a kernel's enforcement inside its initialization error
    message = ("[ONNXRuntimeError] : 1 : FAIL : Exception during initialization: /onnxruntime_src/onnxruntime/core/"
               "providers/cpu/tensor/upsamplebase.h:314 onnxruntime::UpsampleBase::UpsampleBase(const KernelInfoType&) "
               "[with KernelInfoType = onnxruntime::OpKernelInfo] [ONNXRuntimeError] : 1 : FAIL : upsamplebase.h:579 "
               "ScalesValidation 'Cubic' mode only supports:\n  * 2-D inputs ('Bicubic') or\n  * 4-D inputs with the "
               "corresponding outermost 2 scale values being 1\nin the Resize operator")
    folder = _folder(tmp_path, ENGINE_CRASH, exception="Fail", error_message=message, message=message)
    text = title(folder, MinimalScript(reason="not checked"))
    assert text.endswith("Fail: ScalesValidation 'Cubic' mode only supports"), text


def test_the_onnxruntime_title_states_the_sentence_in_words(tmp_path: Path) -> None:
    text = title(_folder(tmp_path, ENGINE_CRASH), MinimalScript(reason="not checked"))
    assert text.startswith("[onnxruntime] ") and text.endswith("Fail: Pad should be smaller than kernel."), text


def test_a_keras_message_in_bold_keeps_its_whole_cause(tmp_path: Path) -> None:
    message = _captured("hidden_crash.json")
    folder = _folder(tmp_path, KERAS_CRASH, library="keras-jax", exception="TypeError", error_message=message,
                     message=message, layer_class="Activation")
    text = title(folder, MinimalScript(reason="not checked"))
    assert "threshold() missing 2 required positional arguments" in text and "Arguments received" not in text, text


def test_a_wrapper_is_named_first_with_the_layer_it_wraps(tmp_path: Path) -> None:
    spectral = _wrapped("SpectralNormalization", "Conv2DTranspose", {"filters": 2, "kernel_size": 3})
    message = ("Exception encountered when calling Conv2DTranspose.call().\n\n\x1b[1mInput 0 of layer is incompatible"
               "\x1b[0m")
    folder = _folder(tmp_path / "a", KERAS_CRASH, spectral, error_message=message, message=message,
                     layer_class="Conv2D")
    assert culprit(folder) == "SpectralNormalization(Conv2DTranspose)"
    assert title(folder).startswith("[keras-torch] SpectralNormalization(Conv2DTranspose): RuntimeError: ")
    bidirectional = _wrapped("Bidirectional", "LSTM", {"units": 4})
    folder = _folder(tmp_path / "b", KERAS_CRASH, bidirectional, error_message="boom", message="boom",
                     layer_class="Bidirectional")
    assert culprit(folder) == "Bidirectional(LSTM)", "the localized wrapper, with the layer it wraps"


def test_a_crashs_expected_part_says_what_the_reference_returned(tmp_path: Path) -> None:
    text = render_issue(_folder(tmp_path, ENGINE_CRASH), MinimalScript(reason="not checked"))
    expected = text[text.index("### Expected behavior"):]
    assert expected.split("\n\n")[1].startswith(
        "The model runs: Keras on TensorFlow (keras-tensorflow) runs this model and returns output of shape "
        "(2, 21, 21, 31). Instead onnxruntime raises `Fail`."), expected


def test_a_numeric_issue_quotes_the_numbers_its_script_printed(tmp_path: Path) -> None:
    folder = _folder(tmp_path, NUMERIC)
    output = ("keras 3.15.1 torch 2.9.0\nmax |actual - expected|: 0.0213 expected magnitude: 0.41\n"
              "Traceback (most recent call last):\n  File \"bug_repro.py\", line 20, in <module>\nAssertionError: \n"
              "Not equal to tolerance rtol=0.001, atol=0.001\n\nMismatched elements: 21 / 32 (65.6%)\n"
              "Max absolute difference among violations: 0.0213\n ACTUAL: array([1.0])\n DESIRED: array([2.0])\n")
    checked = MinimalScript("import keras\n", {}, reproduces=True, versions="keras 3.15.1 torch 2.9.0", output=output,
                            source="attached")
    text = render_issue(folder, checked)
    assert "max |actual - expected|: 0.0213 expected magnitude: 0.41" in text
    actual = next(line for line in text.splitlines() if "Actual:" in line)
    assert "Max absolute difference among violations: 0.0213" in actual and "0.0166" not in actual
    assert "0.0166" not in text, "the campaign's figures on the unreduced model are not quoted"
    assert "not printed by the script" in text  # the float64 truth's table says whose figures those are


def test_an_importers_crash_is_titled_by_the_operator_its_dispatch_was_converting(tmp_path: Path) -> None:
    """m40's crash-onnx2pytorch-7b11d35ea8: "Unexpected number of parameters: 0" from convert_linear_layer, which
    onnx2pytorch's convert_operations calls for Gemm only; the model's Keras layer (MultiHeadAttention) is no title."""
    folder = _folder(tmp_path, "crash-onnx2pytorch-7b11d35ea8")
    # t69's reader: the cause is a weight the graph computes, which onnx2pytorch's layer code reads as an initializer
    assert culprit(folder) == "Gemm whose weight is no initializer"
    assert title(folder).startswith("[onnx2pytorch] Gemm whose weight is no initializer: ValueError: Unexpected number")


def test_a_crash_inside_torch_onnx_is_filed_at_pytorch_and_titled_by_its_symbolic_or_invalid_node(
        tmp_path: Path) -> None:
    """m40's keras-export crashes arising inside torch.onnx: a symbolic function failing (854d28faff) and an invalid
    node it wrote (a97aa25f99); torch.onnx refusing a value Keras traced (65a337de54) stays with Keras."""
    squeeze = _folder(tmp_path, "crash-keras-export-854d28faff")
    assert squeeze.filed_on == "torch.onnx"
    assert title(squeeze).startswith("[torch.onnx] symbolic_opset11.squeeze: ValueError: only one element tensors")
    text = render_issue(squeeze, MinimalScript(reason="not checked"))
    assert "File at: https://github.com/pytorch/pytorch/issues (PyTorch)" in text
    assert "raised inside torch.onnx (symbolic_opset11.py:squeeze -> " in text
    reduce_max = _folder(tmp_path, "crash-keras-export-a97aa25f99")
    assert title(reduce_max).startswith("[torch.onnx] ReduceMax: InvalidONNX: ")
    assert "torch.onnx writes an invalid ONNX file" in render_issue(reduce_max, MinimalScript(reason="not checked"))
    assert _folder(tmp_path, "crash-keras-export-65a337de54").filed_on == "keras-export"


def test_torchs_list_of_overloads_is_not_the_head_of_its_message(tmp_path: Path) -> None:
    """p40's crash-onnx2torch-998569793a, as its minimal script printed it: torch states the failure on the line that
    announces its overloads ("..., but expected one of:"), then lists them (" * (Tensor input, int dim)") with a
    deeper "didn't match because ..." under each; a listed overload is no title."""
    folder = _folder(tmp_path, "crash-onnx2torch-998569793a")
    check = json.loads((CORPUS / "bugs" / "crash-onnx2torch-998569793a" / "check.json").read_text())
    checked = MinimalScript(check["text"], reproduces=True, versions=check["versions"], output=check["output"])
    text = title(folder, checked)
    # the operator is the one-output Split whose tuple the Squeeze was handed (memo.triage.failing_node.tuple_maker)
    assert text == "[onnx2torch] Split: squeeze() received an invalid combination of arguments - got (tuple, dim=Tensor)"
    assert "*" not in text and "expected one of" not in text
    assert symptom(folder.info).endswith("TypeError: squeeze() received an invalid combination of arguments - got "
                                         "(tuple, dim=Tensor)")


def test_the_code_line_of_a_traced_frame_is_not_the_head_of_tensorflows_message(tmp_path: Path) -> None:
    """p40's crash-keras-tensorflow-10d75c97fc, as the campaign recorded it (no minimal script checked): TensorFlow's
    "in user code:" quotes each frame with its line of code ("lambda *args: model(list(args), training=False)"), then
    Keras's preamble and its cause in bold."""
    folder = _folder(tmp_path, "crash-keras-tensorflow-10d75c97fc")
    text = title(folder, MinimalScript(reason="not checked"))
    assert text == "[keras-tensorflow] AdaptiveAveragePooling2D: Negative dimension size caused by subtracting 5 from 4"
    assert "lambda" not in text and "lambda *args: model(list(args)" in folder.info["error_message"]
    assert message_head(folder, MinimalScript()).startswith("Negative dimension size caused by subtracting 5 from 4")


def test_a_list_is_dropped_only_where_its_items_are_starred() -> None:
    keras_arguments = "Cause of it.\nArguments received by X.call():\n  • inputs=tf.Tensor(shape=(2, 3))"
    assert without_listed_alternatives(keras_arguments) == keras_arguments
    assert without_listed_alternatives("f() got (int), but expected one of:\n * (Tensor input)\n"
                                       "      didn't match because x\n * (Tensor a, int b)\nafter") == \
        "f() got (int)\nafter"


def test_a_failed_checks_location_and_condition_are_not_its_cause(tmp_path: Path) -> None:
    """p40's crash-mxnet-73e0a40f0e, as its minimal script printed it: MXNet's "Error in operator _minimum1: <file>:134:
    Check failed: assign(&dattr, vec.at(i)): Incompatible attr in node ..." states its cause after the condition."""
    folder = _folder(tmp_path, "crash-mxnet-73e0a40f0e")
    check = json.loads((CORPUS / "bugs" / "crash-mxnet-73e0a40f0e" / "check.json").read_text())
    checked = MinimalScript(check["text"], reproduces=True, versions=check["versions"], output=check["output"])
    assert title(folder, checked).endswith("RuntimeError: Incompatible attr in node _minimum1 at 1-th input: expected "
                                           "[2,1], got [1]")


def test_a_title_names_the_library_as_its_tracker_knows_it() -> None:
    from memo.filing.title import tracker_name

    assert tracker_name("tf2onnx-opset11") == "tf2onnx (opset 11)"
    assert tracker_name("onnxruntime-keras-export") == "onnxruntime-keras-export"
    assert tracker_name("keras-tensorflow") == "keras-tensorflow"


def test_a_crash_raised_in_a_library_the_backend_delegates_to_is_filed_there(tmp_path: Path) -> None:
    message = ("Exception from src/inference/src/cpp/core.cpp:117:\nException from src/inference/src/dev/plugin.cpp:54:"
               "\nLayout rank can't be larger than tensor rank")
    (tmp_path / "bug.json").write_text(json.dumps({"id": "crash-keras-openvino-x", "kind": "crash",
                                                   "library": "keras-openvino", "error_message": message}))
    assert BugFolder.read(tmp_path).filed_on == "openvino"
    (tmp_path / "bug.json").write_text(json.dumps({"id": "crash-keras-openvino-y", "kind": "crash",
                                                   "library": "keras-openvino",
                                                   "error_message": "OpenVINOKerasTensor cannot be an integer"}))
    assert BugFolder.read(tmp_path).filed_on == "keras-openvino"


def test_a_converters_invalid_file_is_described_as_written_not_as_a_crash(tmp_path: Path) -> None:
    """q48's reader: tf2onnx returns a model; the file it wrote is what ONNX's checks reject (not "tf2onnx fails")."""
    folder = _folder(tmp_path, "crash-tf2onnx-opset11-af6e7cbe75")
    text = render_issue(folder, MinimalScript(reason="not checked"))
    assert "tf2onnx (opset 11) converts a model of Conv1DTranspose without an error, but the ONNX file it writes is " \
           "invalid" in text, text
    assert "writes a valid ONNX file for this model" in text and "raises `InvalidONNX`" not in text


def test_a_long_title_ends_where_a_phrase_ends_dropping_what_says_least_first() -> None:
    from memo.filing.title import TITLE_CHARS, fitted

    cause = ("cannot compute Mul as input #1(zero-based) was expected to be a half tensor but is a float tensor "
             "[Op:Mul] name:")
    text = fitted("[keras] ", "Adam(global_clipnorm=1.0) on float16+float32 variables", "InvalidArgumentError", cause)
    assert len(text) <= TITLE_CHARS and not text.endswith("...") and "zero-based" not in text, text
    assert text == "[keras] Adam(global_clipnorm=1.0) on float16+float32 variables: InvalidArgumentError: cannot compute Mul"
    # the Keras layers an ONNX file came from go first, then asides, then the exception's name
    assert fitted("[openvino] ", "ReduceMin, Neg, ReduceMax, ... (from Keras AutoContrast)", "",
                  "gives wrong results (against the ONNX reference evaluator)") == \
        "[openvino] ReduceMin, Neg, ReduceMax, ...: gives wrong results (against the ONNX reference evaluator)"
    short = "[mxnet] Reshape: KeyError: 'cast1'"
    assert fitted("[mxnet] ", "Reshape", "KeyError", "'cast1'") == short
    # long150e: Keras layers whose settings nest parentheses go too, before the cause is cut mid-phrase
    assert fitted("[openvino] ", "Split, MatMul, Add, ... (from Keras SimpleRNN(activation='softmax'))", "RuntimeError",
                  "Layout rank can't be larger than tensor rank") == \
        "[openvino] Split, MatMul, Add, ...: RuntimeError: Layout rank can't be larger than tensor rank"
    # a numbered aside ("(size 408)") goes before the cause is cut mid-shape
    assert fitted("[keras-jax] ", "MultiHeadAttention", "ValueError", "cannot reshape array of shape (2, 6, 2, 1, 17) "
                  "(size 408) into shape (2, 6, 2, 1) (size 24)") == \
        "[keras-jax] MultiHeadAttention: cannot reshape array of shape (2, 6, 2, 1, 17) into shape (2, 6, 2, 1)"


def test_onnxruntimes_status_wrapper_gives_way_to_the_kernels_message() -> None:
    from memo.filing.title import status_message

    text = ("onnxruntime.capi.onnxruntime_pybind11_state.Fail: [ONNXRuntimeError] : 1 : FAIL : Non-zero status code "
            "returned while running Resize node. Name:'Resize__6286' Status Message: upsamplebase.h:579 "
            "ScalesValidation 'Cubic' mode only supports:\n  * 2-D inputs ('Bicubic') or\n  * 4-D inputs\n")
    assert status_message(text) == "ScalesValidation 'Cubic' mode only supports: 2-D inputs ('Bicubic') or 4-D inputs"
    assert status_message("RuntimeError: Layout rank can't be larger than tensor rank") == ""


def test_a_librarys_request_for_a_bug_report_is_no_part_of_the_head(tmp_path: Path) -> None:
    """t54's keras-export RandomTranslation crash, filed at Keras: torch.onnx's message asks for a report at
    PyTorch's tracker, which the issue text must not repeat as if it were the cause."""
    folder = _folder(tmp_path, "crash-keras-export-c7007cde43")
    assert "Please send a bug report" in folder.info["error_message"]
    assert message_head(folder, MinimalScript()) == "Unsupported prim::Constant kind: 'ival'."
    assert "bug report" not in title(folder, MinimalScript(reason="not checked"))
    assert "bug report" not in actual(folder, MinimalScript(reason="not checked"))
    # t56's reader: the text should say that Keras picks torch.onnx's TorchScript exporter (dynamic batch axis)
    from memo.filing.export_text import torchscript_note

    note = torchscript_note(folder)
    assert "through torch.onnx's TorchScript exporter (`torch.onnx.export(..., dynamo=False)`)" in note
    assert "whenever an input has a dynamic axis" in note and note in render_issue(folder, MinimalScript())
    assert torchscript_note(_folder(tmp_path / "other", KERAS_CRASH)) == ""  # not Keras's export
    # t60's reader: the cause is Keras's own, tracing the augmentation in training mode (no training=False on torch)
    from memo.filing.export_text import training_mode_note

    mode = training_mode_note(folder)
    assert "without `training=False`" in mode and "RandomTranslation's `call` defaults to `training=True`" in mode
    assert mode in render_issue(folder, MinimalScript())
    dense = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 4], "dtype": "float32"}),
                     Layer("d", "Dense", {"units": 2}, ["x"])], ["d"], "m")
    assert training_mode_note(_folder(tmp_path / "dense", "crash-keras-export-c7007cde43", dense)) == ""


def test_an_exports_out_of_range_lookup_names_the_ones_it_traces_on(tmp_path: Path) -> None:
    """t54's reader: Embedding(input_dim=1) fails to export with "index out of range", and the text did not say that
    Keras's export traces the model on ones of the input signature (index 1 of a table of one)."""
    from memo.filing.export_text import traced_ones_note

    folder = _folder(tmp_path, "crash-keras-export-cc1a54ba10")
    note = traced_ones_note(folder)
    assert "`convert_spec_to_tensor` in `keras/src/export/export_utils.py`" in note
    assert "the Embedding's lookup then reads index 1 of a table of input_dim=1" in note
    assert note in render_issue(folder, MinimalScript(reason="not checked"))
    other = _folder(tmp_path / "other", "crash-keras-export-c7007cde43")
    assert traced_ones_note(other) == ""  # not an out-of-range lookup


def test_a_layer_right_alone_is_named_after_the_layers_it_is_wrong_with(tmp_path: Path) -> None:
    """t56's reader: "Dense: gives wrong results" on a model of Conv2D, RepeatVector, GRU, RandomZoom and Dense."""
    ir = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 4, 4, 1], "dtype": "float32"}),
                  Layer("conv1", "Conv2D", {"filters": 2, "kernel_size": [3, 3]}, ["x"]),
                  Layer("reshape", "Reshape", {"target_shape": [8]}, ["conv1"]),
                  Layer("zoom", "RandomZoom", {"height_factor": 0.2}, ["reshape"]),
                  Layer("dense_3", "Dense", {"units": 3}, ["zoom"])], ["dense_3"], "m")
    located = {"layer": "dense_3", "layer_class": "Dense", "alone": "right",
               "together": ["conv1", "reshape", "zoom", "dense_3"]}
    folder = _folder(tmp_path, NUMERIC, ir, layer_class="Dense", localization=located, library="keras-openvino",
                     reference="keras-tensorflow")
    assert culprit(folder) == "Dense after Conv2D, RandomZoom"  # a Reshape only moves elements
    text = render_issue(folder, MinimalScript(reason="not checked"))
    assert "Every layer's output before `dense_3` agrees with Keras on TensorFlow's" in text
    assert "It is wrong only compiled after Conv2D, Reshape, RandomZoom (the reduction kept them)" in text
    wrong_alone = _folder(tmp_path / "alone", NUMERIC, ir, layer_class="Dense", library="keras-openvino",
                          localization={**located, "alone": "wrong"}, reference="keras-tensorflow")
    assert culprit(wrong_alone) == "Dense" and "compiled after" not in render_issue(wrong_alone, MinimalScript())


def test_an_entry_whose_id_names_another_library_says_why() -> None:
    from memo.report.sections import id_note

    moved = {"id": "training-inconsistency-keras-torch-7beabaa413", "kind": "training-inconsistency",
             "library": "keras-tensorflow"}
    assert id_note(moved) == "the id names keras-torch, the library memo first saw it in; the entry is keras-tensorflow's"
    assert id_note({"id": "crash-tf2onnx-opset11-af6e7cbe75", "kind": "crash", "library": "tf2onnx-opset11"}) == ""


def test_a_fused_activation_the_bug_needs_is_named_with_its_layer(tmp_path: Path) -> None:
    """t60's reader: tf2onnx's crash titled "DepthwiseConv2D" was its ``activation='hard_sigmoid'`` (the layer
    converts without it). A finished reduction tried every default, so a setting it kept is one the bug needs; an
    unfinished one may have kept it for want of time, and a default activation says nothing."""
    from memo.filing.title import layer_classes

    def classes(status: str, activation: str) -> list[str]:
        ir = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 8, 8, 3], "dtype": "float32"}),
                      Layer("dw", "DepthwiseConv2D", {"kernel_size": [3, 3], "activation": activation}, ["x"])],
                     ["dw"], "m")
        case = tmp_path / f"{status}-{activation}"
        case.mkdir()
        return layer_classes(_folder(case, KERAS_CRASH, ir, reduction={"status": status}))

    assert classes("done", "hard_sigmoid") == ["DepthwiseConv2D(activation='hard_sigmoid')"]
    assert classes("timeout", "hard_sigmoid") == ["DepthwiseConv2D"]
    adopted = "known: M-0027, reduced model and script copied from the bug database"  # recorded once finished
    assert classes(adopted, "hard_sigmoid") == ["DepthwiseConv2D(activation='hard_sigmoid')"]
    assert classes("done", "linear") == ["DepthwiseConv2D"]


def test_a_tf2onnx_optimizer_crash_says_tf2onnx_catches_it_by_default(tmp_path: Path) -> None:
    """t61's reader: tf2onnx's transpose-optimizer crash converts with tf2onnx's defaults (the error logged, the
    optimization skipped); the text and the script's comment must say that the script turns the catching off."""
    from memo.filing.export_text import caught_optimizer_note
    from memo.filing.script_env import env_lines as _env_lines

    frames = ["tf2onnx/optimizer/transpose_optimizer.py:_add_handler"]
    optimizer = _folder(tmp_path / "a", KERAS_CRASH, library="tf2onnx", signature={"frames": frames})
    assert "by default tf2onnx catches it" in caught_optimizer_note(optimizer)
    assert caught_optimizer_note(optimizer) in render_issue(optimizer, MinimalScript())
    handler = _folder(tmp_path / "b", KERAS_CRASH, library="tf2onnx",
                      signature={"frames": ["tf2onnx/onnx_opset/nn.py:version_11"]})
    assert caught_optimizer_note(handler) == ""  # a handler's crash is not caught by that setting
    assert any("TF2ONNX_CATCH_ERRORS=FALSE: an optimizer's exception is raised" in line
               for line in _env_lines("tf2onnx"))
