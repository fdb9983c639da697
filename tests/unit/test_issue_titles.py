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
from memo.model.ir import Layer, ModelIR

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
    assert culprit(folder) == "Gemm"
    assert title(folder).startswith("[onnx2pytorch] Gemm: ValueError: Unexpected number of parameters: 0")


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
