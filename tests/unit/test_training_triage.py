"""Triage of training findings, pure logic (memo.triage.training_signature): signatures, folding into inference bugs,
localization in backward order, the root-cause key; and the report's rule for a training bug."""
from __future__ import annotations

from typing import Any

import numpy as np

from memo.model.ir import Layer, ModelIR
from memo.oracle import Verdict
from memo.report.sections import section_of
from memo.training.judge import differing_names
from memo.triage.training_signature import (crash_exception, first_in_backward_order, folded, owner_class,
                                            training_key, training_parts, weight_owner)


def model() -> ModelIR:
    inner = {"class_name": "Dense", "config": {"units": 5, "name": "inner"}}
    return ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 6], "dtype": "float32"}),
                    Layer("conv", "Dense", {"units": 6}, ["x"]),
                    Layer("spectral", "SpectralNormalization", {"layer": inner}, ["conv"]),
                    Layer("out", "Dense", {"units": 2}, ["spectral"])], ["out"], "m")


def training(kind: str, stage: str, name: str | None = None, backend: str = "keras-jax",
             message: str = "gradients: differ") -> Verdict:
    record = {"array": "grad_2", "name": name} if name else {}
    return Verdict(kind, backend, stage, message, extra={"training": record} if record else {})


def test_weight_paths_map_to_the_owning_layer_a_wrapped_layers_to_its_wrapper() -> None:
    ir = model()
    assert weight_owner(ir, "conv/kernel").name == "conv"
    assert weight_owner(ir, "inner/kernel").name == "spectral"  # the wrapped Dense's own name
    assert weight_owner(ir, "spectral/inner/kernel").name == "spectral"
    # a wrapped layer without a name of its own: Keras named it after its class (found so in a campaign)
    unnamed = model()
    unnamed.get("spectral").config["layer"] = {"class_name": "Dense", "config": {"units": 5}}
    assert weight_owner(unnamed, "dense/kernel").name == "spectral"
    assert weight_owner(unnamed, "dense_3/bias").name == "spectral"
    assert weight_owner(unnamed, "conv2d/kernel") is None
    assert weight_owner(ir, "input 0").name == "x" and weight_owner(ir, "output 0").name == "out"
    assert owner_class(ir, "input 0") == "input"
    assert owner_class(ir, "elsewhere/kernel") == "?" and owner_class(None, "conv/kernel") == "?"


def test_a_numeric_training_signature_is_kind_library_stage_and_owner_class() -> None:
    ir = model()
    parts = training_parts(training("training-inconsistency", "gradients", "inner/kernel"), ir)
    assert parts == {"kind": "training-inconsistency", "library": "keras-jax", "stage": "gradients",
                     "layer": "SpectralNormalization"}
    # another weight of another Dense layer is another bug; the same class at another stage too
    other = training_parts(training("training-inconsistency", "gradients", "out/kernel"), ir)
    adam = training_parts(training("training-inconsistency", "adam", "inner/kernel"), ir)
    assert len({str(sorted(p.items())) for p in (parts, other, adam)}) == 3


def test_a_training_crash_is_its_exception_and_masked_message() -> None:
    message = "gradients error: ValueError: Cannot take the gradient of tensor 0x7f3a12 with shape (3, 4)"
    assert crash_exception(message)[0] == "ValueError"
    one = training_parts(training("training-crash", "gradients", message=message), model())
    two = training_parts(training("training-crash", "gradients", message=message.replace("0x7f3a12", "0x55d1")),
                         model())
    assert one["exception"] == "ValueError" and "layer" not in one
    assert one == two
    assert crash_exception("forward crash: worker process killed by signal 11")[0] == ""


def test_a_forward_difference_on_a_backend_whose_inference_differs_is_folded() -> None:
    inference = [Verdict("nan", "keras-jax", "execute", "NaN in output 0")]
    assert folded(training("training-nan", "forward"), inference)
    assert folded(training("training-inconsistency", "loss"), inference)
    assert not folded(training("training-inconsistency", "gradients", "conv/kernel"), inference)  # backward: its own
    assert not folded(training("training-nan", "forward", backend="keras-torch"), inference)  # another backend
    assert not folded(training("training-nan", "forward"), [Verdict("unsupported", "keras-jax", "load", "no")])
    assert not folded(training("training-nan", "forward"), [])
    assert folded(training("training-crash", "prepare", message="prepare error: ValueError: x"),
                  [Verdict("crash", "keras-jax", "load", "ValueError: x")])


