"""ONNX's reference evaluator as a third opinion (memo/backends/onnx_reference.py, memo/triage/onnx_reference.py),
and special values by the operator's contract (memo/truth.py's NaN not propagated)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from memo.backends.onnx_reference import reference_outputs
from memo.truth import CONFIRMED, ILL_CONDITIONED, Truth, assess_runs
from memo.triage.onnx_reference import (first_wrong_shape, AGREES, BOTH, CONVERTER, ENGINE, ENGINES, UNAVAILABLE, Opinion,
                                        blamed_library, judge_opinion, onnx_file_of, settle)

REF = "keras-tensorflow"
X = np.array([[np.nan, 2.0, -1.0, 0.5]], np.float32)


def _clip_file(path: Path) -> Path:
    graph = helper.make_graph(
        [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4])],
        [numpy_helper.from_array(np.array(0, np.float32), "lo"),
         numpy_helper.from_array(np.array(1, np.float32), "hi")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _resize_file(path: Path) -> Path:
    """tf2onnx's fixed-size Resize (6 -> 17) written as float32 scales 17/6, whose floor gives 16."""
    scales = np.array([1, 1, 17 / 6, 1], np.float32)
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 6, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(scales, "scales")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_the_evaluator_runs_a_file_in_its_own_process_and_keeps_nan_through_clip(tmp_path: Path) -> None:
    got = reference_outputs(_clip_file(tmp_path / "clip.onnx"), {"x": X}, tmp_path / "scratch")
    assert isinstance(got, list)
    assert np.isnan(got[0][0, 0]) and got[0][0, 1:].tolist() == [1.0, 0.0, 0.5]


def test_a_file_it_cannot_run_or_too_large_is_no_opinion(tmp_path: Path) -> None:
    too_large = reference_outputs(_clip_file(tmp_path / "clip.onnx"), {"x": X}, tmp_path / "s", max_nodes=0)
    assert isinstance(too_large, str) and "over the limit" in too_large
    graph = helper.make_graph([helper.make_node("NoSuchOp", ["x"], ["y"], domain="memo.test")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("memo.test", 1)])
    onnx.save(model, tmp_path / "odd.onnx")
    failed = reference_outputs(tmp_path / "odd.onnx", {"x": X}, tmp_path / "s")
    assert isinstance(failed, str) and "cannot run" in failed
    opinion = judge_opinion({"openvino": [X]}, failed, [X], REF, "onnx", "tf2onnx")
    assert opinion.decision == UNAVAILABLE and opinion.blamed is None and "no opinion" in opinion.reason


def test_an_engine_dropping_nan_where_the_evaluator_keeps_it_is_the_engines_bug(tmp_path: Path) -> None:
    evaluated = reference_outputs(_clip_file(tmp_path / "clip.onnx"), {"x": X}, tmp_path / "s")
    keras = [np.array([[np.nan, 1.0, 0.0, 0.5]], np.float32)]
    openvino = [np.array([[0.0, 1.0, 0.0, 0.5]], np.float32)]  # OpenVINO's CPU Clamp: NaN becomes the minimum
    opinion = judge_opinion({"openvino": openvino}, evaluated, keras, REF, "onnx", "tf2onnx")
    assert opinion.decision == ENGINE and opinion.blamed == "openvino"
    assert opinion.nan_not_propagated == 1 and "NaN not propagated" in opinion.reason
    assert "non-finite" in opinion.figures["openvino"]


def test_a_file_that_computes_another_result_is_the_converters_bug(tmp_path: Path) -> None:
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 6, 1)
    evaluated = reference_outputs(_resize_file(tmp_path / "resize.onnx"), {"x": x}, tmp_path / "s")
    assert isinstance(evaluated, list) and evaluated[0].shape == (1, 1, 16, 1)  # floor(6 * float32(17/6)) = 16
    keras = [np.zeros((1, 1, 17, 1), np.float32)]  # TensorFlow resizes to the size asked for
    engines = {"onnx2torch": [evaluated[0].copy()], "onnx2pytorch": [evaluated[0].copy()]}
    opinion = judge_opinion(engines, evaluated, keras, REF, "onnx", "tf2onnx")
    assert opinion.decision == CONVERTER and opinion.blamed == "tf2onnx"
    assert blamed_library({"onnx_reference": opinion.to_json()}) == "tf2onnx"


