"""A training bug's minimal script in the blamed backend's own idiom (docs/training.md, "Triage"): after the lines
that build ``model`` (``keras.layers`` code, weights attached) and set ``x``, one training stage as a user of that
backend writes it, and the check against the reference's arrays (``expected.npz``).

* ``gradients``: the loss (memo's fixed random projection of the outputs, :mod:`memo.backends.training`) under
  ``tf.GradientTape`` on TensorFlow, ``jax.grad`` of ``model.stateless_call`` on JAX, ``loss.backward()`` on torch;
  ``actual`` is every trainable weight's gradient;
* ``forward`` and ``loss``: the outputs of ``model(x, training=True)`` and that loss;
* ``sgd``, ``adam`` and ``optimizer``: the optimizer's own ``apply`` of memo's fixed gradients, ``actual`` the
  update ``(after - before) / lr``; ``optimizer`` constructs the catalogue entry the bug's check ran, or the simpler
  form of it triage reduced it to (:mod:`memo.backends.training_optimizers`, bug.json's ``training.optimizer``).

The script raises (exits 1) when the bug shows: ``np.testing.assert_allclose`` against the expected arrays with the
oracle's tolerance (a numeric bug), the library's own exception (a ``training-crash``).
"""
from __future__ import annotations

from memo.backends.training import LOSS_SEED, STEP_SEED
from memo.backends.training_remat import recorded_remat, remat_scope
from memo.backends.training_optimizers import (ADAM_LEARNING_RATE, ADAM_STEPS, OPTIMIZER_STAGE, SGD_LEARNING_RATE,
                                               UPDATE_PREFIXES, constructor_text, known_entry)
from memo.kinds import VerdictKind
from memo.model.ir import ModelIR
from memo.oracle.criterion import Thresholds
from memo.training.judge import EPS
from memo.triage.training_signature import weight_owner

# The loss every stage uses: memo's fixed random projection of the outputs (cotangent W / batch on every backend).
LOSS_LINES: tuple[str, ...] = (
    "def loss_of(outputs, losses=()):  # memo's loss: a fixed random projection of the outputs, plus model.losses",
    "    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]",
    "    total = 0.0",
    "    for i, y in enumerate(outputs):  # a float16 or bfloat16 output summed in float32",
    "        y = keras.ops.cast(y, 'float32') if keras.backend.standardize_dtype(y.dtype) in ('float16', 'bfloat16') else y",
    f"        w = np.random.default_rng({LOSS_SEED} + i).standard_normal(tuple(y.shape))",
    "        total = keras.ops.add(total, keras.ops.sum(y * keras.ops.convert_to_tensor(w, dtype=y.dtype)) / y.shape[0])",
    "    return keras.ops.add(total, sum(keras.ops.cast(extra, total.dtype) for extra in losses))  # regularizers",
)
_GRADIENTS: dict[str, tuple[str, ...]] = {
    "tensorflow": ("with tf.GradientTape() as tape:",
                   "    loss = loss_of(model(x, training=True), model.losses)",
                   "actual = [keras.ops.convert_to_numpy(g) for g in tape.gradient(loss, model.trainable_weights)]"),
    "jax": ("trainable = [v.value for v in model.trainable_variables]",
            "non_trainable = [v.value for v in model.non_trainable_variables]",
            "def compute_loss(trainable, x):",
            "    outputs, _, losses = model.stateless_call(trainable, non_trainable, x, training=True, "
            "return_losses=True)",
            "    return loss_of(outputs, losses)",
            "actual = [np.asarray(g) for g in jax.jit(jax.grad(compute_loss))(trainable, x)]"),
    "torch": ("loss_of(model(x, training=True), model.losses).backward()",
              "actual = [v.value.grad.detach().cpu().numpy() for v in model.trainable_weights]"),
}
_MODULES = {"tensorflow": "import tensorflow as tf", "jax": "import jax", "torch": "import torch"}
# (the stage's array prefix in expected.npz, the optimizer's constructor, its steps, its learning rate)
_OPTIMIZERS = {"sgd": ("sgd", f"keras.optimizers.SGD(learning_rate={SGD_LEARNING_RATE})", 1, SGD_LEARNING_RATE),
               "adam": ("adam", f"keras.optimizers.Adam(learning_rate={ADAM_LEARNING_RATE})", ADAM_STEPS,
                        ADAM_LEARNING_RATE)}
