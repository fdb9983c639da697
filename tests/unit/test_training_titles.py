"""A training bug's title: the stage's array and how it goes wrong, with the figure its check prints."""
from __future__ import annotations

from memo.filing.training_idiom import training_symptom


def test_a_gradient_difference_names_the_weight_the_reference_and_the_figure() -> None:
    record = {"array": "grad_0", "name": "dense/kernel",
              "figures": {"mismatched": 99, "elements": 100, "max_abs_diff": 0.2049638, "tolerance": 0.001}}
    assert training_symptom("gradients", "training-inconsistency", record, "keras-tensorflow") == \
        "gradient of dense/kernel differs from keras-tensorflow by 0.205"


def test_an_optimizer_stage_names_the_catalogue_entry_class_and_nan_says_finite() -> None:
    record = {"array": "opt_1", "name": "conv/bias", "optimizer": "nadam"}
    # judged without a reference (finite weights, finite gradients), which may make the same NaN (q48: Nadam's
    # bfloat16 update on TensorFlow and JAX; "where keras-tensorflow computes it finite" contradicted the blame)
    assert training_symptom("optimizer", "training-nan", record, "keras-torch") == \
        "Nadam update of conv/bias is NaN/Inf from finite weights and gradients"
    assert training_symptom("optimizer", "training-nan", record, "keras-tensorflow", also="keras-jax") == \
        "Nadam update of conv/bias is NaN/Inf from finite weights and gradients (also on keras-jax)"
    assert training_symptom("gradients", "training-nan", {"name": "d/kernel"}, "keras-tensorflow") == \
        "gradient of d/kernel is NaN/Inf where keras-tensorflow computes it finite"
    assert training_symptom("adam", "training-inconsistency", {"name": "d/kernel"}, "keras-tensorflow") == \
        "Adam update of d/kernel differs from keras-tensorflow"


def test_a_crash_leaves_the_title_to_its_message() -> None:
    assert training_symptom("gradients", "training-crash", {"name": "x"}, "keras-tensorflow") == ""


def test_an_optimizer_crash_names_the_optimizer_and_the_variables_not_the_layers(tmp_path) -> None:
    import json

    from memo.filing.check import MinimalScript
    from memo.filing.folder import BugFolder
    from memo.filing.issue import render_issue
    from memo.filing.title import optimizer_culprit
    from memo.triage.precision_probe import dense_probe

    (tmp_path / "ir.json").write_text(dense_probe(("float16", "float32")).dumps())
    message = ("optimizer error: InvalidArgumentError: cannot compute Mul as input #1(zero-based) was expected to be "
               "a half tensor but is a float tensor [Op:Mul] name: (finished by keras-torch) [optimizer "
               "adam-global-clipnorm: keras.optimizers.Adam(learning_rate=0.1, global_clipnorm=1.0)]")
    (tmp_path / "bug.json").write_text(json.dumps({
        "id": "training-crash-keras-tensorflow-x", "kind": "training-crash", "library": "keras-tensorflow",
        "stage": "optimizer", "reference": "keras-tensorflow", "message": message, "error_message": message,
        "exception": "InvalidArgumentError", "training": {"optimizer": "adam-global-clipnorm"}}))
    folder = BugFolder.read(tmp_path)
    assert optimizer_culprit(folder) == "Adam(global_clipnorm=1.0) on float16+float32 variables"
    text = render_issue(folder, MinimalScript(reason="not checked"))
    assert text.startswith("# [keras-tensorflow] Adam(global_clipnorm=1.0) on float16+float32 variables: ")
    assert ("`keras.optimizers.Adam(learning_rate=0.1, global_clipnorm=1.0)` fails to step float16 and float32 "
            "variables") in text and "where Keras on PyTorch steps the same variables" in text
    assert "The training step completes, as it does on Keras on PyTorch" in text


