"""The training check, worker side: one model's training step computed by Keras's own machinery on one backend.

A Keras worker answers ``{"op": "train", ...}`` beside ``run`` (:mod:`memo.backends.worker`): it loads the
artifact's ``.keras`` file as for inference, then runs these stages, each announced before it starts, each from
the weights as loaded (TensorFlow and torch reset them; JAX's stateless calls never change them):

* ``prepare``: layers random in training made deterministic (:data:`NEUTRALIZED`: their rate or noise set to 0;
  a random augmentation layer runs as in inference: :func:`neutralize`); a model with a random layer neither makes
  deterministic is left out (``unsupported``, :class:`RandomInTraining`).
* ``forward``: the outputs in training mode, the loss, and the non-trainable weights after that call
  (BatchNormalization's moving statistics).
* ``gradients``: the gradient of the loss with respect to every trainable weight and every floating input
  (``tf.GradientTape``; ``jax.value_and_grad`` of ``stateless_call``, jitted as Keras's JAX trainer does; torch
  autograd's ``backward``).
* ``sgd``, ``adam`` and ``optimizer``: the optimizer's own update (``optimizer.apply`` on TensorFlow and torch, whose
  torch optimizers run ``torch._foreach`` kernels; a jitted ``stateless_apply`` on JAX) of a fixed gradient;
  ``optimizer`` is the catalogue entry the request names (option ``optimizer``:
  :mod:`memo.backends.training_optimizers`), absent without one.
* ``eval_forward`` and ``eval_gradients`` (:data:`EVAL_STAGES`, when the request asks): the
  outputs in inference mode and the loss's input gradients, what a converted torch module is judged against
  (:func:`memo.backends.torch_common.train_module`).

The loss is a fixed random projection of the outputs, ``sum_k sum(W_k * Y_k) / batch`` with ``W_k`` standard normal
drawn from a fixed seed: its cotangent ``W_k / batch`` is the same on every backend whatever the forward pass
computed, so the gradients test the backward pass alone; it is not degenerate where a sum of the outputs is (the
sum of a softmax, or of a normalization's outputs, has a gradient of 0, and a mean squared error's cotangent carries
the forward pass's differences into the gradients); and each output element's cotangent is of order 1, so the
gradients are not shrunk below the criterion's absolute floor by the output's size, as a mean would shrink them.
To it the training-mode stages add the model's own losses (weight and activity regularizers, ``add_loss``), as
Keras's trainer does: regularizers run only in training, and no inference check reaches them.

The optimizers step on a fixed seeded gradient, not on the backend's own: an update difference is then the optimizer's alone, and Adam's first step (``lr * g / (|g| + eps)``) does not
turn float noise in a near-zero gradient into a sign. Adam takes two steps (the first is ``lr * sign(g)`` up to
eps: the moments only matter from the second). Each update is returned as ``(after - before) / lr`` in float64.

Stdlib and numpy at module level; the libraries are imported inside the functions (worker only).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from memo.backends.spec import ModelInputs
from memo.backends.training_optimizers import SGD_LEARNING_RATE  # noqa: F401  (re-exported: torch_common's)
from memo.backends.training_remat import REMAT_KEY, apply_remat
from memo.backends.training_prepare import NEUTRALIZED, RandomInTraining, neutralize  # noqa: F401  (re-exported)
from memo.backends.training_optimizers import (OPTIMIZER_STAGE, UPDATE_PREFIXES, Optimizer, optimizer_entry,
                                               stage_optimizers)
from memo.backends.training_weights import dtype_name, perturb_weights, precision_record, to_numpy

PREPARE_STAGE = "prepare"
TRAINING_STAGES: tuple[str, ...] = ("forward", "gradients", "sgd", "adam", OPTIMIZER_STAGE)
# The inference-mode stages (``training=False``): the outputs, then the gradient of the same loss with respect to the
# inputs. A converted torch module (onnx2torch, onnx2pytorch: an inference graph) runs these only; Keras (and the
# float64 engines) run them when the request asks (option ``inference``, or ``stages``).
EVAL_STAGES: tuple[str, ...] = ("eval_forward", "eval_gradients")
LOSS_SEED = 1234
ASSIGNED_KEY = "assigned"  # forward's record: the trainable weights the training-mode call assigned (eager backends)
STEP_SEED = 4321
# The check's time limit per model, in per-model limits of inference: it runs the model four times (forward, forward
# and backward, two optimizers) and Keras on JAX compiles two XLA programs where inference compiles one (several
# times inference's CPU there: docs/benchmarks.md, "Training check"), so a model inference runs in time is no hang.
TIME_FACTOR = 4.0
LOW_PRECISION = ("float16", "bfloat16")  # output dtypes the loss casts to float32 before summing

Stage = tuple[str, Callable[[], dict[str, np.ndarray]]]


def projection(shape: tuple[int, ...], index: int) -> np.ndarray:
    """The loss's fixed weights for output ``index`` (float64; each backend casts them to the output's dtype)."""
    return np.random.default_rng(LOSS_SEED + index).standard_normal(shape)


def fixed_gradients(shapes: list[tuple[int, ...]], step: int) -> list[np.ndarray]:
    """The gradient the optimizer stages apply at ``step`` (float64, one array per trainable weight): magnitudes
    uniform in [0.5, 1.5], random signs. Bounded away from 0 so that Adam's second moment ``(1 - beta_2) g^2`` does
    not underflow in a float16 variable (``|g| < 0.008`` does), where ``m / (sqrt(v) + eps)`` would divide by eps."""
    rng = np.random.default_rng(STEP_SEED + step)
    return [rng.uniform(0.5, 1.5, shape) * rng.choice(np.array([-1.0, 1.0]), size=shape) for shape in shapes]


def projection_terms(shapes: list[tuple[int, ...]], dtypes: list[str]) -> list[tuple[int, np.ndarray, float, bool]]:
    """The loss ``sum_k sum(W_k * Y_k) / batch`` as terms, one per floating output (``dtypes``: the outputs' dtype
    names): (output index, ``W_k`` (float64), the divisor ``batch``, whether the output is summed widened to float32
    (float16 and bfloat16)). Raises :class:`RandomInTraining` when no output is floating. Every worker's loss, Keras's
    and a converted torch module's, is built from these."""
    terms = [(index, projection(tuple(shape), index), float(shape[0]) if len(shape) and shape[0] else 1.0,
              dtype in LOW_PRECISION) for index, (shape, dtype) in enumerate(zip(shapes, dtypes))
             if dtype.startswith(("float", "bfloat"))]
    if not terms:
        raise RandomInTraining("left out of the training check: the model has no floating output to differentiate")
    return terms


