"""A numeric bug judged again on its reduced model: the figures its entry shows, and its float64 truth.

The campaign's verdict was made on the original mutant; the report, the headline and the issue text must
speak of the model a maintainer receives. So the reduced model runs once more as the campaign ran it (the
plain model, not the localization probe) on the backends the bug involves; the oracle's verdict on that run
gives the headline, output names, element counts and max difference, and every backend's outputs are
compared with the float64 truth (:mod:`memo.triage.truth`); on a converted ONNX file, ONNX's reference evaluator
gives a third opinion (:mod:`memo.triage.onnx_reference`). All go into ``bug.json``.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from memo.backends import CONVERTERS, find_spec
from memo.backends.spec import ModelInputs
from memo.json_types import JsonObject
from memo.model.ir import ModelIR
from memo.mutation.nan import has_injection
from memo.oracle import Verdict, judge, load_outputs
from memo.kinds import NUMERIC_KINDS, VerdictKind
from memo.oracle.verdict import VerdictSummary
from memo.store import BugRow, CampaignStore
from memo.bug_files import INPUTS_FILE, IR_FILE, Reduction, read_bug_file, write_bug_file
from memo.triage.bugdir import converted_file
from memo.triage.failing_node import node_parts, own_failure
from memo.triage.masks import normalize_message
from memo.triage.finding import Finding, load_finding
from memo.triage.onnx_reference import (ONNX_REFERENCE_ARRAYS, ONNX_REFERENCE_KEY, Opinion, ask_reference,
                                        blamed_library, onnx_file_of, settle)
from memo.triage.probe import read_inputs, run_model
from memo.triage.session import Session
from memo.triage.truth import TRUTH_ARRAYS, artifact_inputs, judge_by_truth
from memo.truth import CONTRADICTED
from memo.triage.stored_weights import stored_weight_parts
from memo.triage.signature import NATIVE_SITE, native_site, TRUTH_DECISION

REDUCED_VERDICT = "reduced_verdict"
CRASH = VerdictKind.CRASH.value
TRUTH_KEY = "truth"


def reassess(session: Session, bug: BugRow, finding: Finding, ir: ModelIR, folder: Path,
             inputs: ModelInputs | None) -> JsonObject:
    """Run the reduced model ``ir`` again, judge it, compute its float64 truth; the keys written into the bug's
    ``bug.json`` (nothing when no executor is available or the model no longer runs)."""
    executor = session.get_executor()
    if executor is None:
        return {}
    directory = session.work / f"{bug.id}-reassess"
    try:
        run = run_model(executor, ir, directory, seed=session.seed, inputs=inputs,
                        backends=session.roles(finding).backends)
        if run.result is None or run.artifact is None:
            return {}
        reference = run.result.reference
        mine = _matching(judge(run.result, special_values=has_injection(ir)), bug)
        added: JsonObject = {}
        if mine is not None:
            added[REDUCED_VERDICT] = VerdictSummary.of(mine).to_json()
        outputs = load_outputs(run.result)
        if reference in outputs:
            inputs_by_name = artifact_inputs(run.artifact)
            opinion = ask_reference(bug.library, run.artifact, inputs_by_name, outputs, reference, directory,
                                    save=folder / ONNX_REFERENCE_ARRAYS)
            if opinion is None and onnx_file_of(bug.library):  # asked once: not again by every pass
                opinion = Opinion(reason="no opinion: the run left no converted file or no outputs to compare")
            if opinion is not None:
                added[ONNX_REFERENCE_KEY] = opinion.to_json()
            truth = judge_by_truth(session.truth_runner(), run.artifact.keras_path, inputs_by_name,
                                   outputs, mine or finding.verdict, reference, directory / "truth",
                                   save=folder / TRUTH_ARRAYS)
            added[TRUTH_KEY] = settle(truth, opinion).to_json()
        if TRUTH_KEY in added:
            campaign = Path(session.store.directory).resolve()
            added["truth_command"] = f"python -m memo truth {bug.id} --campaign {campaign}"
        if added:
            write_bug_file(folder, {**read_bug_file(folder), **added})
        return added
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _matching(verdicts: list[Verdict], bug: BugRow) -> Verdict | None:
    """The verdict of the reduced run that is this bug's (same kind, same library)."""
    return next((v for v in verdicts if v.kind == bug.kind and v.backend == bug.library), None)