def test_an_optimizer_difference_is_described_by_the_optimizer_and_its_variables(tmp_path) -> None:
    import json

    from memo.filing.check import MinimalScript
    from memo.filing.folder import BugFolder
    from memo.filing.issue import render_issue
    from memo.triage.precision_probe import dense_probe

    (tmp_path / "ir.json").write_text(dense_probe(("float16", "float32")).dumps())
    (tmp_path / "bug.json").write_text(json.dumps({
        "id": "training-inconsistency-keras-torch-x", "kind": "training-inconsistency", "library": "keras-torch",
        "stage": "optimizer", "reference": "keras-tensorflow", "message": "optimizer: dense_float32/kernel: differs",
        "training": {"optimizer": "adamax", "name": "dense_float32/kernel", "array": "opt_2",
                     "figures": {"max_abs_diff": 0.0271}}}))
    text = render_issue(BugFolder.read(tmp_path), MinimalScript(reason="not checked"))
    assert text.startswith("# [keras-torch] Adamax() on float16+float32 variables: Adamax update of dense_float32")
    assert ("`keras.optimizers.Adamax(learning_rate=0.1)` stepping float16 and float32 variables "
            "(`optimizer.apply(gradients, variables)`, fixed gradients) computes a step whose Adamax update of "
            "dense_float32/kernel differs from keras-tensorflow by 0.0271") in text


def test_a_nonfinite_update_script_asserts_finiteness_without_the_references_arrays() -> None:
    from memo.filing.training_idiom import check_lines

    update = "\n".join(check_lines("training-nan", "opt", "keras-tensorflow"))
    assert "np.isfinite(got)" in update and "expected.npz" not in update  # the reference may be the same NaN
    gradient = "\n".join(check_lines("training-nan", "grad", "keras-tensorflow"))
    assert "expected.npz" in gradient and "np.isfinite(got)" in gradient


def test_a_difference_keyed_by_mixed_precisions_alone_does_not_blame_the_entrys_options(tmp_path) -> None:
    """r48's reader: "Adam(gradient_accumulation_steps=2)" in the title blamed the option, while plain Adam on the same
    float16 + float32 variables differs as well (Keras on torch's first-variable dtype)."""
    import json

    from memo.filing.check import MinimalScript
    from memo.filing.folder import BugFolder
    from memo.filing.issue import render_issue
    from memo.triage.precision_probe import dense_probe

    (tmp_path / "ir.json").write_text(dense_probe(("float16", "float32")).dumps())
    (tmp_path / "bug.json").write_text(json.dumps({
        "id": "training-inconsistency-keras-torch-y", "kind": "training-inconsistency", "library": "keras-torch",
        "stage": "optimizer", "reference": "keras-tensorflow", "message": "optimizer: dense_float32/kernel: differs",
        "signature": {"kind": "training-inconsistency", "library": "keras-torch", "stage": "optimizer",
                      "weights": "float32 among mixed precisions"},
        "training": {"optimizer": "adam-accumulate", "name": "dense_float32/kernel", "array": "opt_2",
                     "figures": {"max_abs_diff": 0.0127}}}))
    text = render_issue(BugFolder.read(tmp_path), MinimalScript(reason="not checked"))
    assert text.startswith("# [keras-torch] Adam() on float16+float32 variables: Adam update of dense_float32"), text
    assert "The option is not the cause" in text


def test_a_nonfinite_low_precision_update_names_the_factor_its_dtype_rounds_to_one(tmp_path) -> None:
    """t54's reader: Nadam's bfloat16 NaN update was filed without its cause, beta_2=0.999 being 1.0 in bfloat16."""
    import json

    from memo.filing.check import MinimalScript
    from memo.filing.folder import BugFolder
    from memo.filing.issue import render_issue
    from memo.filing.training_text import rounded, rounded_decays_note
    from memo.triage.precision_probe import dense_probe

    assert rounded(0.999, 8) == 1.0 and rounded(0.999, 11) == 0.9990234375 and rounded(0.99, 8) < 1.0
    assert rounded_decays_note("Nadam(learning_rate=0.01)", ["float16"]) == ""
    assert rounded_decays_note("Nadam(learning_rate=0.01, beta_2=0.99)", ["bfloat16"]) == ""  # a setting overrides
    assert rounded_decays_note("Lion(learning_rate=0.01)", ["bfloat16"]) == ""
    (tmp_path / "ir.json").write_text(dense_probe(("bfloat16",)).dumps())
    (tmp_path / "bug.json").write_text(json.dumps({
        "id": "training-nan-keras-x", "kind": "training-nan", "library": "keras", "stage": "optimizer",
        "reference": "keras-tensorflow", "message": "optimizer: dense_bfloat16/kernel: 12 non-finite values",
        "training": {"optimizer": "nadam", "name": "dense_bfloat16/kernel", "array": "opt_0"}}))
    text = render_issue(BugFolder.read(tmp_path), MinimalScript(reason="not checked"))
    assert "In bfloat16 (8 significant bits) `beta_2=0.999` rounds to 1.0" in text
    assert "`1 - beta_2**t` the step computes for the bfloat16 variables is 0" in text


