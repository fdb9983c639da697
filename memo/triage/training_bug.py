"""Triage of one training bug (docs/training.md, "Triage"): check, reduce, localize, float64 truth, folder, script.

1. the finding's model is trained again on the reference and the accused backend (the executor's ``train``, on the
   campaign's warm workers) and judged: the bug must show again (:class:`TrainingChecker`: same kind, backend, stage
   and owner class of the first differing array, or the same exception for a crash);
2. a loss, state, gradient or forward difference is first probed for the layer whose training-mode output is the
   first to differ (:func:`memo.triage.training_checker.forward_first`): where one does, the bug is that layer's
   forward bug, cut to it; then reduced by :func:`memo.triage.bug_reduction.reduce_bug` with that predicate, starting
   from the layer owning the first differing weight (or the probe's layer); an optimizer stage's bug first tries
   the model's weights by precision alone (:func:`memo.triage.precision_probe.precision_probe`: one layer per weight
   dtype, one run); then the ``optimizer`` stage's catalogue entry is reduced on that model
   (:mod:`memo.triage.optimizer_reduction`: plain ``Adam`` for ``Adam(gradient_accumulation_steps=2)`` where it shows
   the bug too);
3. localized on the reduced model (unless the probe named the layer): the layer whose own weight or input gradient
   is the first wrong one in backward order (:func:`memo.triage.training_signature.first_in_backward_order`, from
   the per-weight comparison);
4. judged by the float64 truth (:mod:`memo.training.truth`; bug.json's ``truth``, as inference bugs keep theirs);
5. its folder written like an inference bug's (``model.keras``, ``inputs.npz``, ``ir.json``, ``expected.npz``: the
   reference's arrays of the blamed stage, ``bug.json``, ``repro.py``: :mod:`memo.triage.training_repro`), the
   script run in a fresh process.
"""
from __future__ import annotations

import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from memo.backends import load_spec
from memo.backends.executor import DifferentialExecutor
from memo.backends.training import ASSIGNED_KEY
from memo.backends.training_optimizers import OPTIMIZER_STAGE, recorded_optimizer
from memo.backends.training_remat import REMAT_KEY, recorded_remat
from memo.json_types import JsonObject
from memo.kinds import VerdictKind
from memo.model.ir import ModelIR
from memo.oracle.verdict import VerdictSummary
from memo.store import BugRow, CampaignStore
from memo.training.check import NUMERIC, training_reference
from memo.training.judge import (DESCRIPTIVE_KEYS, JUDGED_STAGES, MODEL_IR_KEY, UPDATE_STAGES, differing_names,
                                 stage_keys)
from memo.training.truth import engine_for
from memo.triage.bug_reduction import (STRUCTURAL_PASSES, ReductionOutcome, candidate_digest, reduce_bug,
                                       turn_budget_s)
from memo.bug_files import (EXPECTED_FILE, INPUTS_FILE, IR_FILE, MODEL_FILE, Reduction, read_bug_file, retried,
                            write_bug_file)
from memo.triage.bugdir import bug_folder
from memo.triage.finding import load_finding
from memo.training.selection import weight_dtypes
from memo.triage.assigned import ASSIGNED_IN_CALL
from memo.triage.optimizer_reduction import reduce_optimizer, showing_run
from memo.triage.precision_probe import dense_probe, precision_probe
from memo.triage.probe import read_inputs
from memo.triage.reassess import REDUCED_VERDICT
from memo.triage.rerun import rerun_script
from memo.triage.session import Session
from memo.triage.training_checker import TrainingChecker, TrainingRun, forward_first
from memo.triage.training_forward import (FORWARD_STAGE, ForwardDifference, forward_located, forward_message,
                                          forward_parts, forward_record)
from memo.triage.training_repro import model_file_of, write_training_script
from memo.triage.training_truth import reference_wrong, training_truth_of, turned
from memo.triage.training_signature import crash_exception, first_in_backward_order, weight_owner
from memo.triage.turns import Laps
from memo.truth import UNAVAILABLE