def _loss(outputs: Any, losses: Sequence[Any] = ()) -> Any:
    """The check's loss: the projection of the outputs (:func:`projection_terms`), plus ``losses``, the model's own
    (weight and activity regularizers, ``add_loss``), each cast to the loss's dtype, as Keras's trainer adds them to
    the loss it differentiates: regularizers are training-only code no inference run reaches. The terms are added with
    ``ops.add``, which promotes dtypes alike on every backend: TensorFlow's ``+`` does not, so a float32 and a float64
    output failed there alone, a false training crash (long150f: "cannot compute AddV2 as input #1 ... double tensor"
    on Minimum(dtype='float64') beside a float32 layer, two entries the reader took for TensorFlow's)."""
    from keras import ops

    total = None
    terms = projection_terms([tuple(y.shape) for y in outputs], [dtype_name(y.dtype) for y in outputs])
    for index, weights, divisor, widen in terms:
        y = ops.cast(outputs[index], "float32") if widen else outputs[index]
        term = ops.sum(ops.multiply(y, ops.convert_to_tensor(weights, dtype=y.dtype))) / divisor
        total = term if total is None else ops.add(total, term)
    for extra in losses:
        total = ops.add(total, ops.cast(extra, total.dtype))
    return total


def _as_list(outputs: Any) -> list[Any]:
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