def pending_truths(store: CampaignStore) -> list[BugRow]:
    """Numeric bugs with a finished folder and no float64 truth yet (triaged before memo computed it, or by a
    pass that ran out of time between the reduction and the truth), or, on a converted ONNX file, no opinion of
    ONNX's reference evaluator yet (triaged before memo asked it)."""
    return [bug for bug in store.triage.load_bugs()
            if bug.kind in NUMERIC_KINDS and bug.merged_into is None and bug.bug_dir and Path(bug.bug_dir).exists()
            and (bug.reduction or {}).get("status") is not None and Reduction.of(bug.reduction) is not Reduction.NOT_AGAIN
            and _unjudged(bug.library, read_bug_file(Path(bug.bug_dir)))]


def _unjudged(library: str, data: JsonObject) -> bool:
    return TRUTH_KEY not in data or (onnx_file_of(library) is not None and ONNX_REFERENCE_KEY not in data)


def reassess_folder(session: Session, bug: BugRow) -> JsonObject:
    """:func:`reassess` a finished bug from its folder's model and inputs."""
    folder = Path(str(bug.bug_dir))
    finding = load_finding(session.store, bug.first_verdict)
    if finding is None or not (folder / IR_FILE).exists():
        return {}
    ir = ModelIR.loads((folder / IR_FILE).read_text())
    inputs = read_inputs(folder / INPUTS_FILE) if (folder / INPUTS_FILE).exists() else None
    return reassess(session, bug, finding, ir, folder, inputs)


def root_cause_parts(parts: JsonObject, folder: Path) -> JsonObject:
    """A bug's signature parts as its root-cause key should see them: when its float64 truth blames the other side
    (``contradicted``), the library it blames, so that one defect is not filed twice: once against its library
    and once, with that library as the wrong witness, against another (a TensorFlow MelSpectrogram defect)."""
    data = read_bug_file(folder)
    truth = data.get(TRUTH_KEY) or {}
    if truth.get("decision") == CONTRADICTED and truth.get("blamed"):
        parts = {**parts, "library": truth["blamed"]}
    elif blamed_library(data):  # ONNX's reference evaluator on the same file: the converter's or the engine's bug
        parts = {**parts, "library": blamed_library(data)}
    if truth.get("decision"):
        parts = {**parts, TRUTH_DECISION: truth["decision"]}
    message = str(data.get("error_message") or "")
    if parts.get("kind") == CRASH and _reads_a_converted_file(str(parts.get("library", ""))):
        # a converter's or an engine's crash: the node of the converted file its message names, and that node's
        # own failure where the message lists several
        parts = {**parts, **node_parts(message, list(parts.get("frames") or []), folder / converted_file("onnx"))}
        if (own := own_failure(message)) != message:
            parts, message = {**parts, "message": normalize_message(own)}, own
        parts = {**parts, **stored_weight_parts(str(parts.get("library", "")), list(parts.get("frames") or []),
                                                folder / converted_file("onnx"))}
    if parts.get("kind") == CRASH and (site := native_site(message)):
        parts = {**parts, NATIVE_SITE: site}  # the library's own check that failed, wherever the model reached it
    located = data.get("localization") or {}
    if parts.get("kind") in NUMERIC_KINDS and located.get("layer_class"):
        # the first misbehaving layer of the REDUCED model; when it is right alone, the first of the layers that
        # are wrong together (e.g. UnitNormalization amplifying TensorFlow's MelSpectrogram)
        together = located.get("together") or []
        first = together[0] if located.get("alone") == "right" and together else None
        layer_class = located["layer_class"]
        if first and (folder / IR_FILE).exists():
            found = ModelIR.loads((folder / IR_FILE).read_text()).by_name().get(first)
            layer_class = found.class_name if found is not None else layer_class
        parts = {**parts, "layer": layer_class}
    return parts


def _reads_a_converted_file(library: str) -> bool:
    """A converter, or an engine reading a converted file (not a Keras backend)."""
    spec = find_spec(library)
    return library in CONVERTERS or (spec is not None and spec.consumes != "keras")