def test_localization_takes_the_first_wrong_gradient_from_the_outputs_towards_the_inputs() -> None:
    ir = model()
    # a backward pass computes conv's gradients from spectral's: spectral is the first that goes wrong
    assert first_in_backward_order(ir, ["conv/kernel", "inner/kernel", "input 0"]).name == "spectral"
    assert first_in_backward_order(ir, ["input 0", "conv/bias"]).name == "conv"
    assert first_in_backward_order(ir, ["input 0"]).name == "x"
    assert first_in_backward_order(ir, ["nowhere/kernel"]) is None


def test_differing_names_are_every_gradient_outside_the_tolerance() -> None:
    names = np.array(["conv/kernel", "inner/kernel"])
    reference = {"names": names, "grad_0": np.ones((6, 6)), "grad_1": np.ones((6, 5)), "input_grad_0": np.ones(3)}
    own = {"names": names, "grad_0": np.ones((6, 6)) * 2, "grad_1": np.ones((6, 5)), "input_grad_0": np.zeros(3)}
    assert differing_names(own, reference, "gradients") == ["conv/kernel", "input 0"]


def test_the_root_cause_key_ignores_the_message_but_not_the_decision() -> None:
    ir = model()
    parts = {"kind": "training-crash", "library": "keras-jax", "stage": "gradients", "exception": "ValueError"}
    assert training_key({**parts, "message": "a"}, ir) == training_key({**parts, "message": "b"}, ir)
    assert training_key(parts, ir, "confirmed") != training_key(parts, ir, "noise")


def test_a_layer_assigning_a_weight_in_its_call_is_one_root_cause_whatever_it_wraps() -> None:
    """t58: SpectralNormalization's JAX gradient, wrapping a Conv2D and a Conv2DTranspose, as two entries."""
    def wrapping(inner: str) -> ModelIR:
        return ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 6, 6, 1], "dtype": "float32"}),
                        Layer("sn", "SpectralNormalization", {"layer": {"class_name": inner, "config": {}}}, ["x"])],
                       ["sn"], "m")
    parts = {"kind": "training-inconsistency", "layer": "SpectralNormalization", "library": "keras-jax",
             "stage": "gradients"}
    conv, transposed = wrapping("Conv2D"), wrapping("Conv2DTranspose")
    assert not set(training_key(parts, conv, "confirmed").split()) & set(
        training_key(parts, transposed, "confirmed").split()), "without the assignment: the wrapped layer decides"
    assert set(training_key(parts, conv, "confirmed", assigned=True).split()) & set(
        training_key(parts, transposed, "confirmed", assigned=True).split())
    # another backend's, or a decision float64 set apart, stays apart
    assert not set(training_key(parts, conv, "confirmed", assigned=True).split()) & set(
        training_key({**parts, "library": "keras-torch"}, transposed, "confirmed", assigned=True).split())


def test_a_crash_in_a_layers_call_is_one_root_cause_in_training_and_inference_mode() -> None:
    """t58: LSTM's "property 'activation' of 'LSTM' object has no setter" under RematScope(activations), at the
    stages forward and eval_forward, as two entries (the second without a minimal script)."""
    lstm = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 5, 2], "dtype": "float32"}),
                    Layer("lstm", "LSTM", {"units": 3}, ["x"])], ["lstm"], "m")
    message = "Exception encountered when calling LSTM.call(). property 'activation' of 'LSTM' object has no setter"
    parts = {"kind": "training-crash", "library": "keras-tensorflow", "stage": "forward", "remat": "activations",
             "exception": "AttributeError", "message": message}
    inference_mode = {**parts, "stage": "eval_forward"}  # the signatures of t58's two entries
    assert set(training_key(parts, lstm).split()) & set(training_key(inference_mode, lstm).split())
    assert not set(training_key(parts, lstm).split()) & set(training_key({**parts, "stage": "optimizer"}, lstm).split())


def entry(**values: Any) -> Any:
    base = {"kind": "training-inconsistency", "reduced_layers": 1, "original_layers": 3, "reduction": {},
            "reproduces": True, "truth": {"decision": "confirmed"}, "minimal": {"reproduces": True, "lines": 20},
            "newest": {}}
    return {**base, **values}


