"""ONNX's type check failing alike at any operator is one root cause (memo.triage.type_check): tf2onnx's lost cast at a
dtype boundary (long150e: six "ready" entries, one per operator that met the uncast tensor); an operator written in a
dtype its schema lacks is not keyed so. Messages as onnx.checker printed them in long150e."""
from __future__ import annotations

from typing import Any

from memo.model.ir import Layer, ModelIR, compute_dtype
from memo.mutation.editor import dtype_policy
from memo.triage.type_check import LOST_CAST, cast_into, crosses_dtype, type_check_cause
from tests.unit.test_root_cause import crash_parts, numeric_parts, one_bug, reduced

CHECKER = "invalid ONNX written: onnx.checker: [ShapeInferenceError] (op_type:{op}, node name: {node}): {what}"

# (layer class, its dtype, the operator onnx.checker rejected, the input it names, that input's type)
LOST_CASTS = (
    ("Dense", "bfloat16", "MatMul", "alexnet_cifar10_1/fc1_1/MatMul", "B", "bfloat16"),
    ("ELU", "bfloat16", "Greater", "lstm_stock_price_1/elu_1/Greater", "B", "bfloat16"),
    ("Normalization", "bfloat16", "Sub", "alexnet_cifar10_1/normalization_1/Sub", "B", "bfloat16"),
    ("Rescaling", "bfloat16", "Mul", "inception_resnet_v2_1/custom_scale_layer_10_rescale_1/mul", "B", "bfloat16"),
    ("UpSampling2D", "float64", "Min", "xception_1/up_sampling2d_1/clip_by_value/Minimum", "data_0", "float"),
)


Finding = tuple[dict[str, Any], ModelIR]


def _finding(library: str, class_name: str, dtype: str, what: str, op: str, node: str) -> Finding:
    parts = crash_parts(library, "convert", "InvalidONNX", CHECKER.format(op=op, node=node, what=what))
    return parts, reduced(class_name, {"dtype": dtype_policy(dtype)})


def _lost_cast(class_name: str, dtype: str, op: str, node: str, name: str, seen: str) -> Finding:
    return _finding("tf2onnx", class_name, dtype, f"{name} has inconsistent type tensor({seen})", op, node)


def _unsupported(library: str, class_name: str, op: str, dtype: str = "bfloat16") -> Finding:
    what = f"X typestr: T, has unsupported type: tensor({dtype})"
    return _finding(library, class_name, dtype, what, op, f"/{class_name.lower()}/{op}")


def test_tf2onnxs_lost_cast_is_one_bug_whatever_operator_meets_the_uncast_tensor() -> None:
    findings = [_lost_cast(*case) for case in LOST_CASTS]
    assert one_bug(*findings)
    no_boundary = _lost_cast("ELU", "float32", "Greater", "m/elu/Greater", "B", "bfloat16")
    assert not one_bug(findings[0], no_boundary)


def test_an_inconsistent_type_without_a_dtype_boundary_keys_nothing_of_its_own() -> None:
    # both layers compute in their input's dtype: the conflict is the operator's own, and the operators differ
    same_dtype = [_lost_cast(name, "float32", op, node, "B", "float16") for name, _, op, node, _, _ in LOST_CASTS[:2]]
    assert not one_bug(*same_dtype)
    parts, ir = same_dtype[0]
    assert type_check_cause(parts["message"], ir, [ir.get(ir.outputs[0])]) is None


def test_an_operator_written_in_a_dtype_its_schema_lacks_gets_no_key_across_operators() -> None:
    # a model's opset-11 variant fails this way where its newest-opset conversion loses the cast: a key across
    # operators would chain the lost cast with tf2onnx's bfloat16 Conv (long150e)
    assert not one_bug(_unsupported("tf2onnx", "Conv2D", "Conv"), _unsupported("tf2onnx", "ELU", "Elu"))
    parts, ir = _unsupported("tf2onnx", "Conv2D", "Conv")
    assert type_check_cause(parts["message"], ir, [ir.get(ir.outputs[0])]) is None
    assert not one_bug(_unsupported("tf2onnx", "Conv2D", "Conv"), _lost_cast(*LOST_CASTS[0]))


def test_a_dtype_boundary_is_read_from_compute_dtypes() -> None:
    source = Layer("input_layer", "InputLayer", {"dtype": "float16"})
    mixed = Layer("dense", "Dense", {"dtype": dtype_policy("mixed_float16")}, ["input_layer"])
    model = ModelIR([source, mixed], ["dense"], "m")
    assert compute_dtype(mixed.config) == "float16"
    assert not crosses_dtype(mixed, model)
    assert crosses_dtype(Layer("d", "Dense", {"dtype": dtype_policy("bfloat16")}, ["input_layer"]), model)
    indices = ModelIR([Layer("ids", "InputLayer", {"dtype": "int32"}), Layer("e", "Embedding", {}, ["ids"])],
                      ["e"], "m")
    assert not crosses_dtype(indices.get("e"), indices)  # Keras casts floats only: indices are no boundary
    message = "(op_type:Mul, node name: m/d/Mul): B has inconsistent type tensor(bfloat16)"
    assert type_check_cause(message, model, [model.get("dense")]) is None
    assert type_check_cause(message, model, [Layer("d", "Dense", {"dtype": "bfloat16"}, ["input_layer"])]) == {
        "type_check": LOST_CAST}


def test_a_wrong_cast_into_bfloat16_is_one_numeric_bug_whatever_layer_computes_after_it() -> None:
    # long150f: Keras on OpenVINO, one-layer models of a bfloat16 layer behind an input of another float dtype
    def wrong(class_name: str, source: str) -> Finding:
        layers = [Layer("input_layer", "InputLayer", {"batch_shape": [None, 8], "dtype": source}),
                  Layer(class_name.lower(), class_name, {"dtype": dtype_policy("bfloat16")}, ["input_layer"])]
        ir = ModelIR(layers, [layers[-1].name], "reduced")
        return numeric_parts("keras-openvino", "keras-tensorflow", ir), ir

    assert one_bug(wrong("Dropout", "float64"), wrong("ReLU", "float32"), wrong("ZeroPadding2D", "float16"))
    same_dtype = reduced("ReLU", {"dtype": "float32"})
    assert not one_bug(wrong("Dropout", "float64"), (numeric_parts("keras-openvino", "keras-tensorflow", same_dtype),
                                                     same_dtype))
    assert cast_into(same_dtype, [same_dtype.get(same_dtype.outputs[0])]) is None