def test_an_optimizer_crash_is_not_explained_by_a_rounded_factor(tmp_path) -> None:
    """t55: Keras on torch's Nadam crash on bfloat16 (`_foreach_div` given a numpy scalar) is a type error; the
    rounding of beta_2, which explains the generic code's NaN, is no part of it."""
    import json

    from memo.filing.check import MinimalScript
    from memo.filing.folder import BugFolder
    from memo.filing.issue import render_issue
    from memo.triage.precision_probe import dense_probe

    (tmp_path / "ir.json").write_text(dense_probe(("bfloat16",)).dumps())
    message = "optimizer error: TypeError: _foreach_div() received an invalid combination of arguments"
    (tmp_path / "bug.json").write_text(json.dumps({
        "id": "training-crash-keras-x", "kind": "training-crash", "library": "keras", "stage": "optimizer",
        "reference": "keras-tensorflow", "message": message, "error_message": message, "exception": "TypeError",
        "training": {"optimizer": "nadam"}}))
    text = render_issue(BugFolder.read(tmp_path), MinimalScript(reason="not checked"))
    assert "fails to step bfloat16 variables" in text and "rounds to 1.0" not in text


def test_a_remat_bug_needing_an_activity_regularizer_is_titled_by_the_layer_holding_it(tmp_path) -> None:
    """t55's reader: "Conv2D under RematScope(full)" hid that the bug needs the Conv1D's activity_regularizer."""
    import json

    from memo.filing.check import MinimalScript
    from memo.filing.folder import BugFolder
    from memo.filing.issue import render_issue
    from memo.model.ir import Layer, ModelIR

    ir = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 8, 8, 1], "dtype": "float32"}),
                  Layer("conv3", "Conv2D", {"filters": 2, "kernel_size": [3, 3]}, ["x"]),
                  Layer("reshape", "Reshape", {"target_shape": [36, 2]}, ["conv3"]),
                  Layer("conv1d", "Conv1D", {"filters": 2, "kernel_size": [2], "activity_regularizer": "l1"},
                        ["reshape"])], ["conv1d"], "m")
    (tmp_path / "ir.json").write_text(ir.dumps())
    (tmp_path / "bug.json").write_text(json.dumps({
        "id": "training-inconsistency-keras-tensorflow-x", "kind": "training-inconsistency",
        "library": "keras-tensorflow", "stage": "gradients", "reference": "keras-torch", "layer_class": "Conv2D",
        "message": "gradients: conv3/kernel: differs", "training": {"name": "conv3/kernel", "remat": "full"},
        "truth": {"method": "float64", "decision": "confirmed", "reason": "accused 218, witness 0.00078",
                  "errors": {"keras-tensorflow": 218.0, "keras-torch": 0.00078}}}))
    text = render_issue(BugFolder.read(tmp_path), MinimalScript(reason="not checked"))
    assert text.startswith("# [keras-tensorflow] Conv1D(activity_regularizer) under RematScope(full): ")
    # t56's reader had to check that the model without remat trains right: the float64 truth is computed so
    assert 'built without `keras.RematScope(mode="full")`: what remat must not change' in text
    # t56's reader: the expectation is the same backend's run of the model built without the scope (the script's)
    assert ('The training step\'s arrays as Keras on TensorFlow computes them for the same model and weights built '
            'without `keras.RematScope(mode="full")` (the script\'s `expected`)') in text
    assert "expected.npz" not in text.split("### Expected behavior")[1].split("memo's float64")[0]
    # t58's reader: the text never said the activity regularizer is part of it
    assert "The Conv1D's `activity_regularizer` is part of it: the reduced model keeps it" in text


def test_a_remat_bugs_script_computes_the_stage_with_and_without_the_scope_on_one_backend() -> None:
    import ast

    from memo.filing.training_idiom import check_lines, remat_control, remat_control_lines, training_lines

    assert remat_control("training-inconsistency", "gradients", {"remat": "full"}) == "full"
    assert remat_control("training-nan", "forward", {"remat": "activations"}) == "activations"
    # a crash has no expectation to compute; an optimizer's update is not under remat; no scope, no control
    assert remat_control("training-crash", "gradients", {"remat": "full"}) is None
    assert remat_control("training-inconsistency", "sgd", {"remat": "full"}) is None
    assert remat_control("training-inconsistency", "gradients", {}) is None
    for library in ("keras-tensorflow", "keras-jax", "keras-torch"):
        _, call, prefix = training_lines(library, "gradients", "training-inconsistency")
        built, computed = remat_control_lines(["model = keras.Sequential([])"], call, "full", library)
        lines = [*built, *computed, *check_lines("training-inconsistency", prefix, "keras-tensorflow", computed=True)]
        ast.parse("\n".join(lines))  # a valid script
        assert built[0].startswith("def build():") and built[-1] == "    return model"
        assert computed[-3:] == ['with keras.RematScope(mode="full"):', "    actual = compute(build())",
                                 "expected = compute(build())  # the same model and weights built without RematScope"]
        assert any(line.startswith("    return [") for line in computed), "compute returns the stage's arrays"
        assert not any("np.load('expected.npz')" in line for line in lines)