def test_a_training_bug_is_ready_on_its_checked_repro_and_a_confirming_truth() -> None:
    assert section_of(entry()) == "ready"
    assert section_of(entry(truth={})) == "not-ready"  # numeric: the float64 truth must have judged it
    assert section_of(entry(truth={"decision": "noise"})) == "noise"
    assert section_of(entry(truth={"decision": "ill-conditioned"})) == "ill-conditioned"
    assert section_of(entry(reproduces=False)) == "not-reproducing"
    assert section_of(entry(kind="training-crash", truth={})) == "ready"  # a crash needs no truth
    # its checked repro.py decides; a minimal script checked and not showing it keeps it out of "ready" (the script
    # the maintainer is given: p47's JAX NaN gradient showed only under memo's worker settings)
    assert section_of(entry(minimal={"reproduces": False, "lines": 30, "reason": "other arrays"})) == "not-ready"
    # t70: none tried yet (the pass had no time left) is not ready: the script would be the whole repro.py
    assert section_of(entry(minimal=None)) == "not-ready"
    # none the idiom can write: its checked repro.py decides
    assert section_of(entry(minimal={"reproduces": None, "reason": "memo writes no training script for stage 'x'"})) \
        == "ready"
    assert section_of(entry(minimal={"reproduces": True, "lines": 30})) == "ready"


def test_the_training_idiom_writes_each_backends_own_training_code() -> None:
    import ast

    import pytest

    from memo.filing.training_idiom import NoTrainingIdiom, STAGES, check_lines, training_lines

    calls = {"keras-tensorflow": "tf.GradientTape()", "keras-jax": "jax.grad(compute_loss)",
             "keras-torch": ".backward()"}
    for library, call in calls.items():
        for stage in STAGES:
            imports, lines, prefix = training_lines(library, stage, "training-inconsistency", "nadam")
            text = "\n".join([*imports, *lines, *check_lines("training-inconsistency", prefix, "keras-tensorflow")])
            ast.parse(text)
            assert (call in text) == (stage == "gradients"), (library, stage)
            assert prefix == {"gradients": "grad", "forward": "out", "optimizer": "opt"}.get(stage, stage)
        assert "optimizer.apply(" in "\n".join(training_lines(library, "adam", "training-nan")[1])
        # the optimizer stage constructs the bug's own catalogue entry, stepped as often as the check stepped it
        nadam = "\n".join(training_lines(library, "optimizer", "training-nan", "nadam")[1])
        assert "optimizer = keras.optimizers.Nadam(learning_rate=0.1)" in nadam and "range(3)" in nadam
        with pytest.raises(NoTrainingIdiom):
            training_lines(library, "optimizer", "training-nan", None)
    assert check_lines("training-crash", "grad", "") == ['print("no error: the bug does not reproduce")']
    with pytest.raises(NoTrainingIdiom):
        training_lines("keras-openvino", "gradients", "training-inconsistency")
    with pytest.raises(NoTrainingIdiom):
        training_lines("keras-jax", "state", "training-inconsistency")


def test_an_optimizer_defect_is_keyed_by_the_weight_precision_and_mixed_dtypes() -> None:
    from memo.triage.training_signature import training_parts, update_precision

    ir = model()
    assert update_precision(ir, "out/kernel") == "float32"
    ir.get("conv").config["dtype"] = {"class_name": "DTypePolicy", "config": {"name": "float16"}}
    assert update_precision(ir, "conv/kernel") == "float16 among float16,float32"
    assert update_precision(ir, "out/kernel") == "float32 among float16,float32"
    parts = training_parts(training("training-inconsistency", "adam", "conv/kernel"), ir)
    assert parts["weights"] == "float16 among float16,float32" and "layer" not in parts
    # at the catalogue's stage a mixed-precision difference is the optimizers' shared code: no class, no low dtype
    parts = training_parts(training("training-inconsistency", "optimizer", "out/kernel"), ir)
    assert parts["weights"] == "float32 among mixed precisions" and "optimizer" not in parts
    ir.get("conv").config["dtype"] = {"class_name": "DTypePolicy", "config": {"name": "bfloat16"}}
    assert training_parts(training("training-inconsistency", "optimizer", "out/kernel"), ir) == parts
    assert training_parts(training("training-inconsistency", "gradients", "conv/kernel"), ir)["layer"] == "Dense"