PER_BUG_S = 60.0  # a training run is four of inference's: its reduction gets more time
# Kept from the reduction's budget for what follows it: the final run, the float64 truth (three runs of the engine)
# and the script's check, so that a pass with a deadline does not overrun it by them.
FINISH_S = 30.0
TRUTH_S = 15.0  # the float64 truth starts with this much of the pass left (else the bug waits for a later pass)
SCRIPT_S = 15.0  # the script's check likewise (a later pass checks an unchecked script)
FORWARD_S = 20.0  # the forward probe and its cut (three forward-only runs) start with this much left besides FINISH_S
OPTIMIZER_S = 15.0  # the optimizer's reduction (a few runs of the reduced model) starts with this much left likewise
PROBED_KEY = "probed"  # a training reduction's document: the digest of its model, probed without a cut
CUT_KEY = "forward_cut"  # a training reduction's document: the forward probe cut its model to the layer
_SCRATCH = ("tstart", "tfinal", "tprobe", "tcut0", "tcut1")  # the runs' folders under the session's work folder


def localization(ir: ModelIR, run: TrainingRun, reference: str, library: str, stage: str) -> JsonObject:
    """The bug's layer: for a gradient difference the first wrong one in backward order; otherwise the owner of the
    first differing array (the verdict's)."""
    record = (run.verdict.extra.get("training") if run.verdict is not None else None) or {}
    wrong = differing_names(run.arrays.get(library, {}), run.arrays.get(reference, {}), stage) \
        if stage in ("gradients", *UPDATE_STAGES) and run.arrays.get(reference) else []
    layer = first_in_backward_order(ir, wrong) if wrong else weight_owner(ir, str(record.get("name") or ""))
    return {"layer": layer.name if layer is not None else None,
            "layer_class": layer.class_name if layer is not None else None,
            "reason": "the layer owning the first differing gradient in backward order" if wrong \
                else "the layer owning the first differing array",
            "differing": wrong[:20], "alone": None, "together": []}


def assigned_in_call(run: TrainingRun) -> list[str]:
    """The trainable weights the model's training-mode call assigns, as the eager backends recorded them (their
    ``forward`` record's ``assigned``; the forward stage must have run)."""
    names: set[str] = set()
    for arrays in run.arrays.values():
        if ASSIGNED_KEY in arrays:
            names.update(str(name) for name in np.atleast_1d(np.asarray(arrays[ASSIGNED_KEY])))
    return sorted(names)


def write_folder(folder: Path, ir: ModelIR, run: TrainingRun, data: JsonObject) -> JsonObject:
    """The bug's folder from the final run's artifact; returns the bug.json data."""
    assert run.artifact is not None
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(run.artifact.keras_path, folder / MODEL_FILE)
    consumes = load_spec(str(data["library"])).consumes
    if consumes != "keras":  # a converted module's bug: the file it converts (tf2onnx's ONNX file), for repro.py
        shutil.copyfile(run.artifact.path_for(consumes), folder / model_file_of(consumes))
    shutil.copyfile(run.artifact.inputs_path, folder / INPUTS_FILE)
    (folder / IR_FILE).write_text(ir.dumps())
    reference = run.arrays.get(str(data["reference"]), {})
    stage = str(data["stage"])
    keys = stage_keys(reference, stage) if stage in JUDGED_STAGES else []
    np.savez(folder / EXPECTED_FILE, **{key: reference[key] for key in keys},
             **{key: reference[key] for key in DESCRIPTIVE_KEYS if key in reference})
    write_training_script(folder, data, [layer.name for layer in ir.input_layers])
    write_bug_file(folder, data)
    return data


def _not_again(session: Session, bug: BugRow, ir: ModelIR, start: TrainingRun, reference: str) -> None:
    """The model did not show the bug when trained again: its folder keeps the original model (so the next pass does
    not train it again), its script is checked (the report says whether it reproduces)."""
    store = session.store
    reduction = {"status": Reduction.NOT_AGAIN, "reason": start.error or "", "original_layers": len(ir.body),
                 "reduced_layers": len(ir.body)}
    if start.artifact is None or not start.arrays.get(reference):
        store.triage.update_bug(bug.id, reduction=reduction)
        return
    finding = load_finding(store, bug.first_verdict)
    record = (finding.verdict.extra.get("training") if finding is not None else None) or {}
    folder = bug_folder(store.directory.resolve(), bug.id)
    shutil.rmtree(folder, ignore_errors=True)
    data: dict[str, Any] = {
        "id": bug.id, "kind": bug.kind, "library": bug.library, "stage": bug.stage or "", "signature": bug.parts,
        "message": finding.verdict.message if finding is not None else "", "layer_class": bug.layer_class,
        "reference": reference, "faulty": bug.library, "training": record, "reduction": reduction,
        "exception": crash_exception(finding.verdict.message)[0] if finding is not None
        and bug.kind == VerdictKind.TRAINING_CRASH.value else "", "timeout_s": session.timeout_s}
    write_folder(folder, ir, start, data)
    shutil.rmtree(session.work / f"{bug.id}-tstart", ignore_errors=True)
    store.triage.update_bug(bug.id, bug_dir=str(folder), original_layers=len(ir.body), reduced_layers=len(ir.body),
                            reduction=reduction, repro=str(folder / "repro.py"))
    _check(session, bug, folder, data)