def test_a_crash_of_the_inference_mode_call_gets_a_script_of_that_call() -> None:
    """t58: LSTM under RematScope(activations) failing at stage eval_forward had no minimal script."""
    import pytest

    from memo.filing.training_idiom import NoTrainingIdiom, training_lines

    _, call, _ = training_lines("keras-tensorflow", "eval_forward", "training-crash")
    assert call == ["outputs = model(x, training=False)"]
    with pytest.raises(NoTrainingIdiom):  # a difference at that stage: no expected arrays the script could read
        training_lines("keras-tensorflow", "eval_forward", "training-inconsistency")


def test_a_weight_assigned_in_call_is_titled_by_its_own_name_in_whole_words(tmp_path) -> None:
    """t58's reader: "...assigns conv2d_transpose/kernel in call(): gradient of..." was cut mid-phrase."""
    import json

    from memo.filing.check import MinimalScript
    from memo.filing.folder import BugFolder
    from memo.filing.issue import title
    from memo.model.ir import Layer, ModelIR

    inner = {"class_name": "Conv2DTranspose", "config": {"filters": 1, "kernel_size": [3, 3],
                                                         "name": "conv2d_transpose"}}
    ir = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 4, 4, 1], "dtype": "float32"}),
                  Layer("sn", "SpectralNormalization", {"layer": inner}, ["x"])], ["sn"], "m")
    (tmp_path / "ir.json").write_text(ir.dumps())
    (tmp_path / "bug.json").write_text(json.dumps({
        "id": "training-inconsistency-keras-jax-x", "kind": "training-inconsistency", "library": "keras-jax",
        "stage": "gradients", "reference": "keras-tensorflow", "layer_class": "SpectralNormalization",
        "message": "gradients: conv2d_transpose/kernel: differs", "assigned_in_call": ["conv2d_transpose/kernel"],
        "training": {"name": "conv2d_transpose/kernel", "figures": {"max_abs_diff": 2.8}}}))
    said = title(BugFolder.read(tmp_path), MinimalScript(reason="not checked"))
    assert said == "[keras] SpectralNormalization(Conv2DTranspose) assigns kernel in call(): gradient of kernel differs"


def test_an_update_script_judges_each_variable_in_its_own_dtype() -> None:
    """t60's reader: Adam on float16 + float32 variables, judged on the float32 kernel (0.0355 off), failed its
    script on the float16 kernel, one float16 rounding off (0.00488), so the issue quoted float16 noise."""
    from types import SimpleNamespace

    import numpy as np
    import pytest

    from memo.filing.training_idiom import check_lines, update_schedule

    assert update_schedule("adam") is not None and update_schedule("gradients") is None
    steps, rate = update_schedule("adam")
    lines = check_lines("training-inconsistency", "adam", "keras-tensorflow", update=(steps, rate))
    lines = [line for line in lines if "np.load('expected.npz')" not in line]  # the arrays come from the test
    keras = SimpleNamespace(backend=SimpleNamespace(standardize_dtype=str))

    def run(dtypes: list[str], off: list[float]) -> None:
        want = [np.full((4, 3), 0.8) for _ in dtypes]
        namespace = {"np": np, "keras": keras, "expected": {f"adam_{i}": w for i, w in enumerate(want)},
                     "actual": [w + delta for w, delta in zip(want, off)],
                     "before": [np.full((4, 3), 1.0) for _ in dtypes],
                     "model": SimpleNamespace(trainable_variables=[SimpleNamespace(dtype=d) for d in dtypes])}
        exec("\n".join(lines), namespace)

    run(["float16", "float32"], [0.00488, 0.0])  # one float16 rounding: within the float16 variable's precision
    with pytest.raises(AssertionError):
        run(["float16", "float32"], [0.00488, 0.0355])  # the float32 kernel's difference is the bug
    with pytest.raises(AssertionError):
        run(["float32"], [0.00488])  # the same difference on a float32 variable is not its rounding
    # a non-finite update keeps its own check; without a schedule the plain tolerance
    assert not any("precision" in line for line in check_lines("training-nan", "adam", "x", update=(steps, rate)))
    assert not any("precision" in line for line in check_lines("training-inconsistency", "adam", "x"))