def test_a_mixed_precision_update_difference_in_keras_on_torch_code_is_one_entry() -> None:
    """long150d: Adam and AdamW at the catalogue's stage and Adam at the fixed stage, keys apart only by the stage and
    the dtype of the weight that differed: Keras on torch's optimizers compute their scalars in the first
    variable's dtype, one defect."""
    def key(stage: str, weights: str, library: str = "keras-torch", decision: str = "confirmed") -> set[str]:
        parts = {"kind": "training-inconsistency", "library": library, "stage": stage, "weights": weights}
        return set(training_key(parts, model(), decision).split())

    fixed = key("adam", "float64 among bfloat16,float32,float64")
    assert fixed & key("optimizer", "float32 among mixed precisions") & key("optimizer", "float64 among mixed precisions")
    assert not fixed & key("adam", "float64 among bfloat16,float32,float64", decision="noise"), "float64 sets apart"
    # t69: a float16 gamma's step that float64 left undecided is the same code's, beside the confirmed entry
    assert fixed & key("optimizer", "float16 among mixed precisions", decision="undecided")
    assert not fixed & key("adam", "float64"), "one precision: not this defect"
    assert not fixed & key("adam", "float64 among bfloat16,float32,float64", library="keras-jax"), "generic code"


def test_dedup_makes_training_bugs_and_folds_a_forward_difference_into_the_inference_bug(tmp_path: Any) -> None:
    from memo.store import CampaignStore, MutantRecord
    from memo.triage import dedup

    store = CampaignStore(tmp_path, create=True)
    store.set_meta("config", {"seed": 1, "backends": ["keras-tensorflow", "keras-jax"]})
    ir = model()
    result = {"artifact_dir": "gone", "reference": "keras-tensorflow", "backends": {}}
    ids = []
    for iteration in range(3):
        mutant = store.add_mutant(MutantRecord(iteration, "s", "NLA", "seed:s", "s", {}, ir.dumps(), True,
                                               diverse=True))
        store.add_execution(mutant, result, 1.0, None)
        ids.append(mutant)
    # the first model differs at inference on JAX: its forward training verdict is that bug again
    store.add_verdict(ids[0], Verdict("inconsistency", "keras-jax", "execute", "outputs differ"))
    store.add_verdict(ids[0], training("training-inconsistency", "forward", "output 0", message="forward: differs"))
    # the gradient differences of the wrapper on two models are one bug; another stage another
    for mutant in ids[:2]:
        store.add_verdict(mutant, training("training-inconsistency", "gradients", "inner/kernel"))
    store.add_verdict(ids[2], training("training-inconsistency", "adam", "inner/kernel"))
    # an optimizer's difference is keyed by the weight's precision, not the layer owning it: one bug
    store.add_verdict(ids[1], training("training-inconsistency", "adam", "out/kernel"))
    update = dedup.update_bugs(store)
    bugs = {bug.id: bug for bug in store.triage.load_bugs()}
    training_bugs = sorted((bug.stage, bug.occurrences, bug.layer_class) for bug in bugs.values()
                           if bug.kind.startswith("training-"))
    assert training_bugs == [("adam", 2, None), ("gradients", 2, "SpectralNormalization")]
    assert len(update.all) == 3  # and the inference bucket
    store.close()


def test_a_training_crash_differing_only_in_dtype_names_is_one_defect() -> None:
    from memo.triage.training_signature import training_parts

    # p41: Adam(global_clipnorm) on TensorFlow with float16, float64 and float32 weights beside others
    messages = ["optimizer error: InvalidArgumentError: cannot compute Mul as input #1(zero-based) was expected to be "
                f"a {a} tensor but is a {b} tensor [Op:Mul] name:" for a, b in
                (("half", "float"), ("double", "float"), ("float", "half"))]
    keys = [training_parts(Verdict("training-crash", "keras-tensorflow", "optimizer", m), model()) for m in messages]
    assert keys[0] == keys[1] == keys[2] and "<dtype> tensor" in keys[0]["message"]
    # which witnesses finished the stage is not the bug: triage's reruns ask one
    fewer = training_parts(Verdict("training-crash", "keras-tensorflow", "optimizer",
                                   messages[0] + " (finished by keras-torch)"), model())
    both = training_parts(Verdict("training-crash", "keras-tensorflow", "optimizer",
                                  messages[0] + " (finished by keras-jax, keras-torch)"), model())
    assert fewer == both == keys[0]