def test_other_opinions_blame_no_library() -> None:
    right, off = [np.ones(4, np.float32)], [np.full(4, 3.0, np.float32)]
    both = judge_opinion({"mxnet": [np.full(4, 9.0, np.float32)]}, off, right, REF, "onnx-opset11", "tf2onnx-opset11")
    assert both.decision == BOTH and both.blamed is None
    several = judge_opinion({"onnx2torch": off, "onnx2pytorch": off}, right, right, REF, "onnx", "tf2onnx")
    assert several.decision == ENGINES and several.blamed is None
    agrees = judge_opinion({"mxnet": right}, right, right, REF, "onnx", "tf2onnx")
    assert agrees.decision == AGREES and blamed_library({"onnx_reference": agrees.to_json()}) is None
    assert Opinion.from_json({**both.to_json(), "later": 1}) == both


def test_only_backends_on_onnx_files_ask_the_evaluator() -> None:
    assert onnx_file_of("openvino") == "onnx" and onnx_file_of("mxnet") == "onnx-opset11"
    assert onnx_file_of("onnxruntime-keras-export") == "keras-onnx" and onnx_file_of("tf2onnx") == "onnx"
    assert onnx_file_of("keras-jax") is None and onnx_file_of("litert") is None and onnx_file_of("nope") is None


def test_the_operators_contract_settles_a_truth_only_special_values_left_open() -> None:
    engine = Opinion(decision=ENGINE, blamed="openvino", reason="evaluator agrees", nan_not_propagated=3)
    special = Truth(decision=ILL_CONDITIONED, reason="NaN inside", special_values=True)
    settled = settle(special, engine)
    assert settled.decision == CONFIRMED and settled.blamed == "openvino" and "NaN not propagated" in settled.reason
    unstable = Truth(decision=ILL_CONDITIONED, reason="moves by 40 tolerances")
    assert settle(unstable, engine).decision == ILL_CONDITIONED  # the mathematics, not the contract
    assert settle(Truth(decision=ILL_CONDITIONED, special_values=True), Opinion(decision=CONVERTER)).decision \
        == ILL_CONDITIONED
    assert settle(Truth(decision=ILL_CONDITIONED, special_values=True), None).decision == ILL_CONDITIONED


T = np.linspace(-2.0, 2.0, 8)


@pytest.mark.parametrize("accused, decision", [
    (np.where(np.arange(8) < 2, 0.0, T), CONFIRMED),  # NaN turned into the clip's minimum: not propagated
    (np.where(np.arange(8) < 2, np.nan, T + 1.0), ILL_CONDITIONED),  # NaN kept: a precision question at most
])
def test_nan_kept_by_float64_and_the_witness_is_not_ill_conditioned_for_who_drops_it(accused: np.ndarray,
                                                                                     decision: str) -> None:
    truth = np.where(np.arange(8) < 2, np.nan, T)
    outputs = {REF: [truth.astype(np.float32)], "openvino": [accused.astype(np.float32)]}
    verdict = assess_runs(outputs, {"float64-jax": ([truth], [[truth]])}, ["openvino"], [REF], REF)
    assert verdict.decision == decision
    if decision == CONFIRMED:
        assert verdict.blamed == "accused" and "NaN not propagated" in verdict.reason
    else:
        assert verdict.special_values


def test_a_bug_the_evaluator_blames_on_the_converter_is_keyed_and_filed_by_the_converter(tmp_path: Path) -> None:
    from memo.filing.folder import BugFolder
    from memo.filing.issue import title
    from memo.triage.reassess import root_cause_parts

    opinion = Opinion(decision=CONVERTER, blamed="tf2onnx", reason="the file computes another result")
    info = {"id": "inconsistency-onnx2torch-1", "kind": "inconsistency", "library": "onnx2torch",
            "reference": REF, "onnx_reference": opinion.to_json()}
    (tmp_path / "bug.json").write_text(json.dumps(info))
    parts = root_cause_parts({"kind": "inconsistency", "library": "onnx2torch", "layer": "Resizing"}, tmp_path)
    assert parts["library"] == "tf2onnx"
    folder = BugFolder.read(tmp_path)
    assert folder.filed_on == "tf2onnx" and title(folder).startswith("[tf2onnx]")
    engine = Opinion(decision=ENGINE, blamed="openvino", reason="r", figures={"openvino": "1 non-finite"})
    info.update(library="openvino", kind="nan", onnx_reference=engine.to_json())
    (tmp_path / "bug.json").write_text(json.dumps(info))
    folder = BugFolder.read(tmp_path)
    assert folder.filed_on == "openvino" and not folder.against_evaluator  # its outputs were not kept
    np.savez(tmp_path / "onnx_reference.npz", **{"onnx-reference__0": X})
    assert folder.against_evaluator and "against the ONNX reference evaluator" in title(folder)