def _unfinished(bug: BugRow) -> tuple[ModelIR, JsonObject] | None:
    """The model an earlier reduction that ran out of time reached (its folder's), to continue from, and its
    bug.json (the passes that reduction finished, the candidates it rejected, the model it probed)."""
    path = Path(bug.bug_dir) / IR_FILE if bug.bug_dir else None
    if path is None or not path.exists() or not retried(bug.reduction):
        return None
    try:
        return ModelIR.loads(path.read_text()), read_bug_file(path.parent)
    except Exception:  # noqa: BLE001  (an unreadable folder is redone from the original model)
        return None


def _check(session: Session, bug: BugRow, folder: Path, data: JsonObject) -> None:
    if not session.script_fits(SCRIPT_S, runs=4):  # a training run is four of inference's
        return  # a later pass checks it (memo.triage.passes: unchecked scripts)
    check = rerun_script(folder, data, timeout_s=session.script_limit_s(runs=4), remember=True)
    session.store.triage.update_bug(bug.id, reproduces=check.reproduces, checked=time.time())
    session.summary.scripts += 1
    session.summary.reproduced += bool(check.reproduces)


def _minimal_dense(probe: ModelIR, checker: Callable[[ModelIR], bool]) -> tuple[ModelIR, int] | None:
    """The Dense probe ``probe`` (:func:`dense_probe`, which shows the bug) cut to what the bug needs, and the runs
    that took: one dtype's Dense alone where one shows it, else ``probe`` itself when it holds two dtypes (neither
    alone shows it: both are needed); None for three or more (the reducer cuts those)."""
    dtypes = weight_dtypes(probe)
    if len(dtypes) == 1:
        return probe, 0
    if len(dtypes) > 2:
        return None
    for runs, dtype in enumerate(dtypes, start=1):
        alone = dense_probe((dtype,))
        if checker(alone):
            return alone, runs
    return probe, len(dtypes)


def _as_forward(session: Session, bug: BugRow, found: ForwardDifference) -> BugRow:
    """``bug`` as ``found``'s forward bug (its kind, stage, signature and layer class, in the store too): a NaN
    downstream of a layer whose output differs is that layer's inconsistency (long150d: a 38-layer NaN cut to
    Keras on torch's AveragePooling2D, whose script checked for the NaN and failed)."""
    parts = forward_parts(bug.parts, found)
    bug = replace(bug, kind=str(parts["kind"]), parts=parts, stage=FORWARD_STAGE, layer_class=found.layer_class)
    session.store.triage.update_bug(bug.id, kind=bug.kind, parts=bug.parts, stage=bug.stage,
                                    layer_class=bug.layer_class)
    return bug


def _cut_step(found: ForwardDifference, cut: ModelIR) -> str:
    return (f"forward probe: {found.layer} ({found.layer_class}) is the first layer whose training-mode output "
            f"differs; cut to it ({len(cut.body)} layers)")