def test_a_sweep_verdict_is_keyed_on_the_probe_it_was_computed_on() -> None:
    from memo.training.judge import MODEL_IR_KEY
    from memo.triage.precision_probe import dense_probe
    from memo.triage.training_signature import training_parts

    probe = dense_probe(("float16", "float32"))
    verdict = training("training-inconsistency", "optimizer", "dense_float32/kernel")
    assert training_parts(verdict, model())["weights"] == "?"  # the executed model holds no such weight
    verdict.extra["training"][MODEL_IR_KEY] = probe.dumps()
    assert training_parts(verdict, model())["weights"] == "float32 among mixed precisions"
    # a non-finite update: the optimizer's arithmetic in that precision, alone or beside others
    nan = training("training-nan", "optimizer", "dense_bfloat16/kernel")
    nan.extra["training"][MODEL_IR_KEY] = dense_probe(("bfloat16", "float32")).dumps()
    alone = training("training-nan", "optimizer", "dense_bfloat16/kernel")
    alone.extra["training"][MODEL_IR_KEY] = dense_probe(("bfloat16",)).dumps()
    assert training_parts(nan, None) == training_parts(alone, None)
    assert training_parts(alone, None)["weights"] == "bfloat16"


def test_an_optimizer_step_is_keyed_by_keras_code_not_by_the_backend_that_showed_it() -> None:
    from memo.oracle import KERAS_FRONT_END
    from memo.triage.training_signature import GENERIC_CODE, TORCH_BACKEND, shared_code_parts

    # long150: Nadam's bfloat16 update NaN on TensorFlow (also on JAX): Keras's generic nadam.py, one key
    def nan(backend: str) -> Verdict:
        verdict = training("training-nan", "optimizer", "out/kernel", backend=backend)
        verdict.extra["training"]["optimizer"] = "nadam"
        return verdict
    tf, jax = training_parts(nan("keras-tensorflow"), model()), training_parts(nan("keras-jax"), model())
    assert tf == jax and tf["library"] == KERAS_FRONT_END and tf["code"] == GENERIC_CODE
    assert training_key(tf, model(), "confirmed") == training_key(jax, model(), "confirmed")
    # Keras on torch steps Nadam with its own torch_nadam.py: another implementation, another key
    torch = training_parts(nan(TORCH_BACKEND), model())
    assert torch["code"] == TORCH_BACKEND and torch != tf
    # Lamb has no torch implementation: torch runs the generic code too
    lamb = nan(TORCH_BACKEND)
    lamb.extra["training"]["optimizer"] = "lamb"
    assert training_parts(lamb, model())["code"] == GENERIC_CODE
    # the fixed stages name their class: Keras on torch's SGD is torch_sgd.py
    assert training_parts(training("training-inconsistency", "sgd", "out/kernel", backend=TORCH_BACKEND),
                          model())["code"] == TORCH_BACKEND
    # a stored signature from before the rule is keyed as a new one
    stored = {"kind": "training-nan", "library": "keras-tensorflow", "stage": "optimizer", "optimizer": "Nadam",
              "weights": "out"}
    assert shared_code_parts(stored) == {**stored, "library": KERAS_FRONT_END, "code": GENERIC_CODE}
    assert training_key(stored, model(), "confirmed") == training_key(
        {**stored, "library": "keras-jax"}, model(), "confirmed")
    # a crash of Keras's generic code on TensorFlow: one key per optimizer class, not per backend
    crash = "optimizer error: InvalidArgumentError: cannot compute Mul as input #1(zero-based) was expected to be " \
            "a half tensor but is a float tensor [Op:Mul] name:"
    adam = Verdict("training-crash", "keras-tensorflow", "optimizer", crash,
                   extra={"training": {"optimizer": "adam-global-clipnorm"}})
    parts = training_parts(adam, model())
    assert parts["library"] == KERAS_FRONT_END and parts["optimizer"] == "Adam" and parts["code"] == GENERIC_CODE
    # a gradient is the backend's own autodiff: keyed by the backend still
    assert training_parts(training("training-inconsistency", "gradients", "out/kernel"), model())["library"] \
        == "keras-jax"


