"""The fast bug-reduction steps (a layer alone, the shortest failing prefix, layers the error names) and the
root-cause key that merges bugs found through different models; pure predicates, Keras on numpy only."""
from __future__ import annotations

from pathlib import Path

from memo.model.ir import Layer, ModelIR
from memo.mutation.analysis import analyse
from memo.bug_files import Reduction
from memo.triage.bug_reduction import (REDUCER_VERSION, TRIED_AGAIN, isolate, mentioned_layers, reduce_bug,
                                       reduces_further)
from memo.triage.signature import normalize_message, reduced_key, reduced_keys
from tests.unit.triage_store import add_finding, crash_result, make_campaign, model

BUGS = Path(__file__).resolve().parents[1] / "corpus" / "bugs"


def _chain(classes: list[str]) -> ModelIR:
    layers = [Layer("in", "InputLayer", {"batch_shape": [None, 8, 3], "dtype": "float32"})]
    for i, name in enumerate(classes):
        config = {"units": 5} if name == "Dense" else {}
        layers.append(Layer(f"n{i}", name, config, [layers[-1].name]))
    return ModelIR(layers, [layers[-1].name])


def _counting(predicate):
    calls: list[ModelIR] = []

    def check(ir: ModelIR) -> bool:
        calls.append(ir)
        ir.validate()
        return predicate(ir)
    return check, calls


def test_a_layer_alone_gets_fresh_inputs_of_its_input_shape_and_dtype() -> None:
    ir = _chain(["Dense", "ReLU", "Softmax"])
    alone = isolate(ir, "n1")
    assert alone is not None and [layer.name for layer in alone.layers] == ["n0", "n1"]
    assert alone.layers[0].class_name == "InputLayer"
    assert alone.layers[0].config == {"batch_shape": [None, 8, 5], "dtype": "float32"}
    assert alone.outputs == ["n1"]
    alone.validate()


def test_a_failure_in_one_layer_is_reduced_to_that_layer_in_few_runs() -> None:
    classes = ["Dense", "ReLU", "LayerNormalization", "Dense", "Softmax", "Flatten", "Dense", "ReLU", "Dense",
               "Activation", "Dense", "ReLU", "Dense", "ReLU", "Dense", "ReLU"]
    ir = _chain(classes)
    check, calls = _counting(lambda candidate: any(layer.class_name == "Softmax" for layer in candidate.body))
    outcome = reduce_bug(ir, check, budget_s=60)
    assert [layer.class_name for layer in outcome.ir.body] == ["Softmax"]
    assert "n4 alone" in outcome.steps
    assert len(calls) <= 12  # a prefix search and one isolation, not a ddmin over 16 layers


def test_a_layer_named_in_the_error_is_tried_alone_first() -> None:
    ir = _chain(["Dense", "ReLU", "Softmax", "Dense", "ReLU"])
    text = "Failed to convert node functional_1/n2_1/Softmax: error in model/n2_1/Softmax:0"
    assert mentioned_layers(ir, text) == ["n2"]
    check, calls = _counting(lambda candidate: any(layer.class_name == "Softmax" for layer in candidate.body))
    outcome = reduce_bug(ir, check, budget_s=60, hints=mentioned_layers(ir, text))
    assert outcome.steps[0] == "n2 alone" and len(calls) <= 3


def test_numeric_bugs_skip_the_prefix_search() -> None:
    ir = _chain(["Dense", "ReLU", "Softmax", "Dense"])
    check, _calls = _counting(lambda candidate: any(layer.class_name == "Softmax" for layer in candidate.body))
    outcome = reduce_bug(ir, check, budget_s=60, localized="n2", numeric=True)
    assert outcome.steps[:2] == ["cut at n2", "n2 alone"]


def test_generated_names_and_shapes_of_every_library_are_masked() -> None:
    a = normalize_message("Incompatible attr in node _minimum0 at 1-th input: expected [2,3], got (2, 4)")
    b = normalize_message("Incompatible attr in node _minimum12 at 1-th input: expected [5,3], got (7, 4)")
    assert a == b and "_minimum" not in a
    assert normalize_message("Reshape__807 failed") == normalize_message("Reshape__12 failed")
    assert normalize_message("tensor<2x?x4xf32>") == normalize_message("tensor<7x3xf16>")
    kept = normalize_message("float16 vs float32 at opset11")
    assert "float16" in kept and "float32" in kept and "opset11" in kept