def triage_training_bug(session: Session, bug: BugRow) -> None:
    """Check, reduce, localize, judge by float64, write the folder and check its script (see the module docstring)."""
    store = session.store
    finding = load_finding(store, bug.first_verdict)
    executor = session.get_executor()
    if finding is None or finding.ir is None or not isinstance(executor, DifferentialExecutor):
        store.triage.update_bug(bug.id, reduction={"status": "not reduced (no model or no training executor)"})
        return
    # an optimizer sweep's finding (memo.training.sweep) was found on the model's precision probe, kept with it
    kept = (finding.verdict.extra.get("training") or {}).get(MODEL_IR_KEY)
    model = ModelIR.loads(str(kept)) if kept else finding.ir
    source = session.artifact_of(finding, execute=False)
    inputs = read_inputs(source / INPUTS_FILE) if source is not None and (source / INPUTS_FILE).exists() else None
    reference = training_reference([name for name in executor.backend_names], executor.reference)
    checker = TrainingChecker(session, bug, reference, inputs,
                              recorded_optimizer(finding.verdict.extra.get("training")),
                              recorded_remat(finding.verdict.extra.get("training")))
    laps = Laps(store, "training bug:")
    # an unfinished reduction goes on from the model it reached, checked on that model (long150d: each of 33 retries
    # trained the finding's 29-38 layers first, probed again, and judged the unfinished model by float64)
    unfinished = _unfinished(bug)
    start = checker.run(unfinished[0], session.work / f"{bug.id}-tstart") if unfinished is not None else None
    if start is None or start.verdict is None:  # a reached model that no longer shows the bug: from the finding's
        unfinished, start = None, checker.run(model, session.work / f"{bug.id}-tstart")
    laps.lap("start run")
    if start.verdict is None:
        _not_again(session, bug, model, start, reference)
        return
    begin = shown_ir = unfinished[0] if unfinished is not None else model
    previous = unfinished[1] if unfinished is not None else None
    # the cut starts at the bug's layer: for a gradient, the first wrong one in backward order (the first differing
    # array is the most upstream weight, whose gradient may be wrong only through a layer after it)
    backward = localization(begin, start, reference, bug.library, str(bug.stage))
    owner = begin.by_name().get(str(backward["layer"] or ""))
    hint = owner
    # a loss, state or gradient difference whose cause is a layer's training-mode forward output is that layer's
    # forward bug: probed before the reduction, whose start it cuts to a layer or two (long150d: a BatchNormalization
    # gradient on 29 layers took 112 reduction runs, 61 s, to reach the one layer the probe names after it); a
    # model an earlier attempt probed without a cut is not probed again
    earlier = (previous or {}).get("reduction") or {}
    was_cut = bool(earlier.get(CUT_KEY))  # an earlier attempt's probe cut the model to the layer: nothing to probe
    known = was_cut or earlier.get(PROBED_KEY) == candidate_digest(begin)
    probed = begin if known or session.remaining() > FORWARD_S + FINISH_S else None  # the model probed
    forward = forward_first(session, bug, reference, begin, inputs) if probed is not None and not known else None
    laps.lap("forward probe")
    cut = forward[1] if forward is not None else None
    if forward is not None and cut is not None:
        begin, start = cut
        shown_ir, bug = begin, _as_forward(session, bug, forward[0])
        inputs = read_inputs(start.artifact.inputs_path) if start.artifact is not None else inputs
        checker, hint = TrainingChecker(session, bug, reference, inputs), begin.by_name().get(forward[0].layer)
    # an optimizer's bug in the weights by precision alone: no graph to reduce (the smallest such model first)
    probes = [dense_probe(weight_dtypes(model)), precision_probe(model, owner.name if owner is not None else None)] \
        if str(bug.stage) in UPDATE_STAGES and begin is model else []
    tried = [candidate for candidate in probes if candidate is not None and len(candidate.body) <= len(model.body)]
    probe = next((candidate for candidate in tried if checker(candidate)), None)
    if probe is not None:
        begin = probe
    minimal = _minimal_dense(probe, checker) if probe is not None and probe is probes[0] else None
    if minimal is not None:  # one default Dense(3) per dtype the bug needs: nothing left to cut
        outcome = ReductionOutcome(ir=minimal[0], original_layers=len(model.body), runs=minimal[1],
                                   passes=[*STRUCTURAL_PASSES, "parameters"],
                                   steps=[f"{len(minimal[0].body)} Dense(3) of {', '.join(weight_dtypes(minimal[0]))}:"
                                          " shows the bug, one dtype alone does not" if len(minimal[0].body) > 1 else
                                          f"Dense(3) of {weight_dtypes(minimal[0])[0]} alone: shows the bug"])
    else:
        continued = previous if cut is None else None
        outcome = reduce_bug(begin, checker, budget_s=min(turn_budget_s(PER_BUG_S, continued),
                                                          max(0.0, session.remaining() - FINISH_S)),
                             localized=hint.name if hint is not None and not hint.is_input else None,
                             numeric=bug.kind != VerdictKind.TRAINING_CRASH.value,
                             previous=continued)
    if forward is not None and cut is not None:
        outcome.steps.insert(0, _cut_step(forward[0], begin))
    if tried:
        outcome.runs += len(tried) if probe is None else tried.index(probe) + 1
        outcome.steps.insert(0, f"precision probe ({len(probe.body)} layers, one per weight dtype): shows the bug"
                             if probe is not None else "precision probes: none shows the bug")
    laps.lap("reduction")
    final = checker.run(outcome.ir, session.work / f"{bug.id}-tfinal")
    laps.lap("final run")
    ir, run = (outcome.ir, final) if final.verdict is not None else (shown_ir, start)
    if final.verdict is None:
        outcome.status = "final check failed; original model kept"
    # what an unfinished reduction's folder is for: the next pass's start; the optimizer, remat and float64 judgements
    # and the script's check are made once, on the model it ends with
    going_on = outcome.status is Reduction.TIMEOUT
    if str(bug.stage) == OPTIMIZER_STAGE and checker.optimizer and not going_on \
            and session.remaining() > OPTIMIZER_S + FINISH_S:
        simpler = reduce_optimizer(checker.optimizer, lambda name: showing_run(
            lambda directory: TrainingChecker(session, bug, reference, inputs, name).run(ir, directory),
            session.work / f"{bug.id}-topt-{name}", lambda exc: session.error(bug.id, f"optimizer {name}", exc)))
        outcome.runs += len(simpler.tried)
        outcome.steps.append(simpler.step(checker.optimizer))
        if simpler.run is not None:  # the bug's configuration from here on: its folder, truth and scripts
            run, checker = simpler.run, TrainingChecker(session, bug, reference, inputs, simpler.name)
    if checker.remat and not going_on and session.remaining() > OPTIMIZER_S + FINISH_S:  # remat's, or the model's?
        plain = TrainingChecker(session, bug, reference, inputs, checker.optimizer)
        shown = showing_run(lambda directory: plain.run(ir, directory), session.work / f"{bug.id}-topt-plain",
                            lambda exc: session.error(bug.id, "the run without remat", exc))
        outcome.runs += 1
        outcome.steps.append(f"remat {checker.remat}: {'not needed (shows without it)' if shown else 'needed'}")
        if shown is not None:  # the model's bug: its parts, run and scripts lose remat
            run, checker, bug = shown, plain, replace(bug, parts={k: v for k, v in bug.parts.items() if k != REMAT_KEY})
            store.triage.update_bug(bug.id, parts=bug.parts)
    laps.lap("optimizer and remat probes")
    folder = bug_folder(store.directory.resolve(), bug.id)
    shutil.rmtree(folder, ignore_errors=True)
    assert run.verdict is not None
    located = localization(ir, run, reference, bug.library, str(bug.stage))
    # the reduced model probed too (one forward-only run): a reduction keeping a gradient difference can make a
    # layer's forward one that the larger model kept within the tolerance (long150d's 29-layer BatchNormalization
    # gradient: no forward difference on the finding's model, one on the 22 layers the reduction kept)
    if cut is None and not was_cut and (probed is None or ir.dumps() != probed.dumps()) \
            and session.remaining() > FORWARD_S + FINISH_S:
        probed, forward = ir, forward_first(session, bug, reference, ir, inputs) or forward
        if forward is not None and forward[1] is not None:
            ir, run = forward[1]
            outcome.steps.append(_cut_step(forward[0], ir))
            bug = _as_forward(session, bug, forward[0])
            outcome.passes, outcome.rejected = [], []  # a new bug's model: its reduction starts over
        laps.lap("forward probe")
    if forward is not None:
        located = forward_located(forward[0], backward if cut is not None else located)
    assert run.verdict is not None
    exception = crash_exception(run.verdict.message)[0] if bug.kind == VerdictKind.TRAINING_CRASH.value else ""
    if kept:  # the sweep's probe is the model's reduction already: the counts are the executed model's
        outcome.steps.insert(0, f"optimizer sweep: found on the model's precision probe ({len(model.body)} layers)")
    reduction = {**outcome.to_json(), "original_layers": len(finding.ir.body), "reduced_layers": len(ir.body)}
    if was_cut or (forward is not None and forward[1] is not None):  # a continued reduction needs no probe
        reduction[CUT_KEY] = True
    elif probed is not None and probed.dumps() == ir.dumps():  # nor on the model probed without a cut
        reduction[PROBED_KEY] = candidate_digest(ir)
    data: dict[str, Any] = {
        "id": bug.id, "kind": bug.kind, "library": bug.library, "stage": bug.stage or "", "signature": bug.parts,
        "message": run.verdict.message, "exception": exception, "error_message": run.verdict.message,
        "layer_class": bug.layer_class, "layer": located["layer"], "localization": located,
        "reference": reference, "faulty": bug.library, "training": run.verdict.extra.get("training") or {},
        "reduction": reduction, "timeout_s": session.timeout_s}
    if forward is not None and forward[1] is not None:
        data["training"] = forward_record(data["training"], forward[0])
        data["message"] = data["error_message"] = forward_message(run.verdict.message, forward[0])
    assigned = assigned_in_call(run)
    if assigned:
        data[ASSIGNED_IN_CALL] = assigned
    if not going_on and session.remaining() > TRUTH_S:
        try:
            data["truth"] = training_truth_of(session, run, reference, checker.optimizer)
        except Exception as exc:  # noqa: BLE001  (the bug keeps its folder; the report lists why it has no truth)
            session.error(bug.id, "float64 truth of a training bug", exc)
    if reference_wrong(data) and session.remaining() > TRUTH_S:  # float64 blames the reference: turn the roles
        turn = TrainingChecker(session, turned(bug, reference), bug.library, inputs, checker.optimizer, checker.remat)
        shown = turn.run(ir, session.work / f"{bug.id}-topt-turned")
        if shown.verdict is not None:
            bug, run, reference = turn.bug, shown, bug.library
            data.update(library=bug.library, faulty=bug.library, reference=reference, signature=bug.parts,
                        message=run.verdict.message, error_message=run.verdict.message,
                        training=run.verdict.extra.get("training") or {},
                        truth=training_truth_of(session, run, reference, checker.optimizer))
            store.triage.update_bug(bug.id, library=bug.library, parts=bug.parts)
    # what the report's entry quotes: the run its folder and scripts come from (the cut's, under the reduced optimizer
    # configuration), not the campaign's finding (t63: Adam's update quoted as 0.0127 from adam-accumulate, 0.0355 run)
    data[REDUCED_VERDICT] = VerdictSummary(data["message"], run.verdict.metrics()).to_json()
    laps.lap("float64 truth")
    write_folder(folder, ir, run, data)
    for scratch in [*(session.work / f"{bug.id}-{name}" for name in _SCRATCH), *session.work.glob(f"{bug.id}-topt-*")]:
        shutil.rmtree(scratch, ignore_errors=True)
    store.triage.update_bug(bug.id, bug_dir=str(folder), original_layers=len(finding.ir.body),
                            reduced_layers=len(ir.body), reduction=reduction, layer=located["layer"],
                            repro=str(folder / "repro.py"))
    laps.lap("folder")
    if not going_on:
        _check(session, bug, folder, data)
        laps.lap("script check")
    session.summary.reduced += len(ir.body) < len(finding.ir.body)