def test_a_training_forward_difference_of_a_layer_is_one_entry_with_its_inference_difference() -> None:
    from memo.triage.signature import TRUTH_DECISION, reduced_key

    # long150: Keras on torch's 'same' AveragePooling1D, found through a Conv1D gradient and relocalized to the
    # pooling's forward output (memo.triage.training_forward), and found by inference in another model
    pooling = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 30, 8], "dtype": "float32"}),
                       Layer("average_pooling1d", "AveragePooling1D",
                             {"pool_size": 4, "strides": 1, "padding": "same"}, ["x"])], ["average_pooling1d"], "m")
    forward = {"kind": "training-inconsistency", "library": "keras-torch", "stage": "forward",
               "layer": "AveragePooling1D"}
    inference = {"kind": "inconsistency", "layer": "AveragePooling1D", "library": "keras-torch",
                 "reference": "keras-tensorflow", TRUTH_DECISION: "confirmed"}
    training_keys = set(training_key(forward, pooling, "confirmed").split())
    assert training_keys & set(reduced_key(inference, pooling).split())
    # another backend, or a gradient of the layer: not that inference bug
    assert not set(training_key({**forward, "library": "keras-jax"}, pooling, "confirmed").split()) \
        & set(reduced_key(inference, pooling).split())
    assert len(training_key({**forward, "stage": "gradients"}, pooling, "confirmed").split()) == 1
    # a layer whose training-mode call is code of its own (batch statistics): its training difference stays apart
    batch_norm = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 6], "dtype": "float32"}),
                          Layer("bn", "BatchNormalization", {}, ["x"])], ["bn"], "m")
    assert len(training_key({**forward, "layer": "BatchNormalization"}, batch_norm, "confirmed").split()) == 1


def test_a_weight_path_a_wrapped_layer_shares_with_a_named_one_is_the_wrappers() -> None:
    inner = {"class_name": "Dense", "module": "keras.layers", "config": {"units": 4}}
    ir = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 6], "dtype": "float32"}),
                  Layer("spectral", "SpectralNormalization", {"layer": inner}, ["x"]),
                  Layer("dense", "Dense", {"units": 3}, ["spectral"])], ["dense"], "clash")
    # Keras names the wrapped Dense ``dense`` too (t51): the path is the wrapper's, whose code a difference came through
    assert owner_class(ir, "dense/kernel") == "SpectralNormalization"
    assert owner_class(ir, "dense_1/kernel") == "SpectralNormalization"
    plain = ModelIR([ir.layers[0], Layer("dense", "Dense", {"units": 3}, ["x"])], ["dense"], "plain")
    assert owner_class(plain, "dense/kernel") == "Dense"


def test_a_forward_training_crash_shares_the_inference_crashs_key() -> None:
    from memo.triage.signature import reduced_keys
    from memo.triage.training_signature import training_key

    ir = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 4, 6], "dtype": "float32"}),
                  Layer("norm", "LayerNormalization", {"axis": 1}, ["x"])], ["norm"], "ln")
    message = "Exception encountered when calling LayerNormalization.call(). Given normalized_shape=SHAPE"
    crash = {"kind": "crash", "library": "keras-torch", "stage": "execute", "exception": "RuntimeError",
             "message": message, "frames": ["torch/nn/functional.py:layer_norm"]}
    training = {"kind": "training-crash", "library": "keras-torch", "stage": "forward", "exception": "RuntimeError",
                "message": message}
    assert set(reduced_keys(crash, ir)) & set(training_key(training, ir).split())  # one entry
    under_remat = {**training, "remat": "full"}  # remat's code: its own entry
    assert not set(reduced_keys(crash, ir)) & set(training_key(under_remat, ir).split())