def training_stages(model: Any, inputs: ModelInputs, options: dict[str, Any] | None = None,
                    wide: bool = False) -> tuple[list[Stage], dict[str, np.ndarray]]:
    """``prepare``: neutralize ``model`` and return its stages and the check's names (``names``: trainable weights'
    paths; ``state_names``: non-trainable weights'; ``notes``: what was set to 0; :func:`precision_record`).
    ``wide``: inputs widened to float64 (the float64 truth, whose model is widened already). ``options`` (the
    request's): ``perturb``, an index: the weights moved by :func:`perturb_weights` first; ``stages``: the worker
    stages to run (all when absent: triage's reduction runs only those its finding needs); ``optimizer``: the
    catalogue entry of the ``optimizer`` stage (no such stage without it), recorded as ``optimizer``."""
    import keras

    notes = neutralize(model)
    if (options or {}).get("perturb") is not None:
        perturb_weights(model, int((options or {})["perturb"]))
    arrays = [np.asarray(inputs[name]) for name in inputs]
    if wide:
        arrays = [a.astype(np.float64) if np.issubdtype(a.dtype, np.floating) else a for a in arrays]
    names = {"names": np.array([v.path for v in model.trainable_weights], dtype=str),
             "state_names": np.array([v.path for v in model.non_trainable_weights], dtype=str),
             "notes": np.array(notes, dtype=str), **precision_record(model)}
    remat = (options or {}).get(REMAT_KEY)
    if remat:  # built as inside keras.RematScope(mode=remat): every layer recomputes its forward in the backward pass
        apply_remat(model, str(remat))
        names[REMAT_KEY] = np.array(str(remat))
    chosen = (options or {}).get("optimizer")
    if chosen:
        optimizer_entry(str(chosen))  # an unknown name fails the prepare stage, not a later one
        names["optimizer"] = np.array(str(chosen))
    backend = keras.backend.backend()
    build = {"tensorflow": _tensorflow_stages, "jax": _jax_stages, "torch": _torch_stages}[backend]
    # JAX's inference-mode stages compile a third XLA program: run only when named (the float64 engine's truth of a
    # converted module's verdict), not for ``inference``, where TensorFlow and torch already witness them
    stages = select_stages(build(model, arrays, stage_optimizers(chosen)), options, eval_on_request=backend != "jax")
    return stages, {**names, "stages": np.array([name for name, _ in stages], dtype=str)}


def select_stages(stages: list[Stage], options: dict[str, Any] | None, eval_on_request: bool = True) -> list[Stage]:
    """The stages a request asks for: ``options["stages"]``; without it :data:`TRAINING_STAGES`, and
    :data:`EVAL_STAGES` too when ``options["inference"]`` and ``eval_on_request``. The prepare record lists those
    kept (``stages``): the judge does not expect the others of this backend."""
    wanted = (options or {}).get("stages")
    if wanted is None:
        inference = eval_on_request and (options or {}).get("inference")
        wanted = [*TRAINING_STAGES, *(EVAL_STAGES if inference else ())]
    return [stage for stage in stages if stage[0] in wanted]


def training_stages_wide(model: Any, inputs: ModelInputs,
                         options: dict[str, Any] | None = None) -> tuple[list[Stage], dict[str, np.ndarray]]:
    """:func:`training_stages` of the float64 truth: floating inputs widened."""
    return training_stages(model, inputs, options, wide=True)


def floating_positions(arrays: list[np.ndarray]) -> list[int]:
    return [i for i, a in enumerate(arrays) if np.issubdtype(a.dtype, np.floating)]


def eval_record(outputs: list[np.ndarray] | None, input_grads: list[Any] | None,
                arrays: list[np.ndarray]) -> dict[str, np.ndarray]:
    """The inference-mode stages' arrays: ``eval_out_i`` (``outputs``, numpy) or ``eval_grad_P`` per floating input
    position ``P`` (``input_grads``, numpy or None: zeros, the loss does not depend on that input)."""
    if outputs is not None:
        return {f"eval_out_{i}": np.array(y, copy=True) for i, y in enumerate(outputs)}
    return {f"eval_grad_{position}": np.zeros_like(arrays[position]) if g is None else np.array(g, copy=True)
            for position, g in zip(floating_positions(arrays), input_grads or [])}