STAGES = ("forward", "loss", "gradients", "sgd", "adam", OPTIMIZER_STAGE)


class NoTrainingIdiom(Exception):
    """Why a training bug gets no minimal script (a stage or backend the idiom does not write)."""


def _backend(library: str) -> str:
    backend = library.removeprefix("keras-")
    if backend not in _GRADIENTS:
        raise NoTrainingIdiom(f"memo writes no training script for {library!r}")
    return backend


def _optimizer_of(stage: str, optimizer: str | None) -> tuple[str, str, int, float]:
    """(array prefix, constructor, steps, learning rate) of an optimizer stage; ``optimizer``: the catalogue entry of
    stage ``optimizer``."""
    if stage != OPTIMIZER_STAGE:
        return _OPTIMIZERS[stage]
    entry = known_entry(optimizer or "")
    if entry is None:
        raise NoTrainingIdiom(f"the bug names no known optimizer configuration ({optimizer!r})")
    return "opt", constructor_text(str(optimizer)), entry.steps, entry.learning_rate


def _optimizer_lines(stage: str, optimizer: str | None) -> tuple[list[str], str]:
    prefix, constructor, steps, rate = _optimizer_of(stage, optimizer)
    return [f"optimizer = {constructor}",
            "before = [keras.ops.convert_to_numpy(v.value).astype(np.float64) for v in model.trainable_variables]",
            f"for step in range({steps}):  # memo's fixed gradients, the same on every backend",
            f"    rng = np.random.default_rng({STEP_SEED} + step)",
            "    grads = [rng.uniform(0.5, 1.5, tuple(v.shape))",
            "             * rng.choice(np.array([-1.0, 1.0]), size=tuple(v.shape)) for v in model.trainable_variables]",
            "    optimizer.apply([keras.ops.convert_to_tensor(g, dtype=v.dtype) for g, v in "
            "zip(grads, model.trainable_variables)], model.trainable_variables)",
            "actual = [(keras.ops.convert_to_numpy(v.value).astype(np.float64) - b) / "
            f"{rate} for v, b in zip(model.trainable_variables, before)]"], prefix


def remat_lines(lines: list[str], training: object) -> list[str]:
    """The model's construction ``lines`` inside ``keras.RematScope`` where the bug's training record names a remat
    mode (:mod:`memo.backends.training_remat`: Keras keeps the scope's mode on each layer built inside it)."""
    mode = recorded_remat(training)
    return [f"with {remat_scope(mode)}:", *(f"    {line}" for line in lines)] if mode else lines


def remat_control(kind: str, stage: str, training: object) -> str | None:
    """The ``keras.RematScope`` mode a numeric training bug's script checks against the same model built without it,
    on the same backend (None: no such bug). Remat must not change a gradient or a training-mode output, so that run
    is the expectation a maintainer reads at once; what another backend computes is beside the point (t56's reader
    had to rerun the script without the scope to see that it agreed)."""
    mode = recorded_remat(training)
    numeric = kind in (VerdictKind.TRAINING_INCONSISTENCY.value, VerdictKind.TRAINING_NAN.value)
    return mode if mode and numeric and stage not in UPDATE_PREFIXES else None


def remat_control_lines(model_lines: list[str], call: list[str], mode: str, library: str) -> tuple[list[str],
                                                                                                   list[str]]:
    """(the lines defining ``build()``, the model with its weights, from ``model_lines``; the lines computing
    ``actual`` under ``keras.RematScope(mode)`` and ``expected`` without it, from the stage's ``call`` lines)."""
    indented = [f"    {line}" for line in model_lines]
    loss = list(LOSS_LINES) if tuple(call[:len(LOSS_LINES)]) == LOSS_LINES else []
    stage = call[len(loss):]
    returned = ([*stage[:-1], "return " + stage[-1].removeprefix("actual = ")] if stage[-1].startswith("actual = ")
                else [*stage, "return actual"])
    return (["def build():  # the model, its weights attached", *indented, "    return model"],
            [*loss, f"def compute(model):  # the training stage as a user of {library} writes it",
             *(f"    {line}" for line in returned), f"with {remat_scope(mode)}:",
             "    actual = compute(build())",
             "expected = compute(build())  # the same model and weights built without RematScope"])