def test_a_training_crash_naming_the_layer_as_a_python_object_is_one_entry_across_classes() -> None:
    # t52: RematScope("activations") sets ``activation`` on every RNN layer, whose property has no setter: one Keras
    # defect, met through LSTM and ConvLSTM3D
    def rnn(class_name: str) -> ModelIR:
        return ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 4, 3], "dtype": "float32"}),
                        Layer("rnn", class_name, {"units": 2}, ["x"])], ["rnn"], "m")

    def crash(class_name: str) -> dict[str, Any]:
        return {"kind": "training-crash", "library": "keras-tensorflow", "stage": "forward", "remat": "activations",
                "exception": "AttributeError",
                "message": f"property 'activation' of '{class_name}' object has no setter"}

    lstm = set(training_key(crash("LSTM"), rnn("LSTM")).split())
    conv = set(training_key(crash("ConvLSTM3D"), rnn("ConvLSTM3D")).split())
    assert lstm & conv
    # another message on the same classes, or a message that names no layer object: keyed by the class still
    other = {**crash("ConvLSTM3D"), "message": "property 'units' of 'ConvLSTM3D' object has no setter"}
    assert not lstm & set(training_key(other, rnn("ConvLSTM3D")).split())
    plain = {key: value for key, value in crash("LSTM").items() if key != "remat"}
    assert len(training_key({**plain, "stage": "gradients", "message": "an error in LSTM"}, rnn("LSTM")).split()) == 1


def test_a_training_crash_under_remat_with_one_message_is_one_entry_across_classes() -> None:
    # t53: JAX's checkpoint traces ``training``: ``if training`` fails alike in LSTM and BatchNormalization
    def model(class_name: str) -> ModelIR:
        return ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 4, 3], "dtype": "float32"}),
                        Layer("layer", class_name, {}, ["x"])], ["layer"], "m")

    message = ("Attempted boolean conversion of traced array with shape bool[]. The error occurred while tracing the "
               "function call at PATH:N for checkpoint / remat.")
    crash = {"kind": "training-crash", "library": "keras-jax", "stage": "forward", "remat": "full",
             "exception": "TracerBoolConversionError", "message": message}
    lstm = set(training_key(crash, model("LSTM")).split())
    assert lstm & set(training_key(crash, model("BatchNormalization")).split())
    # stored cut at another length (the path's): the same complete sentences
    cut = {**crash, "message": message + " This concrete value was not avail"}
    assert lstm & set(training_key(cut, model("Attention")).split())
    # without remat the layer's own code raised: keyed by its class
    plain = {key: value for key, value in crash.items() if key != "remat"}
    assert not set(training_key(plain, model("LSTM")).split()) & set(
        training_key(plain, model("BatchNormalization")).split())


def test_a_remat_difference_needing_an_activity_regularizer_is_one_entry_across_classes() -> None:
    # t53: TensorFlow drops an activity regularizer's gradient under RematScope, on a Dense and on a Conv1D model
    def model(class_name: str, regularized: bool = True) -> ModelIR:
        config = {"activity_regularizer": "l1"} if regularized else {}
        return ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 4, 3], "dtype": "float32"}),
                        Layer("layer", class_name, config, ["x"])], ["layer"], "m")

    def gradient(class_name: str) -> dict[str, Any]:
        return {"kind": "training-inconsistency", "library": "keras-tensorflow", "stage": "gradients",
                "remat": "full", "layer": class_name}

    dense = set(training_key(gradient("Dense"), model("Dense"), "confirmed").split())
    assert dense & set(training_key(gradient("Conv1D"), model("Conv1D"), "confirmed").split())
    # without the setting, or without remat: each its own
    assert not dense & set(training_key(gradient("Conv1D"), model("Conv1D", False), "confirmed").split())
    plain = {key: value for key, value in gradient("Conv1D").items() if key != "remat"}
    assert not dense & set(training_key(plain, model("Conv1D"), "confirmed").split())
    # t69: the regularizer's gradient is small where the layer's output is: float64's "noise" on a BatchNormalization
    # gamma was this defect, seen through another weight
    assert dense & set(training_key(gradient("Conv1D"), model("Conv1D"), "noise").split())
    # t69: the setting on a layer a wrapper holds, the wrapper assigning its kernel in call(): remat's defect still
    wrapped = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 4, 3], "dtype": "float32"}),
                       Layer("sn", "SpectralNormalization", {"layer": {"class_name": "Dense", "config": {
                           "units": 1, "activity_regularizer": "l1"}}}, ["x"])], ["sn"], "m")
    assigned = set(training_key(gradient("Conv2D"), wrapped, "confirmed", assigned=True).split())
    assert dense & assigned
    assert not assigned & set(training_key(gradient("Conv2D"), model("SpectralNormalization", False), "confirmed",
                                           assigned=True).split()), "no setting: the assignment's key"
    # t55: JAX's checkpoint lets the regularizer's loss escape as a tracer, a crash of the same remat code
    crash = {"kind": "training-crash", "library": "keras-jax", "stage": "forward", "remat": "full",
             "exception": "UnexpectedTracerError", "message": "Encountered an unexpected tracer."}
    assert dense & set(training_key(crash, model("Dense")).split())
    assert not dense & set(training_key({**crash, "remat": "activations"}, model("Dense")).split())
    assert not dense & set(training_key(crash, model("Dense", False)).split())


