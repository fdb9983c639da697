"""bfloat16 through ``.npz`` files (numpy's format reads an ml_dtypes bfloat16 array back as raw ``void16``): a
minimal script's attached arrays load with numpy alone (bfloat16 weights kept as float32, which Keras accepts where
it rejects "Invalid dtype: void16"), and outputs memo reads back are bfloat16 again, judged at bfloat16's precision."""
from __future__ import annotations

import io

import ml_dtypes
import numpy as np

from memo.filing.script import _npz
from memo.model.ir import Layer, ModelIR
from memo.npz_arrays import portable, restored
from memo.triage.localize import first_divergence


def test_bfloat16_weights_are_attached_as_float32_holding_the_same_values() -> None:
    weights = np.array([[1.5, -2.25], [0.0030059814, 65280.0]], dtype=ml_dtypes.bfloat16)
    for given in (weights, weights.view("V2")):  # as Keras returns it, and as an .npz read it back
        widened = portable(given)
        assert widened.dtype == np.float32 and np.array_equal(widened.astype(ml_dtypes.bfloat16), weights)
    with np.load(io.BytesIO(_npz({"dense/0": weights, "dense/1": np.ones(2, np.float16)}))) as data:
        assert data["dense/0"].dtype == np.float32 and data["dense/1"].dtype == np.float16


def _through_npz(array: np.ndarray) -> np.ndarray:
    buffer = io.BytesIO()
    np.savez(buffer, out_0=array)
    buffer.seek(0)
    with np.load(buffer) as data:
        return data["out_0"]


def test_outputs_read_back_are_bfloat16_again_and_compared_at_its_precision() -> None:
    reference = np.linspace(-2.0, 2.0, 64, dtype=np.float32).reshape(8, 8)
    ours = reference.astype(ml_dtypes.bfloat16)
    raw = _through_npz(ours)
    assert raw.dtype.kind == "V"  # what localization compared before: "could not convert string to float"
    back = restored(raw)
    assert back.dtype == ml_dtypes.bfloat16 and np.array_equal(back, ours)
    assert restored(reference) is reference
    ir = ModelIR(layers=[Layer("x", "InputLayer", {"batch_shape": [None, 8]}),
                         Layer("d", "Dense", {"units": 8}, ["x"])], outputs=["d"])
    rounded = first_divergence(ir, "inconsistency", {"d": back}, {"d": reference})
    assert rounded.layer is None and rounded.nodes[0]["status"] == "ok"  # bfloat16 rounding is no divergence
    wrong = first_divergence(ir, "inconsistency", {"d": restored(_through_npz((reference + 0.5).astype(
        ml_dtypes.bfloat16)))}, {"d": reference})
    assert wrong.layer == "d" and wrong.nodes[0]["status"] == "differs"


def test_a_bug_folders_summary_reads_a_bfloat16_reference_output(tmp_path) -> None:
    from memo.triage.materialize import _outputs, io_summary

    reference = np.linspace(-2.0, 2.0, 16, dtype=np.float32).reshape(4, 4)
    np.savez(tmp_path / "keras-tensorflow.npz", out_0=reference.astype(ml_dtypes.bfloat16))
    good = _outputs(tmp_path / "keras-tensorflow.npz")  # read back raw, it failed the summary (long150e)
    assert good[0].dtype == np.float32 and np.array_equal(good[0], reference.astype(ml_dtypes.bfloat16).astype(
        np.float32))
    summary = io_summary({"x": reference}, [reference + 1.0], good, ("keras-openvino", "keras-tensorflow"))
    row = summary["outputs"][0]
    assert row["keras-tensorflow non-finite"] == 0 and 0.98 < row["max |diff|"] < 1.02