def training_lines(library: str, stage: str, kind: str,
                   optimizer: str | None = None) -> tuple[list[str], list[str], str]:
    """(imports after Keras's, the lines computing ``actual`` from ``model`` and ``x``, the prefix of the expected
    arrays it is compared with: ``grad``, ``out``, ``loss``, ``sgd``, ``adam``, ``opt``); ``optimizer``: the
    catalogue entry of stage ``optimizer``."""
    backend = _backend(library)
    crash = kind == VerdictKind.TRAINING_CRASH.value
    if stage not in STAGES and not (crash and stage == "eval_forward"):
        raise NoTrainingIdiom(f"memo writes no training script for stage {stage!r}")
    imports = [_MODULES[backend]]
    if stage == "eval_forward":  # the check's inference-mode call failed (t58: LSTM under RematScope)
        return imports, ["outputs = model(x, training=False)"], "out"
    # a crash in the forward pass as the worker met it: Keras on JAX's forward and gradients are one jitted
    # value_and_grad program (t52: JAX's UnexpectedTracerError under keras.RematScope showed only when differentiated)
    if stage == "gradients" or (crash and stage in ("forward", "loss", "state")):
        return imports, [*LOSS_LINES, *_GRADIENTS[backend]], "grad"
    if stage in (*_OPTIMIZERS, OPTIMIZER_STAGE):
        lines, prefix = _optimizer_lines(stage, optimizer)
        return imports, lines, prefix
    forward = ["outputs = model(x, training=True)"]
    if stage == "loss":
        return imports, [*LOSS_LINES, *forward,
                         "actual = [keras.ops.convert_to_numpy(loss_of(outputs, model.losses))]"], "loss"
    return imports, [*forward, "actual = [keras.ops.convert_to_numpy(y) for y in keras.tree.flatten(outputs)]"], "out"


def update_schedule(stage: str, optimizer: str | None = None) -> tuple[int, float] | None:
    """(steps, learning rate) of an optimizer stage's update (None: not an optimizer stage, or none memo knows)."""
    if stage not in (*_OPTIMIZERS, OPTIMIZER_STAGE):
        return None
    try:
        _, _, steps, rate = _optimizer_of(stage, optimizer)
    except NoTrainingIdiom:
        return None
    return steps, rate


# An update's tolerance in its variable's own precision, as memo's judge has it (memo.training.judge.thresholds_for,
# its EPS and the oracle's eps_factor): at least eps_factor eps of the dtype, and the rounding of the weight to it at
# every step, eps_factor * eps * steps * max |w| / lr. t60's reader: Adam on float16 + float32 variables, judged on
# the float32 kernel, failed the script on the float16 kernel, one float16 rounding off, so the issue quoted float16
# noise instead of the bug.
_UPDATE_TOLERANCE = (
    "    dtype = keras.backend.standardize_dtype(model.trainable_variables[i].dtype)",
    f"    precision = {Thresholds().eps_factor:g} * {EPS!r}.get(dtype, {EPS['float32']!r})",
    "    rounding = precision * STEPS * np.abs(before[i]).max() / RATE  # the weight rounded to its dtype per step",
    "    np.testing.assert_allclose(got, want, rtol=max(1e-3, precision), "
    "atol=max(1e-3 * max(1, np.abs(want).mean()), precision, rounding))")


