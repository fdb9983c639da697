"""A campaign store filled with findings shaped exactly like the executor's and oracle's, for the pure
triage and report tests (no library runs here; the integration tests use real executions)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from memo.model.ir import Layer, ModelIR
from memo.oracle.verdict import Failure, Verdict
from memo.store import CampaignStore, MutantRecord

HOSTILE = "<script>alert('x')</script> & <b>bold</b>"


def model(*classes: str) -> ModelIR:
    layers = [Layer("input", "InputLayer", {"batch_shape": [None, 8], "dtype": "float32"})]
    for index, class_name in enumerate(classes):
        layers.append(Layer(f"{class_name.lower()}_{index}", class_name, {"units": 4} if class_name == "Dense" else {},
                            [layers[-1].name]))
    return ModelIR(layers, [layers[-1].name], "m")


def crash_result(message: str, exc_type: str = "RuntimeError") -> dict[str, Any]:
    traceback = ('Traceback (most recent call last):\n  File "/v/site-packages/onnxruntime/capi/session.py", '
                 f'line 220, in run\n{exc_type}: {message}\n')
    return {"artifact_dir": "gone", "reference": "keras-tensorflow", "output_names": ["out"], "seconds": 1.0,
            "backends": {"onnxruntime": {"name": "onnxruntime", "consumes": "onnx", "role": "backend",
                                         "stages": [{"stage": "load", "status": "ok"},
                                                    {"stage": "execute", "status": "error", "exc_type": exc_type,
                                                     "message": message, "traceback": traceback}]}}}


def add_finding(store: CampaignStore, iteration: int, ir: ModelIR, result: dict[str, Any],
                verdicts: list[tuple[str, str, str, str]], artifact_dir: str | None = None) -> int:
    mutant_id = store.add_mutant(MutantRecord(iteration, "s", "NLA", "seed:s", "s", {}, ir.dumps(), True, diverse=True))
    store.add_execution(mutant_id, result, 1.0, artifact_dir)
    for kind, backend, stage, message in verdicts:
        failure = Failure("error", "RuntimeError", 1.0)
        store.add_verdict(mutant_id, Verdict(kind, backend, stage, message, failure=failure))
    return mutant_id


def make_campaign(directory: Path) -> CampaignStore:
    """Three crash occurrences of one onnxruntime bug (names/shapes differ), one of another, a NaN in keras-jax,
    two unsupported findings (one feature), coverage history and versions."""
    store = CampaignStore(directory, create=True)
    store.set_meta("campaign_name", "unit")
    store.set_meta("config", {"seed": 1, "backends": ["keras-tensorflow", "onnxruntime", "keras-jax"], "search": "mh"})
    store.set_meta("versions", {"onnxruntime": {"onnxruntime": "1.31.0", "onnx": "1.23.0"}})
    store.set_meta("started", 1_700_000_000.0)
    for i, (name, dims) in enumerate([("dense_1", "(2, 3)"), ("dense_7", "(4, 9)"), ("conv_2", "(1, 1)")]):
        message = f"{HOSTILE} Got invalid dimensions for input {name}: {dims}"
        add_finding(store, i, model("Dense", "ReLU"), crash_result(message),
                    [("crash", "onnxruntime", "execute", message)])
    add_finding(store, 3, model("Dense"), crash_result("Out of memory", "MemoryError"),
                [("crash", "onnxruntime", "execute", "MemoryError: Out of memory")])
    add_finding(store, 4, model("Dense", "Softmax"), {"artifact_dir": "gone", "reference": "keras-tensorflow", "backends": {}},
                [("nan", "keras-jax", "execute", "3 non-finite values where the reference has none"),
                 ("unsupported", "tf2onnx", "convert", "Unsupported ops: Counter({'Erfinv': 1})")])
    add_finding(store, 5, model("Dense"), {"artifact_dir": "gone", "reference": "keras-tensorflow", "backends": {}},
                [("unsupported", "tf2onnx", "convert", "Unsupported ops: Counter({'Erfinv': 2})"),
                 ("invalid", "*", "-", "every backend failed")])
    store.add_coverage_point(10.0, 3, 3, 3, {"types": (4, 60), "pairs": (5, 3600), "params": (9, 900)})
    store.add_coverage_point(70.0, 6, 6, 6, {"types": (6, 60), "pairs": (9, 3600), "params": (15, 900)})
    store.save_state(5, {"elapsed": 70.0})
    return store


def bug_kinds(store: CampaignStore) -> list[tuple[str, str, int]]:
    return sorted((bug.kind, bug.library, bug.occurrences) for bug in store.triage.load_bugs())

