"""The validity rules a converter's ONNX file must pass before its engines run, on small hand-built models."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memo.backends.onnx_validity import conversion_problems, validity_problems

onnx = pytest.importorskip("onnx")
helper, numpy_helper, TensorProto = onnx.helper, onnx.numpy_helper, onnx.TensorProto


def _model(nodes: list, inputs: list, outputs: list, initializers: list = (), value_info: list = (),
           opset: int = 17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers), value_info=list(value_info))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _float(name: str, shape: list) -> object:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _conv_transpose(pads: list[int], out_size: int) -> object:
    weight = numpy_helper.from_array(np.ones((3, 2, 2, 2), np.float32), "w")
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="deconv", strides=[3, 3], pads=pads)
    return _model([node], [_float("x", [1, 3, 5, 5])], [_float("y", [1, 2, out_size, out_size])], [weight])


def _resize(scale: float, declared: int, *, transposed: bool = False) -> object:
    """X (1, 1, 6, 6) resized by ``scale`` (stored as float32) on both spatial axes; the output declared with
    size ``declared``, on the Resize itself or (``transposed``, as tf2onnx writes it) on a Transpose after it."""
    scales = numpy_helper.from_array(np.array([1, 1, scale, scale], np.float32), "scales")
    roi = numpy_helper.from_array(np.array([], np.float32), "roi")
    resize = helper.make_node("Resize", ["x", "roi", "scales"], ["r" if transposed else "y"], name="resize",
                              mode="linear")
    nodes = [resize]
    output = _float("y", [1, 1, declared, declared])
    if transposed:
        nodes.append(helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 3, 1]))
        output = _float("y", [1, declared, declared, 1])
    return _model(nodes, [_float("x", [1, 1, 6, 6])], [output], [roi, scales])


def test_negative_conv_transpose_pads_are_invalid() -> None:
    # TensorFlow's "same" transposed convolution of kernel 2, stride 3: 15 = 3 * 5, which tf2onnx writes as
    # pads [0, 0, -1, -1] (3 * 4 + 2 - 0 + 1 = 15)
    problems = validity_problems(_conv_transpose([0, 0, -1, -1], 15))
    assert problems[0].check == "negative-pads" and problems[0].op == "ConvTranspose"
    assert problems[0].message.startswith("ConvTranspose node 'deconv' has negative pads [0, 0, -1, -1]")
    assert "greater than or equal to 0" in problems[0].message


def test_a_float32_scale_that_changes_the_output_size_is_invalid() -> None:
    # float32(17 / 6) = 2.83333325..., and 6 * 2.83333325 = 16.99999952: the ONNX rule floors it to 16
    for model in (_resize(17 / 6, 17), _resize(17 / 6, 17, transposed=True)):
        problems = validity_problems(model)
        assert problems[0].check == "resize-scale" and problems[0].op == "Resize", problems
        assert "size 6 by float32 2.83333325" in problems[0].message
        assert "gives 16" in problems[0].message and "declared size 17" in problems[0].message


def test_a_scale_that_gives_the_declared_size_is_valid() -> None:
    assert validity_problems(_resize(2.0, 12)) == []
    assert validity_problems(_resize(17 / 6, 16, transposed=True)) == []  # what the spec computes, declared so


def test_a_model_the_checker_rejects() -> None:
    # Add of a float tensor and an int64 one: the operator's type constraint T is violated
    ints = helper.make_tensor_value_info("i", TensorProto.INT64, [2])
    model = _model([helper.make_node("Add", ["x", "i"], ["y"], name="add")], [_float("x", [2]), ints],
                   [_float("y", [2])])
    problems = validity_problems(model)
    assert [p.check for p in problems] == ["checker"]
    assert problems[0].message.startswith("onnx.checker: ")


def test_shape_inference_follows_computed_shapes() -> None:
    # Reshape to the input's own shape (Shape -> Reshape), declared as (3, 2): only data propagation sees it
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape")]
    model = _model(nodes, [_float("x", [2, 3])], [_float("y", [3, 2])])
    problems = validity_problems(model)
    assert [p.check for p in problems] == ["shape-inference"], problems
    assert validity_problems(_model(nodes, [_float("x", [2, 3])], [_float("y", [2, 3])])) == []


def test_a_valid_model_has_no_problem(tmp_path: Path) -> None:
    model = _conv_transpose([1, 1, 1, 1], 12)  # 3 * 4 + 2 - 1 - 1 = 12
    assert validity_problems(model) == []
    onnx.save(model, str(tmp_path / "model.onnx"))
    assert validity_problems(tmp_path / "model.onnx") == []
    assert conversion_problems(tmp_path / "model.onnx") == []


def test_an_invalid_file_is_the_converters_error(tmp_path: Path) -> None:
    onnx.save(_conv_transpose([0, 0, -1, -1], 15), str(tmp_path / "model.onnx"))
    problems = conversion_problems(tmp_path / "model.onnx")
    assert problems[0].status == "error" and problems[0].exc_type == "InvalidONNX"
    assert problems[0].feature == "ConvTranspose"
    assert problems[0].message.startswith("invalid ONNX written: ConvTranspose node 'deconv' has negative pads")


def test_the_attribute_bounds_are_what_the_operator_docs_say() -> None:
    """ATTRIBUTE_BOUNDS holds every attribute the operator docs bound by "greater than or equal to 0", and nothing the
    docs do not bound so (onnx.checker tests some of them only in newer onnx releases: 1.14 passes negative pads)."""
    from memo.backends.onnx_validity import ATTRIBUTE_BOUNDS

    documented = {(schema.name, name) for schema in onnx.defs.get_all_schemas() if schema.domain == ""
                  for name, attribute in schema.attributes.items()
                  if "greater than or equal to 0" in attribute.description}
    assert documented == {(op, bound[0]) for op, bound in ATTRIBUTE_BOUNDS.items()}
    assert all(bound[1] == 0 for bound in ATTRIBUTE_BOUNDS.values())