ENGINE_BUG = Path(__file__).resolve().parents[1] / "corpus" / "bugs" / "inconsistency-openvino-c1a9a4f0b2"


def test_an_engines_issue_shows_it_against_the_evaluator_on_the_same_file_without_keras(tmp_path: Path) -> None:
    # captured with memo run (AutoContrast on a 1x1 image through tf2onnx, OpenVINO 2026.4): see labels.json
    from memo.filing import issue_text, minimal_script

    folder = tmp_path / ENGINE_BUG.name
    shutil.copytree(ENGINE_BUG, folder)
    script = minimal_script(folder)
    assert script.reproduces, script.output
    assert "onnx.reference" in script.text and "keras" not in script.text.lower()
    with np.load(folder / "minimal" / "expected.npz") as attached, np.load(folder / "onnx_reference.npz") as kept:
        assert np.array_equal(attached["out_0"], kept["onnx-reference__0"])
    text = issue_text(folder)
    assert text.startswith("# [openvino] ") and "(against the ONNX reference evaluator)" in text.splitlines()[0]
    expected = next(part for part in text.split("### ") if part.startswith("Expected"))
    assert "onnx.reference.ReferenceEvaluator" in expected and "keras-tensorflow" not in expected


def test_the_report_files_an_entry_the_evaluator_blames_on_the_converter_against_it(tmp_path: Path) -> None:
    from memo.report import write_report
    from memo.triage.blame import decide_all
    from memo.triage.dedup import update_bugs
    from tests.unit.triage_store import add_finding, make_campaign, model

    directory = tmp_path / "campaigns" / "unit"
    with make_campaign(directory) as store:
        add_finding(store, 6, model("Dense"), {"artifact_dir": "gone", "reference": REF, "backends": {}},
                    [("inconsistency", "onnx2torch", "execute", "5/8 elements outside atol")])
        update_bugs(store)
        bug = next(b for b in store.triage.load_bugs() if b.library == "onnx2torch")
        folder = tmp_path / "bug"
        folder.mkdir()
        opinion = Opinion(decision=CONVERTER, blamed="tf2onnx", file="onnx", converter="tf2onnx",
                          reason="the file computes another result")
        (folder / "bug.json").write_text(json.dumps({"id": bug.id, "kind": "inconsistency", "library": "onnx2torch",
                                                     "onnx_reference": opinion.to_json(),
                                                     "truth": Truth(decision=CONFIRMED).to_json()}))
        store.triage.update_bug(bug.id, bug_dir=str(folder), parts={**bug.parts, "layer": "Resizing"})
        decide_all(store)  # triage decides whom it is filed against; the report renders it
    data = json.loads(write_report(directory, tmp_path / "r.json", "json").read_text())
    entry = next(e for e in data["bugs"] if e["id"] == bug.id)
    assert entry["library"] == "tf2onnx" and entry["reported_by"] == "onnx2torch"
    assert entry["onnx_reference"]["decision"] == CONVERTER
    html = write_report(directory, tmp_path / "r.html").read_text()
    assert "ONNX reference</h4>" in html and "blames tf2onnx" in html


def test_a_bug_on_a_converted_file_triaged_before_the_evaluator_is_judged_again(tmp_path: Path) -> None:
    from memo.triage.dedup import update_bugs
    from memo.triage.reassess import pending_truths
    from tests.unit.triage_store import add_finding, make_campaign, model

    with make_campaign(tmp_path / "campaigns" / "unit") as store:
        add_finding(store, 6, model("Dense"), {"artifact_dir": "gone", "reference": REF, "backends": {}},
                    [("inconsistency", "openvino", "execute", "5/8 elements outside atol")])
        update_bugs(store)
        for bug in store.triage.load_bugs():
            if bug.kind in ("nan", "inconsistency"):
                folder = tmp_path / bug.id
                folder.mkdir()
                (folder / "bug.json").write_text(json.dumps({"truth": Truth(decision=CONFIRMED).to_json()}))
                store.triage.update_bug(bug.id, bug_dir=str(folder), reduction={"status": "reduced"})
        assert [bug.library for bug in pending_truths(store)] == ["openvino"]  # keras-jax's needs no evaluator
        bug = pending_truths(store)[0]
        (Path(str(bug.bug_dir)) / "bug.json").write_text(json.dumps({"truth": Truth(decision=CONFIRMED).to_json(),
                                                                     "onnx_reference": Opinion().to_json()}))
        assert pending_truths(store) == []