def check_lines(kind: str, prefix: str, reference: str, computed: bool = False,
                update: tuple[int, float] | None = None) -> list[str]:
    """The comparison of ``actual`` with the reference's arrays (a crash: none, the call raised or it did not; a
    non-finite update: none either, finite weights stepped by finite gradients must stay finite, whatever the
    reference computed, which may be the same NaN); ``computed``: with the list ``expected`` the script computes
    (:func:`remat_control_lines`), not the attached expected.npz; ``update``: an optimizer stage's (steps, learning
    rate), each variable then judged in its own dtype (:data:`_UPDATE_TOLERANCE`)."""
    if kind == VerdictKind.TRAINING_CRASH.value:
        return ['print("no error: the bug does not reproduce")']
    if kind == VerdictKind.TRAINING_NAN.value and prefix in UPDATE_PREFIXES.values():
        return ["for i, got in enumerate(actual):  # finite weights, finite gradients: the update must be finite",
                '    print(i, "non-finite values in the update:", np.count_nonzero(~np.isfinite(got)), "of", got.size)',
                "    assert np.all(np.isfinite(got)), f'{np.count_nonzero(~np.isfinite(got))} non-finite values'"]
    key = '"loss"' if prefix == "loss" else f'f"{prefix}_{{i}}"'
    finite = ["    assert np.all(np.isfinite(got)), f'{np.count_nonzero(~np.isfinite(got))} non-finite values'"] \
        if kind == VerdictKind.TRAINING_NAN.value else []  # assert_allclose calls NaN equal to NaN
    compared = ["for i, (got, want) in enumerate(zip(actual, expected)):"] if computed else [
        f"expected = np.load('expected.npz')  # what {reference or 'the reference'} computes",
        "for i, got in enumerate(actual):", f"    want = expected[{key}]"]
    compare = [line.replace("STEPS", str(update[0])).replace("RATE", repr(update[1])) for line in _UPDATE_TOLERANCE] \
        if update and not finite \
        else ["    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * max(1, np.abs(want).mean()))"]
    return [*compared,
            '    print(i, "max |actual - expected|:", np.abs(got - want).max(), "expected magnitude:", '
            "np.abs(want).mean())", *finite, *compare]


# What a title calls the array a training stage computes (``{name}``: the weight path or ``input N``)
STAGE_ARRAYS: dict[str, str] = {"forward": "training-mode output {name}", "loss": "training loss",
                                "state": "state {name} after a training call", "gradients": "gradient of {name}",
                                "sgd": "SGD update of {name}", "adam": "Adam update of {name}",
                                OPTIMIZER_STAGE: "{optimizer} update of {name}",
                                "eval_forward": "inference-mode output {name}",
                                "eval_gradients": "inference-mode gradient of {name}"}


def training_symptom(stage: str, kind: str, training: dict[str, object], reference: str, also: str = "") -> str:
    """What a training bug's title says after its layer: the array of the stage that goes wrong and how, with the
    figures its check prints (``training``: bug.json's ``training`` record), "" for a crash (its message says it);
    ``also``: the other backends that make the same NaN (its message's "also on")."""
    if kind == VerdictKind.TRAINING_CRASH.value:
        return ""
    entry = known_entry(str(training.get("optimizer") or ""))
    array = STAGE_ARRAYS.get(stage, stage + " {name}").format(
        name=str(training.get("name") or training.get("array") or "").removeprefix("output "),  # "output 0"
        optimizer=entry.class_name if entry else "optimizer")
    if kind == VerdictKind.TRAINING_NAN.value and stage in UPDATE_PREFIXES:  # judged without a reference
        return f"{array} is NaN/Inf from finite weights and gradients" + (f" (also on {also})" if also else "")
    if kind == VerdictKind.TRAINING_NAN.value:
        return f"{array} is NaN/Inf where {reference} computes it finite"
    figures = training.get("figures") if isinstance(training.get("figures"), dict) else {}
    biggest = f" by {float(figures['max_abs_diff']):.3g}" if figures and "max_abs_diff" in figures else ""
    return f"{array} differs from {reference}{biggest}"


def weight_by_class(text: str, name: str, ir: ModelIR | None) -> str:
    """``text`` naming the weight ``name`` (``layer/.../leaf``) as its layer's class and its leaf (``Conv2D
    kernel``), for a title its path makes too long to end in words (t66's reader: "...RematScope(full): gradient
    of..." for ``conv3_block1_0_conv/kernel``); ``text`` itself when the path names no layer of ``ir``."""
    owner = weight_owner(ir, name) if "/" in name else None
    return text.replace(f" of {name} ", f" of the {owner.class_name} {name.rsplit('/', 1)[-1]} ") if owner else text