def test_a_bug_adopted_with_a_turned_folder_is_keyed_by_the_library_its_folder_blames() -> None:
    from memo.triage.rekey import folder_blame

    # t53: the folder of t51's remat gradient blames TensorFlow (float64 turned it round); its new finding accused torch
    parts = {"kind": "training-inconsistency", "library": "keras-torch", "stage": "gradients", "layer": "Conv2D"}
    assert folder_blame(parts, {"library": "keras-tensorflow"})["library"] == "keras-tensorflow"
    assert folder_blame(parts, {}) == parts
    optimizer = {**parts, "stage": "optimizer", "library": "keras", "code": "generic"}
    assert folder_blame(optimizer, {"library": "keras-tensorflow"}) == optimizer


def _torch_gradient_bug(store: Any, folder: Any, recorded: dict[str, Any]) -> Any:
    """A keras-torch gradient finding's bug in ``store`` whose folder holds ``recorded`` as its bug.json."""
    import json

    from memo.triage.dedup import update_bugs
    from tests.unit.triage_store import add_finding, model

    add_finding(store, 6, model("Conv2D"), {"artifact_dir": "gone", "reference": "keras-tensorflow", "backends": {}},
                [("training-inconsistency", "keras-torch", "gradients", "conv/kernel: 9/9 elements outside")])
    update_bugs(store)
    bug = next(b for b in store.triage.load_bugs() if b.library == "keras-torch")
    folder.mkdir()
    (folder / "bug.json").write_text(json.dumps({"id": bug.id, "kind": bug.kind, "stage": "gradients", **recorded}))
    store.triage.update_bug(bug.id, bug_dir=str(folder))
    return bug


def test_an_adopted_training_bug_is_filed_against_the_library_its_folder_blames(tmp_path: Any) -> None:
    from memo.triage.blame import decide_all
    from tests.unit.triage_store import make_campaign

    # t54: the folder of a remat gradient float64 turned round to TensorFlow, adopted by a finding that accused torch
    with make_campaign(tmp_path / "campaigns" / "unit") as store:
        bug = _torch_gradient_bug(store, tmp_path / "bug", {"library": "keras-tensorflow"})
        decide_all(store)
        assert store.triage.load_bug(bug.id).blame["library"] == "keras-tensorflow"


def test_an_adopted_folder_whose_truth_blames_the_reference_is_triaged_anew(tmp_path: Any) -> None:
    """t63, t64: a database record made before triage turned roles round filed a TensorFlow remat gradient at
    keras-torch, float64 siding with torch; adopting it kept it there in every campaign."""
    from memo.bugdb import BugDatabase
    from memo.triage.remember import adopt_known, record_campaign
    from tests.unit.triage_store import make_campaign, model

    turned = {"decision": "contradicted", "blamed": "witness", "accused": ["keras-torch"],
              "witnesses": ["keras-tensorflow"], "errors": {"keras-tensorflow": 293.0, "keras-torch": 0.004}}
    with make_campaign(tmp_path / "campaigns" / "unit") as store, BugDatabase(tmp_path / "bugs.sqlite") as db:
        folder = tmp_path / "recorded"
        bug = _torch_gradient_bug(store, folder, {"library": "keras-torch", "reference": "keras-tensorflow",
                                                  "truth": turned})
        (folder / "ir.json").write_text(model("Conv2D").dumps())
        for name in ("model.keras", "repro.py"):
            (folder / name).write_text("x")
        store.triage.update_bug(bug.id, reduced_layers=1, original_layers=1, reduction={"status": "done"})
        record_campaign(db, store)
        store.triage.update_bug(bug.id, bug_dir=None, reduction={}, reduced_layers=None)
        assert adopt_known(db, store, store.triage.load_bug(bug.id)) is None
        assert store.triage.load_bug(bug.id).bug_dir is None
        assert not (tmp_path / "campaigns" / "unit" / "bugs" / bug.id).exists()