def _eval_stages(model: Any, arrays: list[np.ndarray],
                 outputs_and_grads: Callable[[], tuple[list[Any], list[Any]]]) -> list[Stage]:
    """:data:`EVAL_STAGES` of a Keras backend that differentiates eagerly: ``outputs_and_grads`` runs the model once
    in inference mode and returns its outputs and the loss's input gradients (both stages read that one run)."""
    done: dict[str, Any] = {}

    def run() -> tuple[list[Any], list[Any]]:
        if "run" not in done:
            done["run"] = outputs_and_grads()
        return done["run"]

    return [("eval_forward", lambda: eval_record([to_numpy(y) for y in run()[0]], None, arrays)),
            ("eval_gradients", lambda: eval_record(None, [None if g is None else to_numpy(g) for g in run()[1]],
                                                   arrays))]


def _forward_record(outputs: list[Any], loss: Any, state: list[Any]) -> dict[str, np.ndarray]:
    record = {f"out_{i}": to_numpy(y) for i, y in enumerate(outputs)}
    record["loss"] = to_numpy(loss).reshape(())
    record.update({f"state_{i}": to_numpy(s) for i, s in enumerate(state)})
    return record


def _gradient_record(weight_grads: list[Any], input_grads: list[Any], model: Any,
                     arrays: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Gradients as arrays; a gradient the library returns as None (the loss does not depend on it) is zeros."""
    record = {f"grad_{i}": np.zeros(tuple(v.shape), dtype=v.dtype) if g is None else to_numpy(g)
              for i, (v, g) in enumerate(zip(model.trainable_weights, weight_grads))}
    for position, g in zip(floating_positions(arrays), input_grads):
        record[f"input_grad_{position}"] = np.zeros_like(arrays[position]) if g is None else to_numpy(g)
    return record


def _update_record(prefix: str, before: list[np.ndarray], after: list[Any], rate: float) -> dict[str, np.ndarray]:
    return {f"{prefix}_{i}": (to_numpy(a).astype(np.float64) - b.astype(np.float64)) / rate
            for i, (b, a) in enumerate(zip(before, after))}


def _eager_stages(model: Any, arrays: list[np.ndarray], gradients: Callable[[], dict[str, np.ndarray]],
                  optimizers: list[Optimizer]) -> list[Stage]:
    """The stages of a backend that trains eagerly on the model's variables (TensorFlow, torch): each starts from
    the weights as loaded."""
    import keras

    initial = model.get_weights()
    trainable = [to_numpy(v.value) for v in model.trainable_weights]

    def forward() -> dict[str, np.ndarray]:
        model.set_weights(initial)
        outputs = _as_list(model([keras.ops.convert_to_tensor(a) for a in arrays], training=True))
        record = _forward_record(outputs, _loss(outputs, model.losses), [v.value for v in model.non_trainable_weights])
        # trainable weights the training-mode call itself assigns (SpectralNormalization's kernel): a gradient with
        # respect to a weight the forward pass overwrites depends on how a backend differentiates the assignment
        assigned = [v.path for v, before in zip(model.trainable_weights, trainable)
                    if not np.array_equal(to_numpy(v.value), before)]
        if assigned:
            record[ASSIGNED_KEY] = np.array(assigned, dtype=str)
        model.set_weights(initial)
        return record

    def gradient_stage() -> dict[str, np.ndarray]:
        model.set_weights(initial)
        try:
            return gradients()
        finally:
            model.set_weights(initial)

    def step(stage: str, optimizer: Any, steps: int, rate: float) -> Callable[[], dict[str, np.ndarray]]:
        def run() -> dict[str, np.ndarray]:
            model.set_weights(initial)
            variables = model.trainable_variables
            for index in range(steps):
                grads = fixed_gradients([tuple(v.shape) for v in variables], index)
                optimizer.apply([keras.ops.convert_to_tensor(g, dtype=v.dtype) for g, v in zip(grads, variables)],
                                variables)
            record = _update_record(UPDATE_PREFIXES[stage], trainable, [v.value for v in variables], rate)
            model.set_weights(initial)
            return record
        return run

    return [("forward", forward), ("gradients", gradient_stage),
            *[(stage, step(stage, optimizer, steps, rate)) for stage, optimizer, steps, rate in optimizers]]


def _tensorflow_stages(model: Any, arrays: list[np.ndarray], optimizers: list[Optimizer]) -> list[Stage]:
    def gradients() -> dict[str, np.ndarray]:
        import tensorflow as tf

        tensors = [tf.convert_to_tensor(a) for a in arrays]
        watched = [tensors[i] for i in floating_positions(arrays)]
        with tf.GradientTape() as tape:
            for tensor in watched:
                tape.watch(tensor)
            loss = _loss(_as_list(model(tensors, training=True)), model.losses)
        weights = list(model.trainable_weights)
        grads = tape.gradient(loss, weights + watched)
        return _gradient_record(grads[:len(weights)], grads[len(weights):], model, arrays)

    def inference() -> tuple[list[Any], list[Any]]:
        import tensorflow as tf

        tensors = [tf.convert_to_tensor(a) for a in arrays]
        watched = [tensors[i] for i in floating_positions(arrays)]
        with tf.GradientTape() as tape:
            for tensor in watched:
                tape.watch(tensor)
            outputs = _as_list(model(tensors, training=False))
            loss = _loss(outputs)
        return outputs, tape.gradient(loss, watched)

    return _eager_stages(model, arrays, gradients, optimizers) + _eval_stages(model, arrays, inference)


def _torch_stages(model: Any, arrays: list[np.ndarray], optimizers: list[Optimizer]) -> list[Stage]:
    def gradients() -> dict[str, np.ndarray]:
        import keras

        tensors = [keras.ops.convert_to_tensor(a) for a in arrays]
        watched = [tensors[i] for i in floating_positions(arrays)]
        for tensor in watched:
            tensor.requires_grad_(True)
        for variable in model.trainable_weights:
            variable.value.grad = None
        _loss(_as_list(model(tensors, training=True)), model.losses).backward()
        grads = [v.value.grad for v in model.trainable_weights]
        return _gradient_record(grads, [t.grad for t in watched], model, arrays)

    def inference() -> tuple[list[Any], list[Any]]:
        import keras

        tensors = [keras.ops.convert_to_tensor(a) for a in arrays]
        watched = [tensors[i] for i in floating_positions(arrays)]
        for tensor in watched:
            tensor.requires_grad_(True)
        outputs = _as_list(model(tensors, training=False))
        _loss(outputs).backward()
        return [y.detach() for y in outputs], [t.grad for t in watched]

    return _eager_stages(model, arrays, gradients, optimizers) + _eval_stages(model, arrays, inference)


def _jax_stages(model: Any, arrays: list[np.ndarray], optimizers: list[Optimizer]) -> list[Stage]:
    """Keras on JAX as its trainer runs: ``stateless_call`` under ``jax.value_and_grad``, ``stateless_apply``,
    each jitted; the model's variables are never assigned."""
    import jax

    trainable = [v.value for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]
    weight_ids = {id(v) for v in model.non_trainable_weights}
    state_positions = [i for i, v in enumerate(model.non_trainable_variables) if id(v) in weight_ids]
    floating = floating_positions(arrays)
    others = [a for i, a in enumerate(arrays) if i not in floating]

    def loss_of(weights: Any, float_inputs: Any) -> Any:
        xs, rest = list(float_inputs), list(others)
        ordered = [xs.pop(0) if i in floating else rest.pop(0) for i in range(len(arrays))]
        outputs, new_state, losses = model.stateless_call(weights, non_trainable, ordered, training=True,
                                                          return_losses=True)
        outputs = _as_list(outputs)
        return _loss(outputs, losses), (outputs, new_state)

    float_inputs = [arrays[i] for i in floating]
    done: dict[Any, Any] = {}  # the programs run once, their results (or exceptions) kept for each stage

    def value_and_grad() -> Any:
        """One jitted program for the forward pass and the gradients, as ``JAXTrainer.train_step`` computes both
        (one XLA compilation where two separate programs cost two); its exception when it failed."""
        if "result" not in done:
            try:
                done["result"] = jax.jit(jax.value_and_grad(loss_of, argnums=(0, 1), has_aux=True))(
                    trainable, float_inputs)
            except Exception as exc:  # noqa: BLE001  (the gradients stage raises it; the forward runs alone)
                done["result"] = exc
        return done["result"]

    def forward() -> dict[str, np.ndarray]:
        result = value_and_grad()
        if isinstance(result, Exception):  # the backward pass failed: the forward pass alone
            loss, (outputs, new_state) = jax.jit(loss_of)(trainable, float_inputs)
        else:
            (loss, (outputs, new_state)), _ = result
        return _forward_record(outputs, loss, [new_state[i] for i in state_positions])

    def gradients() -> dict[str, np.ndarray]:
        result = value_and_grad()
        if isinstance(result, Exception):
            raise result
        _, (weight_grads, input_grads) = result
        return _gradient_record(list(weight_grads), list(input_grads), model, arrays)

    def start(position: int) -> tuple[Any, Any]:
        """An optimizer's state and its fixed gradients per step (built once)."""
        if position not in done:
            _, optimizer, steps, _ = optimizers[position]
            optimizer.build(model.trainable_variables)
            grads = [[jax.numpy.asarray(g, dtype=w.dtype) for g, w in
                      zip(fixed_gradients([tuple(w.shape) for w in trainable], index), trainable)]
                     for index in range(steps)]
            done[position] = ([v.value for v in optimizer.variables], grads)
        return done[position]

    def stepped(position: int, state: Any, grads: Any, weights: Any) -> Any:
        for step_grads in grads:
            weights, state = optimizers[position][1].stateless_apply(state, step_grads, weights)
        return weights

    def every_update() -> Any:
        """Every optimizer's steps in one jitted program (one XLA compilation where one per optimizer cost two, as
        ``JAXTrainer`` jits the step with its optimizer); its exception when it failed."""
        if "updates" not in done:
            try:
                begun = [start(position) for position in range(len(optimizers))]
                done["updates"] = jax.jit(lambda weights, begun: [
                    stepped(position, state, grads, weights) for position, (state, grads) in enumerate(begun)])(
                    trainable, begun)
            except Exception as exc:  # noqa: BLE001  (then each optimizer alone: one failing stops no other)
                done["updates"] = exc
        return done["updates"]

    def step(position: int) -> Callable[[], dict[str, np.ndarray]]:
        def run() -> dict[str, np.ndarray]:
            stage, _, _, rate = optimizers[position]
            updates = every_update()
            if isinstance(updates, Exception):
                weights = jax.jit(lambda state, grads, weights: stepped(position, state, grads, weights))(
                    *start(position), trainable)
            else:
                weights = updates[position]
            return _update_record(UPDATE_PREFIXES[stage], [np.asarray(w) for w in trainable], list(weights), rate)
        return run

    def inference() -> tuple[list[Any], list[Any]]:
        """The outputs in inference mode and the loss's input gradients: one jitted ``value_and_grad`` with respect
        to the floating inputs (what the float64 truth of a converted torch module is judged by)."""
        def eval_loss(float_inputs: Any) -> Any:
            xs, rest = list(float_inputs), list(others)
            ordered = [xs.pop(0) if i in floating else rest.pop(0) for i in range(len(arrays))]
            outputs, _ = model.stateless_call(trainable, non_trainable, ordered, training=False)
            outputs = _as_list(outputs)
            return _loss(outputs), outputs

        (_, outputs), input_grads = jax.jit(jax.value_and_grad(eval_loss, has_aux=True))(float_inputs)
        return list(outputs), list(input_grads)

    return [("forward", forward), ("gradients", gradients),
            *[(stage, step(position)) for position, (stage, *_) in enumerate(optimizers)]] \
        + _eval_stages(model, arrays, inference)