def test_an_engines_crash_is_traced_to_the_first_node_whose_output_shape_differs(tmp_path: Path) -> None:
    """m40's crash-onnx2torch-1425eca44b: onnx2torch's Reshape fails on 78120 elements because its ConvTranspose,
    earlier, ignored the node's ``output_shape`` (30x62): 31x63, where ONNX Runtime gives 30x62 on the same file.
    Both run here (onnx2torch in a child process); the issue is titled and described by that node."""
    from memo.filing.folder import BugFolder
    from memo.filing.issue import render_issue, title
    from memo.filing.check import MinimalScript
    from memo.triage.onnx_reference import trace_shape_origin

    name = "crash-onnx2torch-1425eca44b"
    folder = Path(shutil.copytree(Path(__file__).resolve().parents[1] / "corpus" / "bugs" / name, tmp_path / name))
    found = trace_shape_origin(folder, tmp_path / "scratch")
    assert found == {"node": "alexnet_cifar10_1/conv2d_transpose_1/BiasAdd", "op": "ConvTranspose",
                     "engine": [[2, 20, 31, 63]], "reference": [[2, 20, 30, 62]], "by": "ONNX Runtime"}
    bug = BugFolder.read(folder)
    assert title(bug) == ("[onnx2torch] ConvTranspose: output shape (2, 20, 31, 63) where ONNX Runtime gives "
                          "(2, 20, 30, 62)")
    assert "output_shape=[30, 62]" in render_issue(bug, MinimalScript(reason="not checked"))


def test_no_node_is_named_where_the_engine_gets_every_shape_the_reference_gets() -> None:
    same = {"engine": {"a": [[2, 3]], "b": [[2, 3]]}, "reference": {"a": [[2, 3]], "b": [[2, 3]], "c": [[6]]}}
    assert first_wrong_shape(same, [("a", "Relu", ["a:0"]), ("b", "Conv", ["b:0"]), ("c", "Reshape", ["c:0"])]) == {}
    assert first_wrong_shape({"engine": "RuntimeError: x", "reference": {}}, [("a", "Relu", ["a:0"])]) == {}
    # onnx2pytorch names a node's module after its op and first output, and its MaxPool returns indices too
    pytorch = {"engine": {"MaxPool_m/pool:0": [[2, 3, 9, 9], [2, 3, 9, 9]], "Resize_m/resize:0": [[2, 8, 16, 4]]},
               "reference": {"m/pool": [[2, 3, 9, 9]], "m/resize": [[2, 8, 17, 4]]}, "by": "ONNX Runtime"}
    order = [("m/pool", "MaxPool", ["m/pool:0"]), ("m/resize", "Resize", ["m/resize:0"])]
    assert first_wrong_shape(pytorch, order) == {"node": "m/resize", "op": "Resize", "engine": [[2, 8, 16, 4]],
                                                 "reference": [[2, 8, 17, 4]], "by": "ONNX Runtime"}


def test_shapes_at_gives_a_nodes_shape_by_the_spec_and_by_onnx_runtime(tmp_path: Path) -> None:
    # p41's crash-onnx2pytorch-6181efeb06: tf2onnx's Resize scales floor to 0 columns by the spec
    from memo.backends.onnx_reference import shapes_at

    folder = Path(__file__).resolve().parents[1] / "corpus" / "onnx_reference" / "resize-zero"
    with np.load(folder / "inputs.npz", allow_pickle=False) as data:
        inputs = {name: data[name] for name in data.files}
    found = shapes_at(folder / "model.onnx", inputs, "Resize", tmp_path)
    assert isinstance(found, dict) and found["op"] == "Resize"
    assert found["spec"] == [2, 16, 1, 0] and found["onnxruntime"] == [2, 16, 2, 1]
    assert isinstance(shapes_at(folder / "model.onnx", inputs, "LSTM", tmp_path), str)  # no such node: why