def pending_training_truths(store: CampaignStore) -> list[BugRow]:
    """Numeric training bugs with a finished folder whose float64 truth was not computed (the pass ran out of time;
    an unfinished reduction's is computed on the model it ends with)."""
    return [bug for bug in store.triage.load_bugs()
            if bug.kind in NUMERIC and bug.merged_into is None and bug.bug_dir and Path(bug.bug_dir).exists()
            and Reduction.of(bug.reduction) not in (None, Reduction.NOT_AGAIN) and not retried(bug.reduction)
            and not read_bug_file(Path(bug.bug_dir)).get("truth")]


def training_truth(session: Session, bug: BugRow) -> None:
    """The float64 truth of a training bug's folder: its model trained again (the verdict's arrays), then judged."""
    folder = Path(str(bug.bug_dir))
    data = read_bug_file(folder)
    checker = TrainingChecker(session, bug, str(data.get("reference") or ""), read_inputs(folder / INPUTS_FILE),
                              recorded_optimizer(data.get("training")), recorded_remat(data.get("training")))
    run = checker.run(ModelIR.loads((folder / IR_FILE).read_text()), session.work / f"{bug.id}-ttruth")
    try:
        data["truth"] = training_truth_of(session, run, checker.reference, checker.optimizer) if run.verdict is not None else {
            "method": engine_for(bug.library), "decision": UNAVAILABLE, "reason": "the folder's model did not show the bug again"}
    finally:
        shutil.rmtree(session.work / f"{bug.id}-ttruth", ignore_errors=True)
    write_bug_file(folder, data)