def test_a_title_too_long_for_its_weights_path_names_the_weight_by_its_layers_class(tmp_path) -> None:
    """t66's reader: "[keras-tensorflow] Dense(activity_regularizer) under RematScope(full): gradient of..." (the
    path conv3_block1_0_conv/kernel left no room to say what is wrong)."""
    import json

    from memo.filing.folder import BugFolder
    from memo.filing.title import TITLE_CHARS, title
    from memo.filing.training_idiom import weight_by_class
    from memo.model.ir import Layer, ModelIR

    ir = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 6, 6, 1], "dtype": "float32"}),
                  Layer("conv3_block1_0_conv", "Conv2D", {"filters": 2, "kernel_size": 1}, ["x"]),
                  Layer("d", "Dense", {"units": 2, "activity_regularizer": "l2"}, ["conv3_block1_0_conv"])],
                 ["d"], "m")
    said = "gradient of conv3_block1_0_conv/kernel differs from keras-tensorflow by 0.449"
    assert weight_by_class(said, "conv3_block1_0_conv/kernel", ir) == \
        "gradient of the Conv2D kernel differs from keras-tensorflow by 0.449"
    assert weight_by_class(said, "other/kernel", ir) == said, "a path naming no layer stays"
    long = ir.get("conv3_block1_0_conv")
    long.name = "conv3_block1_0_conv_of_the_third_stage_block"  # with the culprit's name, too long for a title
    ir.get("d").inputs = [long.name]
    (tmp_path / "ir.json").write_text(ir.dumps())
    info = {"kind": "training-inconsistency", "library": "keras-tensorflow", "reference": "keras-torch",
            "stage": "gradients", "layer_class": "Dense", "layer": "d",
            "training": {"name": f"{long.name}/kernel", "array": "grad_0",
                         "figures": {"max_abs_diff": 0.449}}}
    (tmp_path / "bug.json").write_text(json.dumps(info))
    text = title(BugFolder(tmp_path, info))
    assert len(text) <= TITLE_CHARS and "Conv2D kernel differs" in text and not text.endswith("..."), text


def test_a_remat_bug_of_a_wrapped_layers_activity_regularizer_is_not_titled_by_the_wrappers_assignment(tmp_path) -> None:
    """t69's reader: "Conv2D under RematScope(full) assigns kernel in call()" for a Dense's activity_regularizer inside
    SpectralNormalization; TensorFlow's remat drops the regularizer's gradient, the assignment plays no part."""
    import json

    from memo.filing.check import MinimalScript
    from memo.filing.folder import BugFolder
    from memo.filing.issue import render_issue
    from memo.model.ir import Layer, ModelIR

    dense = {"class_name": "Dense", "config": {"units": 1, "activity_regularizer": "l1"}}
    ir = ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 8, 8, 1], "dtype": "float32"}),
                  Layer("conv1", "Conv2D", {"filters": 2, "kernel_size": [3, 3]}, ["x"]),
                  Layer("sn", "SpectralNormalization", {"layer": dense}, ["conv1"])], ["sn"], "m")
    (tmp_path / "ir.json").write_text(ir.dumps())
    (tmp_path / "bug.json").write_text(json.dumps({
        "id": "training-inconsistency-keras-tensorflow-y", "kind": "training-inconsistency",
        "library": "keras-tensorflow", "stage": "gradients", "reference": "keras-torch", "layer_class": "Conv2D",
        "message": "gradients: conv1/kernel: differs", "training": {"name": "conv1/kernel", "remat": "full"},
        "assigned_in_call": ["dense/kernel"],
        "truth": {"method": "float64", "decision": "confirmed", "reason": "accused 230, witness 0.00125",
                  "errors": {"keras-tensorflow": 230.0, "keras-torch": 0.00125}}}))
    text = render_issue(BugFolder.read(tmp_path), MinimalScript(reason="not checked"))
    assert text.startswith("# [keras-tensorflow] Dense(activity_regularizer) under RematScope(full): ")
    assert "assign" not in text and "expected.npz" not in text
    assert "The `activity_regularizer` of the Dense that the SpectralNormalization wraps is part of it" in text
