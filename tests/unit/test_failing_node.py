"""Root causes by the failing operator (issue 38, item 1): a converter's or an engine's crash whose message names the
node of the converted file it failed in is keyed by that operator, whichever Keras layer wrote it; a failure listed
after the first in one message is a cascade; a backend whose code another library runs is that library's entry.
Messages are as ONNX Runtime 1.23 and OpenVINO 2026.4 print them (run here on small graphs)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from memo.triage.failing_node import FailingNode, culprit_operator, failing_node, failing_operator, operator_text
from memo.triage.reassess import root_cause_parts
from memo.triage.signature import computing_library
from tests.unit.test_root_cause import SITE, crash_parts, numeric_parts, one_bug, reduced

ORT_CONV = ("[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running Conv node. "
            "Name:'{node}' Status Message: Input channels C is not equal to kernel channels * group. C: 2 kernel "
            "channels: 1 group: 3")
OV_TWO_FAILED = """Exception from src/inference/src/cpp/core.cpp:84:
Check 'false' failed at src/frontends/common_translators/src/unconverted_ops_report.cpp:151:
FrontEnd API failed with OpConversionFailure:
Model wasn't fully converted. Failed operations detailed log:
-- Reshape-17 with a message:
While validating ONNX node '<Node(Reshape): model/flatten/Reshape:0>': Check 'backward_compatible_check || \
in_out_elements_equal' failed at src/core/shape_inference/include/reshape_shape_inference.hpp:360:
-- Conv-17 with a message:
While validating ONNX node '<Node(Conv): model/conv/BiasAdd:0>': Check 'false' failed"""


def test_the_node_an_engine_names_is_found_and_a_later_failure_is_a_cascade() -> None:
    assert failing_node(ORT_CONV.format(node="model/conv2d/Conv2D")) == FailingNode("Conv", "model/conv2d/Conv2D")
    # OpenVINO lists every operation it could not convert: the first is the cause, the Conv after it follows
    assert failing_node(OV_TWO_FAILED) == FailingNode("Reshape", "model/flatten/Reshape:0")
    assert failing_node("RuntimeError: shape '[3, 5]' is invalid for input of size 32") is None
    # tf2onnx names the TensorFlow op it had no handler for
    assert failing_node("no handler for op Erfc (node 'model/gelu/Erfc')") == FailingNode("Erfc", "model/gelu/Erfc")


def test_the_operator_keeps_the_attributes_that_choose_its_code(tmp_path: Path) -> None:
    assert operator_text("Resize", {"mode": "nearest", "scales": [1.0, 2.0], "coordinate_transformation_mode":
                                    "asymmetric"}) == "Resize(coordinate_transformation_mode=asymmetric, mode=nearest)"
    assert operator_text("Conv", {"group": 3, "pads": [1, 1, 1, 1]}) == "Conv"  # values never split a bug
    node = helper.make_node("AveragePool", ["x"], ["y"], name="model/pool/AvgPool", kernel_shape=[2, 2],
                            auto_pad="SAME_UPPER", count_include_pad=1)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph), tmp_path / "model.onnx")
    message = ("Non-zero status code returned while running AveragePool node. Name:'model/pool/AvgPool' Status "
               "Message: bad")
    assert failing_operator(message, tmp_path / "model.onnx") == (
        "AveragePool(auto_pad=SAME_UPPER, count_include_pad=1)", "model/pool/AvgPool")
    assert failing_operator(message, tmp_path / "absent.onnx") == ("AveragePool", "model/pool/AvgPool")


def test_an_operator_handed_a_tuple_names_the_one_output_node_that_made_it(tmp_path: Path) -> None:
    # long150e: onnx2torch's Split of one output returns a one-element tuple, and the Squeeze after it fails
    split = helper.make_node("Split", ["x"], ["part"], name="rnn/unstack", axis=1)
    squeeze = helper.make_node("Squeeze", ["part", "axes"], ["y"], name="rnn/squeeze")
    graph = helper.make_graph([split, squeeze], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array([1], np.int64), "axes")])
    onnx.save(helper.make_model(graph), tmp_path / "model.onnx")
    frames = ["onnx2torch/node_converters/squeeze.py:_forward", "onnx2torch/node_converters/squeeze.py:forward"]
    handed = "squeeze() received an invalid combination of arguments - got (tuple, dim=Tensor), but expected one of"
    assert culprit_operator(handed, frames, tmp_path / "model.onnx") == "Split"
    # another failure of that Squeeze is its own
    assert culprit_operator("squeeze(): dimension out of range", frames, tmp_path / "model.onnx") == "Squeeze"


def _engine_crash(tmp_path: Path, name: str, node: str) -> dict[str, object]:
    folder = tmp_path / name
    folder.mkdir()
    message = ORT_CONV.format(node=node)
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name=node, group=3)
    graph = helper.make_graph([conv], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.ones((4, 1, 1, 1), np.float32), "w")])
    onnx.save(helper.make_model(graph), folder / "model.onnx")
    (folder / "bug.json").write_text(json.dumps({"kind": "crash", "library": "onnxruntime", "error_message": message}))
    return root_cause_parts(crash_parts("onnxruntime", "execute", "Fail", message), folder)


def test_one_failing_operator_written_by_two_layer_families_is_one_bug(tmp_path: Path) -> None:
    conv2d = reduced("Conv2D", {"filters": 4, "kernel_size": 1})
    dense = reduced("Dense", {"units": 4})
    via_conv = _engine_crash(tmp_path, "a", "model/conv2d/Conv2D")
    via_dense = _engine_crash(tmp_path, "b", "model/dense/MatMul_conv")
    assert via_conv["operator"] == "Conv" and via_conv["node"] == "model/conv2d/Conv2D"
    assert one_bug((via_conv, conv2d), (via_dense, dense))
    plain = [{key: value for key, value in parts.items() if key not in ("operator", "node")}
             for parts in (via_conv, via_dense)]
    assert not one_bug((plain[0], conv2d), (plain[1], dense)), "by the Keras layer, two entries (before)"
    # a Keras backend's crash is not read for graph nodes
    keras = root_cause_parts(crash_parts("keras-torch", "execute", "Fail", ORT_CONV.format(node="n")), tmp_path / "a")
    assert "operator" not in keras


def test_a_crash_and_a_numeric_bug_of_keras_export_are_keras_on_torchs_when_it_shows_them_too() -> None:
    assert computing_library("keras-export") == "keras-torch"
    assert computing_library("onnxruntime-keras-export") == "keras-torch" and computing_library("tf2onnx") == "tf2onnx"
    message = ("Exception encountered when calling RandomFlip.call().\n\ntorch.Generator has no attribute 'numpy'")
    flip = reduced("RandomFlip", {"mode": "horizontal"})
    assert one_bug((crash_parts("keras-torch", "execute", "AttributeError", message), flip),
                   (crash_parts("keras-export", "convert", "AttributeError", message), flip))
    pool = reduced("AveragePooling2D", {"pool_size": [3, 3], "padding": "same"}, [None, 7, 7, 2])
    # ONNX Runtime differing on Keras's export while it agrees on tf2onnx's: the oracle blames the export
    assert one_bug((numeric_parts("keras-torch", "keras-tensorflow", pool), pool),
                   (numeric_parts("keras-export", "keras-tensorflow", pool), pool))


def test_a_wrapper_names_the_root_cause_not_the_class_it_wraps() -> None:
    # Keras names the wrapped layer in its wrapper around the error ("Arguments received by LSTM.call()"), and the
    # wrapped layer's own name: neither splits one failure of the wrapper
    from tests.unit.test_root_cause import keras_wrapped

    error = "'OpenVINOKerasTensor' object has no attribute 'reverse'"
    findings = []
    for inner, name in (("LSTM", "lstm"), ("GRU", "gru")):
        ir = reduced("Bidirectional", {"layer": {"class_name": inner, "config": {"name": name, "units": 4}}},
                     [None, 5, 3])
        message = keras_wrapped(inner, f"{error} in layer '{name}'")
        traceback = ("Traceback (most recent call last):\n"
                     f'  File "{SITE}/keras/src/layers/rnn/bidirectional.py", line 220, in call\n'
                     f'  File "{SITE}/keras/src/layers/rnn/{name}.py", line 580, in call\n'
                     f'  File "{SITE}/keras/src/backend/openvino/numpy.py", line 1310, in flip\n'
                     f"AttributeError: {error}\n")
        findings.append((crash_parts("keras-openvino", "execute", "AttributeError", message, traceback), ir))
    assert findings[0][0]["frames"] != findings[1][0]["frames"]  # each through its own module
    assert one_bug(*findings)


def test_openvino_lists_failed_operations_by_name_and_a_cascade_is_not_the_cause() -> None:
    from memo.triage.failing_node import own_failure

    # t53: LSTM and LeakyRelu read what ConvLSTM's unconverted Loop left and fail on its element type; OpenVINO lists
    # them first (by name); the Loop is the cause
    report = ("Exception from src/inference/src/cpp/core.cpp:84:\nCheck 'false' failed at src/frontends/common_"
              "translators/src/unconverted_ops_report.cpp:151:\nFrontEnd API failed with OpConversionFailure:\nModel "
              "wasn't fully converted. Failed operations detailed log:\n-- LSTM-15 with a message:\nWhile validating "
              "ONNX node '<Node(LSTM): LSTM__44362:0>': Exception from src/core/shape_inference/include/element_visitor"
              ".hpp:150:\nElement not supported\n\n-- Loop-15 with a message:\nCheck '(canonical_inputs.size() >= 2)' "
              "failed at src/frontends/onnx/frontend/src/op/loop.cpp:310:\nWhile validating ONNX node '<Node(Loop): "
              "m/conv_lstm1d_1/while_loop:0>':\nThe provided loop body graph canonical inputs size (9)\n\n-- Pad-15 "
              "with a message:\nWhile validating ONNX node '<Node(Pad): pad:0>': Exception from src/core/shape_"
              "inference/include/element_visitor.hpp:150:\nElement not supported")
    assert failing_node(report) == FailingNode("Loop", "m/conv_lstm1d_1/while_loop:0")
    own = own_failure(report)
    assert "Loop-15" in own and "LSTM" not in own and "Pad-15" not in own and "loop.cpp:310" in own
    # a single failure, even an element-type one, stays as it is
    single = report.split("\n\n-- Loop-15")[0]
    assert own_failure(single) == single


def test_a_file_is_read_once_per_version(tmp_path: Path) -> None:
    """One finding's blame asks the same ONNX file for attributes, operators and producers: it is parsed once, and
    parsed again only when the file changes."""
    import os

    from memo.triage.failing_node import file_graph, file_operators

    def save(op: str) -> Path:
        node = helper.make_node(op, ["x"], ["y"], name="n")
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
        path = tmp_path / "model.onnx"
        onnx.save(helper.make_model(graph), str(path))
        return path

    path = save("Relu")
    first = file_graph(path)
    assert first is not None and file_graph(path) is first
    stat = path.stat()
    save("Sigmoid")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # a new version even within the clock's tick
    assert file_graph(path) is not first and file_operators(path) == {"Sigmoid": ""}
    assert file_graph(tmp_path / "missing.onnx") is None
    (tmp_path / "bad.onnx").write_bytes(b"not a model")
    assert file_graph(tmp_path / "bad.onnx") is None and file_operators(tmp_path / "bad.onnx") == {}
