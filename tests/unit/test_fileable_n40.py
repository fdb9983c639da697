"""The n40 campaign's issue texts read as their trackers' maintainers would (issue 38): each case is a real bug folder
of that campaign (tests/corpus/bugs, model files and inputs kept where a check needs them). The converter blamed
where ONNX's reference implementation fails on its file too; one MXNet importer defect, whatever it raises, as one
root cause; titles naming the operator that fails and the message's head, once, in whole words; Actual without a
traceback; Expected never quoting the accused library; minimal scripts of at most 40 lines."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from memo.filing.check import MinimalScript, kept_output
from memo.filing.folder import BugFolder
from memo.filing.issue import culprit, render_issue, title
from memo.filing.observed import actual, whole_words
from memo.filing.pycode import used_imports
from memo.filing.script import MAX_SCRIPT_LINES, ONNX_ATTACHED, candidates
from memo.model.ir import ModelIR
from memo.triage.failing_node import TRANSLATOR_PART, culprit_operator, node_parts
from memo.triage.onnx_reference import CONVERTER, ENGINE, UNAVAILABLE, judge_crash, opine_on_crash
from memo.triage.signature import reduced_keys

BUGS = Path(__file__).resolve().parents[1] / "corpus" / "bugs"
SLICE_INDEX, SLICE_NAN = "crash-mxnet-31cb2ab3cb", "crash-mxnet-e233d01ffb"
LOOP_CONV, RESIZE_ADD = "crash-onnx2pytorch-96534e43ad", "crash-onnx2torch-0390019484"
GRU_SPLIT, EXPORT_GENERATOR, TF_FUNCTION = "crash-mxnet-f2863645c3", "crash-keras-export-c7007cde43", \
    "crash-keras-tensorflow-44b4c1f362"


def _folder(tmp_path: Path, name: str) -> BugFolder:
    shutil.copytree(BUGS / name, tmp_path / name)
    return BugFolder.read(tmp_path / name)


def _root_cause_keys(folder: BugFolder) -> set[str]:
    parts = {**folder.info["signature"], **node_parts(str(folder.info["error_message"]), folder.frames,
                                                      folder.file("model.onnx"))}
    return set(reduced_keys(parts, ModelIR.loads((folder.path / "ir.json").read_text())))


def test_one_mxnet_slice_translation_is_one_root_cause_whatever_it_raises(tmp_path: Path) -> None:
    index, nan = _folder(tmp_path, SLICE_INDEX), _folder(tmp_path, SLICE_NAN)
    assert index.exception == "IndexError" and nan.exception == "MXNetError"  # two exceptions, two Keras models
    for folder in (index, nan):
        parts = node_parts(str(folder.info["error_message"]), folder.frames, folder.file("model.onnx"))
        assert parts["operator"] == "Slice"
        assert parts[TRANSLATOR_PART] == "mxnet/contrib/onnx/onnx2mx/_op_translations.py:_slice"
    assert _root_cause_keys(index) & _root_cause_keys(nan)
    # without the importer's frame they stay two entries (before)
    bare = [set(reduced_keys(dict(f.info["signature"]), ModelIR.loads((f.path / "ir.json").read_text())))
            for f in (index, nan)]
    assert not bare[0] & bare[1]


def test_a_title_names_the_operator_that_fails_not_the_files_operators(tmp_path: Path) -> None:
    loop = _folder(tmp_path, LOOP_CONV)
    # torch names the module it could not build (Conv3d): the Conv of the Loop's body, not Less, And, Expand...
    assert culprit_operator(str(loop.info["error_message"]), loop.frames, loop.file("model.onnx")) == \
        "Conv in a Loop body"
    # t69's reader: its weight is the body's capture, not an initializer, which onnx2pytorch's layer code assumes
    assert culprit(loop, MinimalScript()) == "Conv whose weight is no initializer"
    # onnx2pytorch's Loop code only holds the body whose Conv failed: no per-operator root cause of its own
    assert TRANSLATOR_PART not in node_parts(str(loop.info["error_message"]), loop.frames, loop.file("model.onnx"))
    nan = _folder(tmp_path, SLICE_NAN)
    text = title(nan, MinimalScript())
    assert text.startswith("[mxnet] Slice: MXNetError: Invalid Parameter format"), text
    assert text.count("MXNetError") == 1 and "mxnet.base" not in text
    split = _folder(tmp_path, GRU_SPLIT)  # MXNet's KeyError quotes the value whose producer it could not find
    value = "lenet5_1/bidirectional_1/backward_simple_rnn_1/unstack:2"  # as the script on the attached file prints it
    checked = MinimalScript(text="x", reproduces=True, versions="mxnet 1.9.1",
                            output=f"mxnet 1.9.1\nTraceback (most recent call last):\nKeyError: '{value}'\n")
    assert culprit(split, checked) == "Split"
    # the campaign's message names a value of the unreduced file: the file's operators then, the Keras layer a suffix
    assert culprit(split, MinimalScript()).endswith("(from Keras Bidirectional(SimpleRNN))")


def test_titles_and_actual_are_cut_at_whole_words() -> None:
    assert whole_words("RuntimeError: The size of tensor a (18) must match", 40) == "RuntimeError: The size of tensor a..."
    assert whole_words("short", 40) == "short"


def test_actual_is_the_exception_and_the_head_of_its_message_never_the_traceback(tmp_path: Path) -> None:
    folder = _folder(tmp_path, EXPORT_GENERATOR)
    message = str(folder.info["error_message"])
    # torch.onnx quotes the trace inside its message: the output kept from the run starts at the exception's line
    stderr = ("Traceback (most recent call last):\n  File \"bug_repro.py\", line 18, in <module>\n"
              + "\n".join(f"site-packages/torch/x.py({n}): f" for n in range(200))
              + f"\ntorch.onnx.errors.SymbolicValueError: {message}\n")
    output = kept_output("keras 3.15.1 torch 2.15.0\n", stderr, ("SymbolicValueError",))
    assert output.startswith("keras 3.15.1 torch 2.15.0\n") and "SymbolicValueError: Unsupported" in output
    checked = MinimalScript(text="x", reproduces=True, versions="keras 3.15.1 torch 2.15.0", output=output)
    said = actual(folder, checked)
    assert said.startswith("SymbolicValueError: Unsupported prim::Constant kind: 'ival'."), said
    assert ".py(" not in said and "site-packages" not in said
    assert "(type 'Generator')" not in title(folder, checked)


def test_expected_never_names_the_accused_library_as_the_reference(tmp_path: Path) -> None:
    folder = _folder(tmp_path, TF_FUNCTION)
    assert folder.library == folder.reference == "keras-tensorflow"
    text = render_issue(folder, MinimalScript(reason="not checked"))
    expected = text.split("### Expected behavior", 1)[1].split("###", 1)[0]
    assert "Keras on TensorFlow (keras-tensorflow) runs" not in expected
    assert "returns output of shape (2, 1, 1, 64), the shape Keras declares for it" in expected


def test_the_reference_failing_on_the_file_or_giving_other_shapes_blames_the_converter() -> None:
    failed = judge_crash("the ONNX reference evaluator cannot run this file: ValueError: operands could not be "
                         "broadcast together", [(2, 18, 18, 416)], "keras-tensorflow", "onnx", "tf2onnx", "onnx2torch")
    assert (failed.decision, failed.blamed) == (CONVERTER, "tf2onnx") and "broadcast" in failed.reason
    other = judge_crash([np.zeros((2, 16, 16, 416))], [(2, 18, 18, 416)], "keras-tensorflow", "onnx", "tf2onnx",
                        "onnx2torch")
    assert (other.decision, other.blamed) == (CONVERTER, "tf2onnx") and "(2, 16, 16, 416)" in other.reason
    same = judge_crash([np.zeros((2, 18, 18, 416))], [(2, 18, 18, 416)], "keras-tensorflow", "onnx", "tf2onnx",
                       "onnx2torch")
    assert (same.decision, same.blamed) == (ENGINE, "onnx2torch")
    elsewhere = judge_crash("the ONNX reference evaluator cannot run this file: ValueError: Given n_input_plane=9 "
                            "[in op_conv_transpose]", [(2, 15, 31, 80)], "keras-tensorflow", "onnx", "tf2onnx",
                            "onnx2torch", engine_op="Reshape")  # onnx2torch fails in a later Reshape: not the same
    assert elsewhere.decision == UNAVAILABLE and "Reshape" in elsewhere.reason
    same_op = judge_crash("the ONNX reference evaluator cannot run this file: TypeError: Issues with types (binary "
                          "operator 'Add').", [(2, 18, 18, 416)], "keras-tensorflow", "onnx", "tf2onnx",
                          "onnx2pytorch", engine_op="Add")
    assert (same_op.decision, same_op.blamed) == (CONVERTER, "tf2onnx")
    # t69: ONNX Runtime's AveragePool and the evaluator's shared pooling code both refuse a negative SAME_UPPER pad
    pooled = judge_crash("the ONNX reference evaluator cannot run this file: ValueError: index can't contain negative "
                         "values [in op_pool_common]", [(2, 15, 8)], "keras-tensorflow", "onnx", "tf2onnx",
                         "onnxruntime", engine_op="AveragePool")
    assert (pooled.decision, pooled.blamed) == (CONVERTER, "tf2onnx") and "negative" in pooled.reason
    assert judge_crash("the ONNX reference evaluator cannot run this file: ValueError: x [in op_pool_common]",
                       [(2, 15, 8)], "keras-tensorflow", "onnx", "tf2onnx", "onnxruntime",
                       engine_op="Reshape").decision == UNAVAILABLE
    # p41: the engine fails in a Resize whose scales give 0 columns by the spec; the evaluator fails after it
    later = "the ONNX reference evaluator cannot run this file: ValueError: cannot reshape array of size 0 [in op_reshape]"
    sized = judge_crash(later, [(2, 2, 1, 16)], "keras-tensorflow", "onnx", "tf2onnx", "onnx2pytorch",
                        engine_op="Resize", at={"node": "Resize__1", "spec": [2, 16, 1, 0], "onnxruntime": [2, 16, 2, 1]})
    assert (sized.decision, sized.blamed) == (CONVERTER, "tf2onnx") and "(2, 16, 1, 0)" in sized.reason
    agreeing = judge_crash(later, [(2, 2, 1, 16)], "keras-tensorflow", "onnx", "tf2onnx", "onnx2pytorch",
                           engine_op="Resize", at={"node": "R", "spec": [2, 16, 2, 1], "onnxruntime": [2, 16, 2, 1]})
    assert agreeing.decision == UNAVAILABLE  # the spec and ONNX Runtime agree there: no opinion
    looped = judge_crash([np.zeros((4, 8))], [(2, 4, 8)], "keras-tensorflow", "onnx", "tf2onnx", "openvino",
                         subgraphs=True)  # OpenVINO's Loop failure: ONNX Runtime gives Keras's (2, 4, 8) there
    assert looped.decision == UNAVAILABLE and looped.blamed is None and "control flow" in looped.reason
    lacking = judge_crash("the ONNX reference evaluator cannot run this file: NotImplementedError: Loop", [],
                          "keras-tensorflow", "onnx", "tf2onnx", "onnx2torch")
    assert lacking.decision == UNAVAILABLE and lacking.blamed is None


def test_tf2onnx_float_resize_scales_are_filed_on_tf2onnx_not_the_engine(tmp_path: Path) -> None:
    folder = tmp_path / RESIZE_ADD
    shutil.copytree(BUGS / RESIZE_ADD, folder)
    opinion = opine_on_crash(folder, tmp_path / "scratch")
    assert opinion is not None and (opinion.decision, opinion.blamed) == (CONVERTER, "tf2onnx"), opinion
    bug = BugFolder.read(folder)
    assert bug.filed_on == "tf2onnx"
    assert title(bug, MinimalScript()).startswith("[tf2onnx] ")
    assert json.loads((folder / "bug.json").read_text())["onnx_reference"]["blamed"] == "tf2onnx"  # asked once


def test_no_minimal_script_is_over_40_lines_and_none_imports_what_it_does_not_use(tmp_path: Path) -> None:
    folder = _folder(tmp_path, GRU_SPLIT)  # its 28-node graph in helper code was 54 lines
    scripts = candidates(folder)
    assert scripts and all(script.lines <= MAX_SCRIPT_LINES for script in scripts)
    attached = [script for script in scripts if script.source == ONNX_ATTACHED]
    assert attached and "from onnx import" not in attached[0].text
    assert used_imports(("import numpy as np", "from onnx import TensorProto, helper, numpy_helper"),
                        ["x = helper.make_node('Relu', ['a'], ['b'])"]) == ["import numpy as np",
                                                                            "from onnx import helper"]


def test_actual_skips_the_lines_that_only_announce_a_location_or_a_list(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "crash-openvino-409296f83f")  # OpenVINO: "Exception from src/...cpp:84:" first
    said = actual(folder, MinimalScript())
    assert said.startswith("RuntimeError: ") and "Exception from src" not in said.split("(as the campaign")[0], said
