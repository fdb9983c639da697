"""The oracle on a labelled corpus of real executions (tests/corpus/, captured by tests/corpus/capture.py
from real runs of the current libraries): each case asserts the verdict kinds, the blamed backend and stage."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memo.backends.result import ExecutionResult
from memo.model.ir import ModelIR
from memo.mutation.nan import has_injection
from memo.oracle import Verdict, judge

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def load(case: str) -> tuple[ExecutionResult, dict[str, dict[str, np.ndarray]], ModelIR]:
    data: dict[str, Any] = json.loads((CORPUS / f"{case}.json").read_text())
    result = ExecutionResult.from_json(data["result"])
    outputs: dict[str, dict[str, np.ndarray]] = {}
    path = CORPUS / f"{case}.npz"
    if path.exists():
        with np.load(path, allow_pickle=False) as arrays:
            for key in sorted(arrays.files, key=lambda k: (k.split("__")[0], int(k.split("__")[1]))):
                backend, index = key.split("__")
                outputs.setdefault(backend, {})[result.output_names[int(index)]] = arrays[key]
    return result, outputs, ModelIR.from_json(data["model"])


def triples(verdicts: list[Verdict]) -> list[tuple[str, str, str]]:
    return sorted((v.kind, v.backend, v.stage) for v in verdicts)


def test_corpus_is_small() -> None:
    assert sum(path.stat().st_size for path in CORPUS.iterdir() if path.is_file()) < 200_000


def test_typeerror_everywhere_is_one_keras_crash_never_unsupported() -> None:
    # Activation("threshold"): every Keras backend raises TypeError at execute, and so does the tf.function
    # trace feeding tf2onnx (the same failure: folded into the one Keras finding).
    result, outputs, _ = load("hidden_crash")
    assert {b.failure.exc_type for b in result.results() if b.failure and b.status == "error"} == {"TypeError"}
    verdicts = judge(result, outputs=outputs)
    assert triples(verdicts) == [("crash", "keras", "execute")]
    assert verdicts[0].also_in_tf_function == ["tf2onnx", "tf2onnx-opset11"]
    assert not any(v.kind == "unsupported" for v in verdicts)


def test_every_keras_backend_failing_at_run_time_is_a_keras_bug_not_invalid() -> None:
    result, outputs, _ = load("keras_all_fail")  # RandomRotation on a rank-2 tensor
    verdicts = judge(result, outputs=outputs)
    assert triples(verdicts) == [("crash", "keras", "execute")]
    assert verdicts[0].message.startswith("symbolic build accepted the model, every Keras backend failed at run time")
    assert set(verdicts[0].involved()) == {"keras-tensorflow", "keras-jax", "keras-torch"}


def test_nan_semantics_of_tensorflow_max_pooling() -> None:
    result, outputs, ir = load("reference_nan")
    # MXNet agrees with TensorFlow (max pooling skips NaN), JAX and torch propagate it: no one to blame alone.
    assert triples(judge(result, outputs=outputs)) == [("nan", "keras-jax", "execute"),
                                                       ("nan", "keras-torch", "execute"),
                                                       ("nan", "onnxruntime", "execute")]
    # With only the Keras backends (tf2onnx failed, say), JAX and torch agreeing is one TensorFlow finding.
    keras_only = ExecutionResult(result.artifact_dir, result.reference, result.output_names,
                                 {n: b for n, b in result.backends.items() if b.consumes == "keras" and b.role == "backend"})
    verdicts = judge(keras_only, outputs={n: outputs[n] for n in keras_only.backends})
    assert triples(verdicts) == [("nan", "keras-tensorflow", "execute")]
    assert ["keras-jax", "keras-torch"] in verdicts[0].attribution.agreement
    # The model injects NaN on purpose (the NaN operator's sub-graph): special-value semantics, not bugs.
    assert has_injection(ir)
    assert {v.kind for v in judge(result, outputs=outputs, special_values=has_injection(ir))} == {"special"}


def test_large_magnitude_outputs_with_relative_noise_are_consistent() -> None:
    result, outputs, ir = load("large_magnitude")
    reference = outputs["keras-tensorflow"]["square"]
    assert np.abs(reference).max() > 1e25
    assert any(not np.array_equal(out["square"], reference) for out in outputs.values())  # there is noise
    assert judge(result, outputs=outputs) == []
    assert has_injection(ir)  # a tensor squared: judged as special values in a campaign, and still nothing


def test_native_crash_and_tf_function_failure() -> None:
    # AdaptiveMaxPooling2D(output_size=1): SIGFPE eagerly, "Negative dimension size" when traced.
    result, outputs, _ = load("native_crash")
    verdicts = judge(result, outputs=outputs)
    assert triples(verdicts) == [("crash", "keras-tensorflow", "execute"), ("crash", "keras-tensorflow", "tf-function")]
    crash = next(v for v in verdicts if v.stage == "execute")
    assert crash.failure.signal == 8
    traced = next(v for v in verdicts if v.stage == "tf-function")
    assert "Negative dimension size" in traced.message and traced.converters == ["tf2onnx", "tf2onnx-opset11"]


def test_mxnet_bind_error_is_its_own_crash() -> None:
    result, outputs, _ = load("adaptive_pool3d_mxnet")
    verdicts = judge(result, outputs=outputs)
    assert triples(verdicts) == [("crash", "mxnet", "execute")]
    assert verdicts[0].message.startswith("RuntimeError: simple_bind error")


@pytest.mark.parametrize("case", ["hidden_crash", "keras_all_fail", "reference_nan", "large_magnitude",
                                  "native_crash", "adaptive_pool3d_mxnet"])
def test_verdicts_are_plain_json(case: str) -> None:
    result, outputs, _ = load(case)
    for verdict in judge(result, outputs=outputs):
        assert json.loads(json.dumps(verdict.to_json()))["kind"] == verdict.kind and type(verdict.kind) is str


@pytest.mark.parametrize("pair", ["mxnet_minimum", "mxnet_reshape"])
def test_occurrences_differing_only_in_generated_names_are_one_bug(pair: str) -> None:
    from memo.backends.result import ExecutionResult
    from memo.oracle import Verdict
    from memo.triage.signature import failure_details, signature

    data = json.loads((CORPUS / "duplicate_pairs.json").read_text())["pairs"][pair]
    (a, b) = [(Verdict.from_json(item["verdict"]), ExecutionResult.from_json(item["result"])) for item in data]
    assert failure_details(*a).message != failure_details(*b).message  # the raw messages differ
    assert signature(*a, None) == signature(*b, None)