def test_bugs_whose_reduced_forms_coincide_merge_into_the_earliest(tmp_path: Path) -> None:
    reduced = model("Softmax")
    parts_a = {"kind": "crash", "library": "onnxruntime", "stage": "execute", "exception": "Fail",
               "message": "shape (2, 3) bad", "frames": ["onnxruntime/x.py:run"]}
    parts_b = {**parts_a, "message": "other wording"}
    exact = reduced_keys(parts_a, reduced)[0]  # the exact key: library, symptom, culprit class
    assert exact == reduced_keys(parts_b, reduced)[0]
    assert exact not in reduced_keys(parts_a, model("Dense")) and exact not in reduced_keys(parts_a, model("ReLU"))
    assert exact == reduced_keys({**parts_a, "stage": "tf-function"}, model("Dense", "Softmax"))[0]
    with make_campaign(tmp_path / "c") as store:
        add_finding(store, 7, model("Dense", "Softmax"), crash_result("boom one"),
                    [("crash", "onnxruntime", "execute", "RuntimeError: boom one")])
        add_finding(store, 8, model("ReLU", "Softmax"), crash_result("a different text"),
                    [("crash", "onnxruntime", "execute", "RuntimeError: a different text")])
        from memo.triage.dedup import update_bugs

        update_bugs(store)
        bugs = [bug for bug in store.triage.load_bugs() if bug.library == "onnxruntime" and bug.kind == "crash"
                and bug.first_mutant > 6]
        assert len(bugs) == 2
        key = reduced_key(bugs[0].parts, reduced)
        earlier, later = sorted(bugs, key=lambda bug: (bug.first_seen, bug.id))
        assert store.triage.merge_bug(later.id, key) is None  # alone with its key so far
        assert store.triage.merge_bug(earlier.id, key) is None  # the earlier bug is the primary entry
        merged = {bug.id: bug.merged_into for bug in store.triage.load_bugs()}
        assert merged[later.id] == earlier.id and merged[earlier.id] is None


def _odd_same_pooling(ir: ModelIR) -> bool:
    """torch.onnx's failure in m40's crash-keras-export-65a337de54 (checked by running the export): a MaxPooling2D
    with 'same' padding and stride 2 on an odd spatial size (71x71 fails, 8x8 exports)."""
    shapes = analyse(ir)
    return any(layer.class_name == "MaxPooling2D" and layer.config.get("padding") == "same"
               and list(layer.config.get("pool_size") or ()) == [3, 3] and list(layer.config.get("strides") or ()) == [2, 2]
               and shapes[layer.inputs[0]].shape[1] % 2 == 1 for layer in ir.body)


def test_a_layer_whose_failure_needs_its_input_shape_is_reduced_to_that_layer_alone() -> None:
    """m40's reduction stopped at these 4 layers: removing the SeparableConv2D or the Conv2D breaks the Add, removing
    the Add prunes the pooling. The pooling alone on a fresh 71x71x256 input is the bug."""
    ir = ModelIR.loads((BUGS / "crash-keras-export-65a337de54" / "ir.json").read_text())
    check, calls = _counting(_odd_same_pooling)
    assert check(ir)
    outcome = reduce_bug(ir, check, budget_s=60,
                         previous={"reduction": {"passes": ["outputs", "hinted", "prefix", "alone", "ddmin"]}})
    assert [layer.class_name for layer in outcome.ir.body] == ["MaxPooling2D"]
    assert outcome.ir.layers[0].config["batch_shape"] == [None, 71, 71, 256]
    assert outcome.steps[0] == "block3_pool alone"
    assert [[layer.name for layer in run.body] for run in calls[1:3]] == [["add_3"], ["block3_pool"]]  # last first


def test_a_reduction_records_its_reducer_and_an_older_ones_adopted_model_is_reduced_again() -> None:
    outcome = reduce_bug(_chain(["Dense", "Flatten"]), lambda ir: True, budget_s=30.0)
    assert outcome.to_json()["reducer"] == REDUCER_VERSION
    known = Reduction.KNOWN.saying("M-0006, reduced model and script copied from the bug database")
    # m40's crash-keras-export-65a337de54: adopted at 4 layers from a reducer that recorded no version
    assert reduces_further({"status": known, "reduced_layers": 4, "reducer": None})
    assert not reduces_further({"status": known, "reduced_layers": 1})  # one layer: nothing left to cut
    assert reduces_further({"status": known, "reduced_layers": 1, "reducer": REDUCER_VERSION - 1})
    assert not reduces_further({"status": known, "reduced_layers": 4, "reducer": REDUCER_VERSION})
    assert not reduces_further({"status": known, "reduced_layers": 4, TRIED_AGAIN: "final check failed"})
    assert not reduces_further({"status": "done", "reduced_layers": 4})  # this campaign's own reduction


def test_a_continued_reduction_gets_as_long_as_its_earlier_turns_had() -> None:
    from memo.triage.bug_reduction import turn_budget_s

    assert turn_budget_s(45.0, None) == 45.0, "a first turn"
    cut = {"reduction": {"status": Reduction.TIMEOUT.value, "seconds": 130.0}}
    assert turn_budget_s(45.0, cut) == 130.0, "the total doubles"
    assert turn_budget_s(45.0, {"reduction": {"status": Reduction.TIMEOUT.value, "seconds": 20.0}}) == 45.0
    assert turn_budget_s(45.0, {"reduction": {"status": Reduction.DONE.value, "seconds": 300.0}}) == 45.0, \
        "a finished reduction reduced again starts over"