def test_an_empty_node_by_the_spec_that_onnx_runtime_cannot_size_is_the_converters() -> None:
    from memo.triage.onnx_reference import CONVERTER, UNAVAILABLE, judge_crash

    # long150 crash-onnx2torch-33a3e13a61: tf2onnx's bicubic Resize gives (2, 16, 1, 0) by the spec, ONNX Runtime
    # cannot build that node alone, Keras's resizing gives (None, 2, 1, 16): the file is wrong
    failed = ("the ONNX reference evaluator cannot run this file: ValueError: cannot reshape array of size 0 into "
              "shape (2,2,1,16) [in op_reshape]")
    at = {"node": "Resize__19268", "op": "Resize", "spec": [2, 16, 1, 0], "onnxruntime": "Fail: upsamplebase.h:314"}
    opinion = judge_crash(failed, [(2, 2, 1, 16)], "keras-tensorflow", "onnx", "tf2onnx", "onnx2torch",
                          engine_op="Resize", at=at)
    assert opinion.decision == CONVERTER and opinion.blamed == "tf2onnx"
    keras_empty = judge_crash(failed, [(2, 2, 1, 16)], "keras-tensorflow", "onnx", "tf2onnx", "onnx2torch",
                              engine_op="Resize", at=at, keras_empty=True)
    assert keras_empty.decision == UNAVAILABLE  # Keras makes an empty tensor too: nothing tells the file wrong
    sized = judge_crash(failed, [(2, 2, 1, 16)], "keras-tensorflow", "onnx", "tf2onnx", "onnx2torch",
                        engine_op="Resize", at={**at, "spec": [2, 16, 1, 1]})
    assert sized.decision == UNAVAILABLE


def test_the_evaluator_failing_in_the_node_inside_a_loop_is_failing_where_the_engine_does() -> None:
    from memo.triage.failing_node import named_operators

    # long150 crash-onnxruntime-15b270f90d: ONNX Runtime's Gather inside tf2onnx's LSTM Loop, the evaluator's too
    message = ("[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Non-zero status code returned while running Loop node. "
               "Name:'lstm/while_loop' Status Message: Non-zero status code returned while running Gather node. "
               "Name:'lstm/while/TensorArrayV2Read_1/TensorListGetItem' Status Message: indices element out of data "
               "bounds, idx=1 must be within the inclusive range [-1,0]")
    assert named_operators(message) == ["Loop", "Gather"]


def test_the_newest_evaluator_decides_where_the_released_one_fails_or_gives_other_shapes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memo.triage import onnx_reference as triage_reference

    # s50 crash-mxnet-1aef8525ce: onnx 1.23's evaluator reduced a 5-D GlobalMaxPool over two axes only, so a correct
    # tf2onnx file looked wrong; the newest onnx's evaluator runs it and gives Keras's shape
    graph = helper.make_graph([helper.make_node("GlobalMaxPool", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 3, 4, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = tmp_path / "model.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]), str(path))
    inputs = {"x": np.random.default_rng(0).standard_normal((2, 8, 3, 4, 5)).astype(np.float32)}
    answers = {None: [np.zeros((2, 8, 3, 1, 1), np.float32)], "newest": [np.zeros((2, 8, 1, 1, 1), np.float32)]}

    def evaluator(model: Path, feed: dict, scratch: Path, timeout_s: float = 60.0, max_nodes: int = 300,
                  python: str | None = None) -> list[np.ndarray] | str:
        return answers[python]
    monkeypatch.setattr(triage_reference, "reference_outputs", evaluator)
    monkeypatch.setattr(triage_reference, "next_python", lambda: "newest")
    evaluated, said = triage_reference.evaluate_newest_first_wrong(path, inputs, tmp_path, 5.0, [(2, 8, 1, 1, 1)])
    assert [a.shape for a in evaluated] == [(2, 8, 1, 1, 1)] and "released one's answer, shapes (2, 8, 3, 1, 1)" in said
    answers["newest"] = "the ONNX reference evaluator cannot run this file: ValueError: no"  # the newest fails too
    evaluated, said = triage_reference.evaluate_newest_first_wrong(path, inputs, tmp_path, 5.0, [(2, 8, 1, 1, 1)])
    assert [a.shape for a in evaluated] == [(2, 8, 3, 1, 1)] and said == ""
    answers[None] = [np.zeros((2, 8, 1, 1, 1), np.float32)]  # the released one agrees with Keras: newest not asked
    answers.pop("newest")
    assert triage_reference.evaluate_newest_first_wrong(path, inputs, tmp_path, 5.0, [(2, 8, 1, 1, 1)])[1] == ""


def test_the_evaluator_runs_in_another_interpreter(tmp_path: Path) -> None:
    import sys

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    path = tmp_path / "model.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    x = np.array([[-1, 0, 2], [3, -4, 5]], np.float32)
    out = reference_outputs(path, {"x": x}, tmp_path, python=sys.executable)  # memo's folder put on its path
    assert not isinstance(out, str), out
    np.testing.assert_array_equal(out[0], np.maximum(x, 0))
