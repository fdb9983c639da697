"""Verdicts of the training check: each backend's arrays against the reference's, stage by stage (pure numpy).

Judged stages (:data:`JUDGED_STAGES`) and the worker stage computing each (:data:`COMPUTED_BY`): ``forward`` (the
outputs in training mode), ``loss``, ``state`` (the non-trainable weights after that forward call: BatchNormalization's
moving statistics) and ``gradients`` (weights' and inputs') form one chain, each depending on the one before; the
optimizer stages ``sgd``, ``adam`` and ``optimizer`` (the model's catalogue entry:
:mod:`memo.backends.training_optimizers`) step a fixed gradient (:mod:`memo.backends.training`), so each is judged on its
own. Per backend and chain the first stage that differs gives one verdict:

* ``training-crash``: the backend failed (error, crash, hang) a stage the reference finished; or the reference
  failed one that another backend finished (the verdict is then the reference's);
* ``training-nan``: NaN/Inf at positions where the reference's array has none (:func:`criterion.nan_problem`);
* ``training-inconsistency``: another shape, or finite elements outside the oracle's scale-aware tolerance
  (:func:`criterion.mismatch`, each array with its own scale).

``unsupported`` (the backend declines, or the model is left out of the check) is recorded, not a finding. A stage the
reference did not finish, or whose arrays hold NaN/Inf in the reference, is not judged numerically.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from memo.backends.training_optimizers import OPTIMIZER_STAGE
from memo.backends.training_remat import REMAT_KEY, recorded_remat
from memo.kinds import StageStatus, VerdictKind
from memo.oracle.criterion import Thresholds, mismatch, nan_problem, output_scale
from memo.training.optimizer_stage import name_optimizer, optimizer_name, update_steps

if TYPE_CHECKING:
    from memo.backends.result import StageResult
    from memo.truth import Truth

JUDGED_STAGES: tuple[str, ...] = ("forward", "loss", "state", "gradients", "sgd", "adam", OPTIMIZER_STAGE,
                                   "eval_forward", "eval_gradients")
# The inference-mode chain: a converted torch module's outputs and input gradients (training=False) against the
# reference's (memo.backends.training.EVAL_STAGES)
EVAL_CHAIN: tuple[str, ...] = ("eval_forward", "eval_gradients")
CHAINS: tuple[tuple[str, ...], ...] = (("forward", "loss", "state", "gradients"), ("sgd",), ("adam",),
                                        (OPTIMIZER_STAGE,), EVAL_CHAIN)
COMPUTED_BY: dict[str, str] = {"forward": "forward", "loss": "forward", "state": "forward", "gradients": "gradients",
                               "sgd": "sgd", "adam": "adam", OPTIMIZER_STAGE: OPTIMIZER_STAGE,
                               "eval_forward": "eval_forward", "eval_gradients": "eval_gradients"}
# Stages whose numeric difference is another check's finding: the outputs in inference mode are the inference
# check's (a converted module whose forward pass differs has its inference verdict already). A difference there
# ends the chain without a verdict; a crash there (autograd on, where the inference run passed) is still one.
INFERENCE_JUDGED: frozenset[str] = frozenset({"eval_forward"})
# Array keys of each judged stage in a worker's .npz (memo.backends.training)
_PREFIXES: dict[str, tuple[str, ...]] = {"forward": ("out",), "loss": ("loss",), "state": ("state",),
                                         "gradients": ("grad", "input_grad"), "sgd": ("sgd",), "adam": ("adam",),
                                         OPTIMIZER_STAGE: ("opt",), "eval_forward": ("eval_out",),
                                         "eval_gradients": ("eval_grad",)}
_KEY = re.compile(r"^(out|loss|state|grad|input_grad|sgd|adam|opt|eval_out|eval_grad)(?:_(\d+))?$")
PREPARE = "prepare"
# What the worker records beside the arrays (memo.backends.training): weight names, and the model's precision
DESCRIPTIVE_KEYS: tuple[str, ...] = ("names", "state_names", "compute_dtype", "weight_dtypes", "weight_scales",
                                     "weights_finite", "stages", "optimizer", REMAT_KEY)
# The stages stepping an optimizer on the fixed, finite gradients: NaN/Inf in their updates is a defect wherever
# the weights were finite, the reference's included (:func:`_nonfinite_updates`)
UPDATE_STAGES: tuple[str, ...] = ("sgd", "adam", OPTIMIZER_STAGE)
# A stored verdict's training record: the IR of the model it was computed on, where that is not the executed model's
# (the optimizer sweep's probe, memo.training.sweep); signing and triage read the model from it.
MODEL_IR_KEY = "model_ir"
# Machine epsilon per floating dtype name (bfloat16 has 8 significand bits)
EPS: dict[str, float] = {"float64": 2.0 ** -52, "float32": 2.0 ** -23, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}

NUMERIC_KINDS = frozenset({VerdictKind.TRAINING_NAN.value, VerdictKind.TRAINING_INCONSISTENCY.value})

Arrays = Mapping[str, np.ndarray]  # one backend's .npz: key -> array


@dataclass
class TrainingVerdict:
    """One finding of the training check: ``kind`` (:data:`memo.kinds.TRAINING_KINDS`, or ``unsupported``), the
    backend, the judged ``stage`` it is pinned to, a message; for a numeric one the first array that differs (its key,
    e.g. ``grad_3``, and the weight or input it belongs to) with its figures; ``truth``: the float64 verdict."""

    kind: str
    backend: str
    stage: str
    message: str
    array: str | None = None
    name: str | None = None
    figures: dict[str, float] = field(default_factory=dict)
    truth: Truth | None = None
    optimizer: str | None = None  # the check's catalogue entry (memo.backends.training_optimizers)
    remat: str | None = None  # the check's keras.RematScope mode (memo.backends.training_remat), None: none

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data["truth"] = self.truth.to_json() if self.truth is not None else None
        return {key: value for key, value in data.items() if value not in (None, {})}


@dataclass
class Judgement:
    """The check's outcome on one model: its verdicts, or why it was not judged (``left_out``), and the settings
    the workers set to 0 (``notes``)."""

    verdicts: list[TrainingVerdict] = field(default_factory=list)
    left_out: str | None = None
    notes: list[str] = field(default_factory=list)
    optimizer: str | None = None  # the catalogue entry of the optimizer stage, None when it did not run
    remat: str | None = None  # the keras.RematScope mode the layers were built with, None: none

    def to_json(self) -> dict[str, object]:
        return {"left_out": self.left_out, "notes": self.notes, "optimizer": self.optimizer, REMAT_KEY: self.remat,
                "verdicts": [v.to_json() for v in self.verdicts]}


def read_arrays(path: str | Path | None) -> dict[str, np.ndarray]:
    """A worker's training ``.npz`` (empty for None)."""
    if path is None:
        return {}
    with np.load(path, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


def stage_keys(arrays: Arrays, stage: str) -> list[str]:
    """The keys of ``stage``'s arrays in ``arrays``, in order (weights before inputs, by index)."""
    prefixes = _PREFIXES[stage]
    found = [(prefixes.index(m[1]), int(m[2] or 0), key) for key in arrays
             if (m := _KEY.match(key)) is not None and m[1] in prefixes]
    return [key for *_, key in sorted(found)]


def stage_arrays(arrays: Arrays, stage: str) -> list[np.ndarray]:
    """``stage``'s arrays, in :func:`stage_keys` order."""
    return [np.asarray(arrays[key]) for key in stage_keys(arrays, stage)]


def array_name(arrays: Arrays, key: str) -> str:
    """What an array key stands for: a weight's path (``grad_3``: ``conv/kernel``), ``input 0``, ``output 1``."""
    match = _KEY.match(key)
    if match is None:
        return key
    prefix, index = match[1], int(match[2] or 0)
    names = {"grad": "names", "sgd": "names", "adam": "names", "opt": "names", "state": "state_names"}.get(prefix)
    if names and names in arrays and index < len(arrays[names]):
        return str(arrays[names][index])
    return {"input_grad": f"input {index}", "eval_grad": f"input {index}", "out": f"output {index}",
            "eval_out": f"output {index}", "loss": "loss"}.get(prefix, key)


def _status(stages: Sequence[StageResult], worker_stage: str) -> StageResult | None:
    return next((stage for stage in stages if stage.stage == worker_stage), None)


def _failure_text(stage: StageResult) -> str:
    detail = f"{stage.exc_type}: {stage.message}" if stage.exc_type else stage.message
    return " ".join(detail.split())[:300]


def weight_eps(reference: Arrays, key: str) -> float:
    """The machine epsilon of the weight an update array ``key`` (``opt_3``) belongs to, by the reference's record
    (``weight_dtypes``); float32's where it does not say."""
    match = _KEY.match(key)
    index = int(match[2] or 0) if match else 0
    dtypes = reference.get("weight_dtypes")
    return EPS.get(str(dtypes[index]), EPS["float32"]) if dtypes is not None and index < len(dtypes) \
        else EPS["float32"]


def thresholds_for(reference: Arrays, key: str, thresholds: Thresholds = Thresholds()) -> Thresholds:
    """The tolerance of one array of the reference's, scaled to the precision it was computed in (as the oracle
    scales an output's to its dtype: at least ``eps_factor * eps``):

    * the forward pass, loss, state and gradients: the least precise dtype any layer of the model computes in
      (``compute_dtype``; a float16 BatchNormalization makes every gradient through it float16 noise, a float32
      kernel's included);
    * an optimizer's update ``(after - before) / lr``: the weight's own dtype, and an absolute allowance for
      rounding the weight to it at each step, ``eps_factor * eps * steps * max |w| / lr`` (one float16 ulp of a
      weight of 1 is an update difference of 0.0098 at lr 0.1).
    """
    match = _KEY.match(key)
    prefix, index = (match[1], int(match[2] or 0)) if match else ("", 0)
    steps_of = update_steps(reference, prefix)
    if steps_of is not None:
        dtypes, scales = reference.get("weight_dtypes"), reference.get("weight_scales")
        if dtypes is None or scales is None or index >= len(dtypes) or index >= len(scales):
            return thresholds
        eps = EPS.get(str(dtypes[index]), EPS["float32"])
        rate, steps = steps_of
        precision = thresholds.eps_factor * eps
        rounding = precision * steps * float(scales[index]) / rate
        scale = output_scale(np.asarray(reference[key]))
        return replace(thresholds, atol=max(thresholds.atol, precision, rounding / scale),
                       rtol=max(thresholds.rtol, precision), mad_floor=max(thresholds.mad_floor, precision))
    compute = reference.get("compute_dtype")
    eps = EPS.get(str(compute), EPS["float32"]) if compute is not None else EPS["float32"]
    precision = thresholds.eps_factor * eps
    return replace(thresholds, atol=max(thresholds.atol, precision), rtol=max(thresholds.rtol, precision),
                   mad_floor=max(thresholds.mad_floor, precision))


def compare_stage(backend: str, stage: str, arrays: Arrays, reference: Arrays,
                  thresholds: Thresholds = Thresholds()) -> TrainingVerdict | None:
    """The numeric verdict on one judged stage of ``backend`` against the reference (None: they agree), each array
    judged with its own tolerance (:func:`thresholds_for`)."""
    ref_keys, keys = stage_keys(reference, stage), stage_keys(arrays, stage)
    if ref_keys != keys:
        missing = sorted(set(ref_keys) ^ set(keys))
        return TrainingVerdict(VerdictKind.TRAINING_INCONSISTENCY.value, backend, stage,
                               f"{stage}: {len(keys)} arrays, the reference has {len(ref_keys)} ({', '.join(missing)})")
    if stage in UPDATE_STAGES:  # the most precise weights first: a float16 weight's rounding must not hide a float32
        # weight's defect beside it (Keras on torch stepping float32 weights with the float16 first variable's scalars)
        keys = sorted(keys, key=lambda key: weight_eps(reference, key))
    for key in keys:
        y, o = np.asarray(arrays[key]), np.asarray(reference[key])
        name = array_name(reference, key)
        if y.shape != o.shape:
            return TrainingVerdict(VerdictKind.TRAINING_INCONSISTENCY.value, backend, stage,
                                   f"{stage}: {name} has shape {y.shape}, the reference {o.shape}", key, name)
        problem = nan_problem(y, o)
        if problem is not None:
            return TrainingVerdict(VerdictKind.TRAINING_NAN.value, backend, stage, f"{stage}: {name}: {problem}",
                                   key, name)
        own = thresholds_for(reference, key, thresholds)
        bad, largest, tolerance = mismatch(y, o, own)
        if bad:
            return TrainingVerdict(
                VerdictKind.TRAINING_INCONSISTENCY.value, backend, stage,
                f"{stage}: {name}: {bad}/{y.size} elements outside atol={own.atol:.3g}*scale "
                f"rtol={own.rtol:.3g} (scale {output_scale(o):.3g}, max |diff| {largest:.3g})", key, name,
                {"mismatched": bad, "elements": int(y.size), "max_abs_diff": largest, "tolerance": tolerance})
    return None


def _reference_special(reference: Arrays, stage: str) -> bool:
    return any(np.issubdtype(a.dtype, np.floating) and not np.all(np.isfinite(a))
               for a in stage_arrays(reference, stage))


def judge_training(stages: Mapping[str, Sequence[StageResult]], arrays: Mapping[str, Arrays], reference: str,
                   thresholds: Thresholds = Thresholds()) -> Judgement:
    """The verdicts of one model's training check: ``stages`` and ``arrays`` per backend (the reference's included),
    as the workers returned them."""
    ref_stages, ref_arrays = stages.get(reference, ()), arrays.get(reference, {})
    judgement = Judgement(notes=[str(note) for note in ref_arrays.get("notes", ())],
                          optimizer=next((name for own in [ref_arrays, *arrays.values()]
                                          if (name := optimizer_name(own))), None))
    judgement.remat = recorded_remat(ref_arrays)
    _judged(judgement, stages, arrays, reference, thresholds)
    name_optimizer(judgement.verdicts, judgement.optimizer)
    for verdict in judgement.verdicts:  # an update steps fixed gradients: remat cannot change it
        verdict.remat = judgement.remat if verdict.stage not in UPDATE_STAGES else None
    return judgement


def _judged(judgement: Judgement, stages: Mapping[str, Sequence[StageResult]], arrays: Mapping[str, Arrays],
            reference: str, thresholds: Thresholds) -> Judgement:
    ref_stages, ref_arrays = stages.get(reference, ()), arrays.get(reference, {})
    ref_prepare = _status(ref_stages, PREPARE)
    if ref_prepare is None or ref_prepare.status != StageStatus.OK.value:
        first = next((s for s in ref_stages if s.status != StageStatus.OK.value), ref_prepare)
        judgement.left_out = (f"the reference ({reference}) did not prepare the model: "
                              + (f"{first.stage} {first.status}: {_failure_text(first)}" if first else "no result"))
        judgement.verdicts += _reference_failures(stages, reference, ((PREPARE,),))
        return judgement
    judgement.verdicts += _reference_failures(stages, reference, CHAINS, everywhere=judgement.remat is not None)
    judgement.verdicts += _nonfinite_updates(stages, arrays, reference)
    found: list[TrainingVerdict] = []
    for backend, own in stages.items():
        if backend == reference:
            continue
        for chain in CHAINS:
            verdict = _judge_chain(backend, chain, own, arrays.get(backend, {}), ref_stages, ref_arrays, thresholds)
            if verdict is not None:
                found.append(verdict)
                if verdict.stage == PREPARE:  # one verdict for a backend that did not get past preparing
                    break
    prepared = [name for name, own in stages.items() if name != reference
                and (done := _status(own, PREPARE)) is not None and done.status == StageStatus.OK.value]
    judgement.verdicts += _odd_reference(found, prepared, arrays, reference, thresholds)
    return judgement


def _odd_reference(verdicts: list[TrainingVerdict], others: Sequence[str], arrays: Mapping[str, Arrays],
                   reference: str, thresholds: Thresholds) -> list[TrainingVerdict]:
    """One root cause, one verdict: where every other backend (two or more) is inconsistent with the reference at the
    same stage and array and they agree with each other on that stage, the reference is the odd one out, and its
    verdict (the reference judged against the first of them) replaces theirs. NaN verdicts stay apart: two backends
    making the same NaN where the reference has a number say nothing of who is right (float64 does)."""
    if len(others) < 2:
        return verdicts
    numeric = [v for v in verdicts if v.kind == VerdictKind.TRAINING_INCONSISTENCY.value and v.array]
    for stage in dict.fromkeys(v.stage for v in numeric):
        same = [v for v in numeric if v.stage == stage]
        if sorted(v.backend for v in same) != sorted(others) or len({v.array for v in same}) != 1:
            continue
        first, *rest = others
        if any(compare_stage(name, stage, arrays.get(name, {}), arrays.get(first, {}), thresholds) is not None
               for name in rest):
            continue
        odd = compare_stage(reference, stage, arrays.get(reference, {}), arrays.get(first, {}), thresholds)
        if odd is None:
            continue
        odd.message += f" (against {first}; {', '.join(others)} agree)"
        verdicts = [v for v in verdicts if all(v is not w for w in same)] + [odd]
    return verdicts


def worker_stages(stage: str) -> list[str]:
    """The worker stages that judging ``stage`` needs, as the whole check judges it: its chain up to it (a gradient
    verdict holds where the forward stages agree), or an optimizer stage alone; none past ``prepare`` for it.
    Triage's reduction asks the workers for these only (request option ``stages``)."""
    for chain in CHAINS:
        if stage in chain:
            return list(dict.fromkeys(COMPUTED_BY[name] for name in chain[:chain.index(stage) + 1]))
    return []


def _nonfinite_updates(stages: Mapping[str, Sequence[StageResult]], arrays: Mapping[str, Arrays],
                       reference: str) -> list[TrainingVerdict]:
    """``training-nan`` verdicts against the reference at an optimizer stage whose update holds NaN/Inf where the
    weights were finite (:func:`nonfinite_update`). The other backends are judged against the reference only where
    its arrays are finite, so a backend making the same NaN is named in this verdict (one root cause, one verdict),
    and one computing finite numbers is right."""
    found = []
    for stage in UPDATE_STAGES:
        done = _status(stages.get(reference, ()), COMPUTED_BY[stage])
        verdict = nonfinite_update(reference, stage, arrays.get(reference, {})) \
            if done is not None and done.status == StageStatus.OK.value else None
        if verdict is None:
            continue
        same = [name for name, own in arrays.items() if name != reference and verdict.array in own
                and not np.all(np.isfinite(np.asarray(own[str(verdict.array)], dtype=np.float64)))]
        verdict.message += f" (also on {', '.join(same)})" if same else ""
        found.append(verdict)
    return found


def nonfinite_update(backend: str, stage: str, arrays: Arrays) -> TrainingVerdict | None:
    """``training-nan`` when ``backend``'s update at optimizer ``stage`` holds NaN/Inf for a weight that was finite
    (``weights_finite``): the step applies fixed gradients of magnitude 0.5 to 1.5, so no reference and no float64
    answer is needed to call it wrong (Nadam on a bfloat16 variable). None otherwise (a bug's repro.py asks this of
    a NaN the reference makes too)."""
    finite = arrays.get("weights_finite")
    if finite is None or stage not in UPDATE_STAGES:
        return None
    for key in stage_keys(arrays, stage):
        match = _KEY.match(key)
        index = int(match[2] or 0) if match is not None else len(finite)
        values = np.asarray(arrays[key], dtype=np.float64)
        if index < len(finite) and bool(finite[index]) and not np.all(np.isfinite(values)):
            name = array_name(arrays, key)
            return TrainingVerdict(VerdictKind.TRAINING_NAN.value, backend, stage,
                                   f"{stage}: {name}: {int(np.count_nonzero(~np.isfinite(values)))} non-finite values "
                                   "in the update of a finite weight by finite gradients", key, name)
    return None


def _reference_failures(stages: Mapping[str, Sequence[StageResult]], reference: str,
                        chains: Sequence[Sequence[str]], everywhere: bool = False) -> list[TrainingVerdict]:
    """``training-crash`` verdicts against the reference: per chain, the first stage it failed (error, crash, hang)
    where another backend finished it (a refusal or a skip is no finding); ``everywhere`` (the layers built under
    ``keras.RematScope``, whose code is Keras's alone): also where every backend failed it with one exception type."""
    found = []
    for chain in chains:
        for stage in chain:
            worker_stage = COMPUTED_BY.get(stage, stage)
            failed = _status(stages.get(reference, ()), worker_stage)
            if failed is None or failed.status in (StageStatus.OK.value, StageStatus.UNSUPPORTED.value,
                                                   StageStatus.SKIPPED.value):
                continue
            ran = [name for name, own in stages.items() if name != reference and
                   (done := _status(own, worker_stage)) is not None and done.status == StageStatus.OK.value]
            alike = [name for name, own in stages.items() if name != reference and (done := _status(
                own, worker_stage)) is not None and done.exc_type == failed.exc_type] if everywhere else []
            if ran or (alike and len(alike) == len(stages) - 1):
                found.append(TrainingVerdict(VerdictKind.TRAINING_CRASH.value, reference, stage,
                                             f"{failed.stage} {failed.status}: {_failure_text(failed)} "
                                             + (f"(finished by {', '.join(ran)})" if ran
                                                else f"(also on {', '.join(alike)})")))
            break
    return found


def _judge_chain(backend: str, chain: Sequence[str], own: Sequence[StageResult], own_arrays: Arrays,
                 ref_stages: Sequence[StageResult], ref_arrays: Arrays,
                 thresholds: Thresholds) -> TrainingVerdict | None:
    """The first stage of ``chain`` at which ``backend`` differs from the reference (None: none)."""
    early = next((s for s in own if s.stage in ("start", "load", PREPARE) and s.status != StageStatus.OK.value), None)
    if early is not None or _status(own, PREPARE) is None:  # a backend that could not prepare the model: one verdict
        return _failure_verdict(backend, PREPARE, early)
    if not runs_chain(own_arrays, chain):
        return None
    for stage in chain:
        worker_stage = COMPUTED_BY[stage]
        ref_status, status = _status(ref_stages, worker_stage), _status(own, worker_stage)
        if ref_status is None or ref_status.status != StageStatus.OK.value:
            return None  # the reference has nothing to compare with from here on
        if status is None or status.status != StageStatus.OK.value:
            return _failure_verdict(backend, stage, status)
        if _reference_special(ref_arrays, stage):
            return None
        verdict = compare_stage(backend, stage, own_arrays, ref_arrays, thresholds)
        if verdict is not None:
            return None if stage in INFERENCE_JUDGED else verdict
    return None


def runs_chain(arrays: Arrays, chain: Sequence[str]) -> bool:
    """Whether the backend whose arrays these are is judged on ``chain``: the worker stages it prepared (``stages``,
    recorded at ``prepare``) include the chain's first. The inference-mode chain (:data:`EVAL_CHAIN`) is a converted
    module's only: a Keras backend that trains is judged in training mode, its inference-mode arrays serve as the
    reference's (a record without the list: a Keras backend, every training-mode chain)."""
    listed = arrays.get("stages")
    if listed is None:
        return tuple(chain) != EVAL_CHAIN
    names = {str(name) for name in np.asarray(listed).ravel()}
    if tuple(chain) == EVAL_CHAIN and COMPUTED_BY["forward"] in names:
        return False
    return COMPUTED_BY[chain[0]] in names


def _failure_verdict(backend: str, stage: str, status: StageResult | None) -> TrainingVerdict | None:
    """A failed stage's verdict: ``training-crash``, ``unsupported`` for a refusal, none for a backend skipped."""
    if status is None:
        return TrainingVerdict(VerdictKind.TRAINING_CRASH.value, backend, stage, f"{stage}: no result")
    if status.status == StageStatus.SKIPPED.value:
        return None
    kind = VerdictKind.UNSUPPORTED.value if status.status == StageStatus.UNSUPPORTED.value else \
        VerdictKind.TRAINING_CRASH.value
    return TrainingVerdict(kind, backend, stage, f"{status.stage} {status.status}: {_failure_text(status)}")


def differing_names(arrays: Arrays, reference: Arrays, stage: str,
                    thresholds: Thresholds = Thresholds()) -> list[str]:
    """What every array of ``stage`` that differs from the reference's stands for (:func:`array_name`: weight paths,
    ``input N``), not only the first: the per-weight comparison triage localizes a gradient difference with."""
    return [array_name(reference, key) for key in stage_keys(reference, stage)
            if key in arrays and compare_array("", stage, arrays, reference, key, thresholds) is not None]


def compare_array(backend: str, stage: str, arrays: Arrays, reference: Arrays, key: str,
                  thresholds: Thresholds = Thresholds()) -> TrainingVerdict | None:
    """:func:`compare_stage` of the one array ``key`` of both (with the arrays that name it): a bug's own array
    judged whichever other array of its stage differs first (a bug's script checks its array so)."""
    return compare_stage(backend, stage, {key: arrays[key], **_names(arrays)},
                         {key: reference[key], **_names(reference)}, thresholds)


def _names(arrays: Arrays) -> dict[str, np.ndarray]:
    return {key: arrays[key] for key in DESCRIPTIVE_KEYS if key in arrays}
