"""Re-keying a bug by its root cause: the one place its key (:func:`memo.triage.signature.reduced_key`, a training
bug's :func:`memo.triage.training_signature.training_key`) is computed from its folder's model and merged by
(:meth:`memo.store.TriageTables.merge_bug`): after its reduction, after its model and script are adopted from the
bug database, and at each pass for what memo learnt since (a root-cause rule, a float64 truth)."""
from __future__ import annotations

from pathlib import Path

from memo.bug_files import IR_FILE, read_bug_file
from memo.kinds import TRAINING_KINDS
from memo.truth import CONFIRMED
from memo.training.judge import UPDATE_STAGES
from memo.model.ir import ModelIR
from memo.store import BugRow, CampaignStore
from memo.json_types import JsonObject
from memo.triage.assigned import ASSIGNED_IN_CALL
from memo.triage.onnx_reference import ENGINE, ONNX_REFERENCE_KEY
from memo.triage.reassess import TRUTH_KEY, root_cause_parts
from memo.triage.signature import OWN_STACK, reduced_key
from memo.triage.training_signature import training_key


def own_stack_parts(parts: JsonObject, data: JsonObject) -> JsonObject:
    """``parts`` marked :data:`memo.triage.signature.OWN_STACK` when the bug's ONNX reference opinion (its bug.json
    as ``data``) finds the engine differing from the reference on the converted file it ran: the engine's stack's own
    defect, which no finding of another stack computing with the same library stands for. Not where the engine is
    wrong only through special values (:func:`special_values_wrong`): what a library's kernels do with a NaN made
    inside the model is the same in every stack computing with it."""
    opinion = data.get(ONNX_REFERENCE_KEY) or {}
    if not isinstance(opinion, dict) or opinion.get("decision") != ENGINE or special_values_wrong(data):
        return parts
    return {**parts, OWN_STACK: ENGINE}


def special_values_wrong(data: JsonObject) -> bool:
    """Whether a numeric bug (its bug.json as ``data``) is wrong through special values made inside the model: its
    float64 truth confirmed it only by the operator's NaN contract (``special_values``: float64 makes NaN or Inf
    inside), or its ONNX reference opinion counts NaN the engine did not propagate. OpenVINO's Minimum and Maximum
    return the operand that is not NaN, through its ONNX frontend's Min/Max (AutoContrast's 255/0 * 0 on a 1x1
    image gives 255) and Keras's OpenVINO clip (0) alike: one OpenVINO defect, unlike a finite difference of one
    stack's own lowering (p40's Resize exclude_outside)."""
    truth = data.get(TRUTH_KEY) or {}
    opinion = data.get(ONNX_REFERENCE_KEY) or {}
    return bool(isinstance(truth, dict) and truth.get("decision") == CONFIRMED and truth.get("special_values")) or \
        bool(isinstance(opinion, dict) and opinion.get("nan_not_propagated"))


def folder_blame(parts: JsonObject, data: JsonObject) -> JsonObject:
    """A training bug's ``parts`` naming the library its folder blames (bug.json's ``library``): float64 turned t51's
    remat gradient round to the reference, and a bug adopted from the bug database with that folder keeps the
    accused its new finding named (t53: one TensorFlow defect keyed once by TensorFlow, once by torch). An
    optimizer stage's parts name Keras's code already (:func:`memo.triage.training_signature.shared_code_parts`)."""
    blamed = str(data.get("library") or "")
    if not blamed or blamed == parts.get("library") or parts.get("stage") in UPDATE_STAGES:
        return parts
    return {**parts, "library": blamed}


def root_cause_key(bug: BugRow) -> str | None:
    """A bug's root-cause key on its folder's model (None: no folder model): a training bug's by
    :func:`training_key`, any other's by :func:`reduced_key` on :func:`root_cause_parts` (:func:`own_stack_parts`)."""
    path = Path(bug.bug_dir) / IR_FILE if bug.bug_dir else None
    if path is None or not path.exists():
        return None
    ir = ModelIR.loads(path.read_text())
    if bug.kind in TRAINING_KINDS:
        data = read_bug_file(path.parent)
        decision = str((data.get("truth") or {}).get("decision") or "")
        return training_key(folder_blame(bug.parts, data), ir, decision, assigned=bool(data.get(ASSIGNED_IN_CALL)))
    return reduced_key(own_stack_parts(root_cause_parts(bug.parts, path.parent), read_bug_file(path.parent)), ir)


def rekey(store: CampaignStore, bug: BugRow | None) -> bool:
    """The one place a bug is re-keyed: its root-cause key computed again from its folder (after its reduction, or
    when memo learnt a new root-cause rule or a float64 truth since), and merged anew where it changed; whether it
    changed."""
    key = root_cause_key(bug) if bug is not None else None
    if bug is None or key is None or key == bug.final_key:
        return False
    store.triage.merge_bug(bug.id, key)
    return True
