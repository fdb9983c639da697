"""A bug's issue text, ready to file in its library's tracker: a title naming the layer or operator and the
symptom, the versions, the minimal script (checked to reproduce) or memo's full repro.py attached, expected
against actual (with the float64 truth for a numeric bug), and the words searched for duplicates."""
from __future__ import annotations

import json
import platform
from pathlib import Path
from urllib.parse import quote_plus

from memo import __version__
from memo.backends import find_spec, producer_of
from memo.backends.documented import upstream_of
from memo.backends.spec import UNLIKELY_FIXED
from memo.backends.inner_libraries import LIBRARIES
from memo.backends.onnx_validity import INVALID_ONNX
from memo.backends.training_optimizers import UPDATE_PREFIXES
from memo.backends.versions import distribution_versions
from memo.bug_files import NEWEST_FILE
from memo.backends.versions import MISSING
from memo.newest import BUILD_DISTRIBUTIONS, CANNOT_RUN, STILL_REPRODUCES, build_text, installed_as
from memo.filing.check import (MINIMAL_DIR, MinimalScript, attached_model_line, attachment_name, cached_minimal,
                               minimal_script)
from memo.filing.observed import ERROR_LINES, actual, error_excerpt, message_head, quoted
from memo.filing.folder import ONNX_FILE, REPRO_FILE, BugFolder
from memo.backends.training_remat import remat_scope
from memo.filing.export_text import caught_optimizer_note, torchscript_note, traced_ones_note, training_mode_note
from memo.filing.hang import hang_limit_s
from memo.triage.hang_site import hang_site
from memo.triage.second_engine import second_engine_text
from memo.filing.training_text import (LIBRARY_NAMES, TORCH_SCALARS, assigned_text, finished_by, low_precision_note,
                                       remat_note, rounded_decays_note, weightless_note)
from memo.kinds import TRAINING_KINDS, VerdictKind
from memo.backends.idioms import ONNX
from memo.filing.script import NUMERIC_PRINTS
from memo.filing.torch_onnx_code import SOURCE as TORCH_ONLY
from memo.filing.torch_onnx_code import found_through
from memo.filing.remat_folder import assigned_cause, folder_remat, folder_remat_control
from memo.filing.title import (KIND_WORDS, LAYOUT_OPERATORS, culprit, engine_operator,
                               folder_training_symptom, layer_classes, any_optimizer, shape_text,
                               stated_cause, stepped_optimizer, title, tracker_name, wrong_shape, wrong_together)
from memo.triage.failing_node import node_attributes
from memo.triage.onnx_reference import ENGINE, ONNX_REFERENCE_KEY
from memo.triage.ort_unoptimized import unoptimized_text
from memo.triage.signature import computing_library, native_site
from memo.triage.training_signature import TORCH_BACKEND
from memo.triage.training_repro import CHANGED
from memo.triage.newest import provenance
from memo.backends.trackers import DESCRIBE, DUPLICATES, ENVIRONMENT, EXPECTED, LOG, REPRODUCE, GENERIC

FENCE = "```"


def _fenced(text: str, language: str = "") -> str:
    return f"{FENCE}{language}\n{text.replace(FENCE, '`' + chr(0x200b) + '``').rstrip()}\n{FENCE}"


def environment(folder: BugFolder, checked: MinimalScript) -> list[str]:
    """Versions: the library's as the checked script printed them, its input producer's, Python and the OS."""
    lines = [f"- {checked.versions} (the script prints them; checked in a fresh process)"] if checked.versions else []
    spec = find_spec(folder.library)
    if spec is not None and not lines:
        versions = distribution_versions(spec.distributions)
        lines.append("- " + ", ".join(f"{name} {version}" for name, version in versions.items()))
    producer = producer_of(spec.consumes) if spec is not None and spec.consumes not in ("keras",) else None
    producer_spec = find_spec(producer) if producer else None
    if producer_spec is not None:
        versions = distribution_versions(producer_spec.distributions)
        lines.append(f"- the model was converted by {producer}: "
                     + ", ".join(f"{name} {version}" for name, version in versions.items()))
    lines += newest_lines(folder)
    lines.append(f"- Python {platform.python_version()}, {platform.platform()}")
    return lines


def newest_lines(folder: BugFolder) -> list[str]:
    """What the rerun on the newest code said (memo.triage.newest, the folder's newest.json), as an environment
    line: a maintainer's first question after "is it real?" is "does it still happen on main?". It names the builds
    of the library the issue is filed against (:attr:`BugFolder.filed_on`) and which packages were development
    builds; where the rerun did not run that library (an engine's script on the file a converter wrote), it says
    so instead of naming another library's builds; a verdict remembered from an earlier run says so."""
    path = folder.file(NEWEST_FILE)
    try:
        newest = json.loads(path.read_text()) if path else {}
    except (OSError, ValueError):
        return []
    versions = {str(k): str(v) for k, v in (newest.get("versions") or {}).items()}
    result, detail = newest.get("result"), str(newest.get("detail") or "")
    if result not in (STILL_REPRODUCES, CANNOT_RUN):
        return []
    remembered = provenance(newest)
    said = f" ({remembered})" if remembered else ""
    ran = str(newest.get("library") or folder.library)
    filed = folder.filed_on
    if filed != ran and installed_as(main_distribution(filed), versions) is None:
        shown = "still shows the bug" if result == STILL_REPRODUCES else "could not run"
        return [f"- not rechecked on {filed}'s newest code: memo's rerun on the newest builds ran {ran}'s script on "
                f"the stored file ({newest.get('build') or 'the newest code'}), which {shown} there{said}"]
    build = build_text(library_distributions(filed), versions, MISSING) or newest.get("build") or "the newest code"
    dev = sorted(name for name in versions if name in BUILD_DISTRIBUTIONS and f"{name} {versions[name]}" in build)
    owner = f"{filed}'s" if filed else "the"
    listed = ", ".join(f"{name} {versions[name]}" for name in dev)
    where = (f"{owner} newest code ({build}; development builds: {listed}, the others the newest releases)" if dev
             else f"{owner} newest release ({build}; no development build of it is published)" if filed
             else f"the newest releases ({build}; no development build of them is published)")
    if result == STILL_REPRODUCES:
        return [f"- still reproduces on {where}{said}"]
    if f" {CHANGED} " in detail:  # its array agrees there, another does not
        return [f"- changed on {where}, not fixed: {detail.removeprefix('could not run (exit 1): ')}{said}"]
    return [f"- not checked on {where}: the script could not run there ({detail}){said}"]


def library_distributions(library: str) -> tuple[str, ...]:
    """The distributions of ``library`` (its spec's; a library inside a backend's stack, torch.onnx, is its
    package's: torch)."""
    spec = find_spec(library)
    return tuple(spec.distributions) if spec is not None and spec.distributions else (library.split(".")[0],)


def main_distribution(library: str) -> str:
    """The distribution that is ``library`` itself, its spec's first (tf2onnx, openvino; torch for torch.onnx)."""
    return library_distributions(library)[0]


def _reproduce(folder: BugFolder, checked: MinimalScript) -> list[str]:
    if checked.reproduces:
        attached = [name for name in sorted(checked.files)]
        lines = [_fenced(checked.text, "python"), ""]
        if attached:
            lines.append(f"It reads {', '.join(f'`{name}`' for name in attached)} from its folder: attached with "
                         f"the script as `{attachment_name(folder)}` (memo keeps it in the bug's "
                         f"`{MINIMAL_DIR}/`; a tracker takes a .zip, not the files).")
        described = attached_model_line(folder, checked, LAYOUT_OPERATORS, engine_operator(folder, checked) or "")
        lines += [described] if described else []
        return lines + ["It exits 1 with the error below when the bug shows, 0 when it is fixed."]
    why = f" ({checked.reason})" if checked.reason else ""
    return [f"No minimal script reproduces this bug{why}: memo's full `{REPRO_FILE}` is attached with the model "
            f"and inputs it reads (`python {REPRO_FILE}` exits 0 when the bug reproduces)."]




def reference_outputs(folder: BugFolder) -> list[str]:
    """The shapes of the reference library's outputs on the reduced model (bug.json's ``io``), as ``(2, 21, 31)``."""
    reference = folder.reference
    outputs = (folder.info.get("io") or {}).get("outputs") or []
    shapes = [row.get(f"{reference} shape") for row in outputs if isinstance(row, dict)]
    return ["(" + ", ".join("None" if d is None else str(d) for d in shape) + ")"
            for shape in shapes if isinstance(shape, list)]


def printed_figures(checked: MinimalScript) -> list[str]:
    """The figures a numeric script prints before it asserts (its ``NUMERIC_PRINTS`` lines), as it printed them."""
    heads = tuple(line.split('"')[1] for line in NUMERIC_PRINTS.values())
    return [line.strip() for line in checked.output.splitlines() if line.strip().startswith(heads)]


def _converter_prints(folder: BugFolder, checked: MinimalScript) -> list[str]:
    """What a converter's script prints of its file (:func:`memo.filing.script.converter_file_lines`): the constant
    inputs of the node where shapes part, the output shapes."""
    op = str(wrong_shape(folder).get("op") or "\0")
    if not (folder.converter_blamed and checked.reproduces):
        return []
    return [line.strip() for line in checked.output.splitlines() if line.startswith((f"{op} ", "output shapes:"))]


def _expected(folder: BugFolder, checked: MinimalScript) -> list[str]:
    reference = folder.reference or "the reference library"
    named = f"{LIBRARY_NAMES[reference]} ({reference})" if reference in LIBRARY_NAMES else reference
    happened = actual(folder, checked)
    unoptimized = unoptimized_text(folder.info)
    if folder.kind == VerdictKind.TRAINING_CRASH.value:
        finished = finished_by(folder)
        return [f"The training step completes" + (f", as it does on {finished} for the same model, weights and "
                                                  f"gradients" if finished else "") + "."
                + (f" Actual: {happened}" if happened else "")]
    if folder.kind == "crash":
        shown = _converter_prints(folder, checked)
        return [_crash_expected(folder, named) + (f" Actual: {happened}" if happened else ""),
                *(["", unoptimized] if unoptimized else []),
                *(["", "The script prints:", "", _fenced("\n".join(quoted(line) for line in shown))] if shown else [])]
    if folder.kind == "hang":
        site = hang_site(checked.output) if checked.reproduces else ""
        stopped = (f"{hang_limit_s(folder)} s, when the script's watchdog stops it inside {site}" if site
                   else f"{folder.info.get('timeout_s', '?')} s")
        return [f"The model finishes in seconds (on {named} it does); {folder.library} is still running after "
                f"{stopped}."]
    opinion = folder.info.get("onnx_reference") or {}
    figures = printed_figures(checked) if checked.reproduces else []
    printed = ["", "The script prints:", "", _fenced("\n".join(quoted(line) for line in figures))] if figures else []
    if folder.against_evaluator:  # the engine against the specification on the same file: no Keras in it
        return [f"Outputs as ONNX's reference implementation (`onnx.reference.ReferenceEvaluator`) computes them on "
                f"the same file (attached as `expected.npz`), within rtol 1e-3 and atol 1e-3 x max(1, mean "
                f"|expected|). Actual: {happened}", "",
                f"{folder.library} against the reference evaluator: "
                f"{(opinion.get('figures') or {}).get(folder.library, '')}", *printed]
    if folder.kind == VerdictKind.TRAINING_NAN.value and str(folder.info.get("stage", "")) in UPDATE_PREFIXES:
        return [f"A finite update: the variables are finite and the gradients the script applies are finite (fixed, "
                f"of magnitude 0.5 to 1.5), so the step must be finite, as it is when the same step runs in float64. "
                f"Actual: {happened}", *printed]
    if assigned_cause(folder):  # semantics, not precision: float64 on torch shares torch's reading
        how = "differentiates through it (its stateless call traces the assigned value)" \
            if folder.library == "keras-jax" else "computes another gradient"
        return [f"The same gradient on every Keras backend. The training-mode call assigns a trainable weight; "
                f"Keras on TensorFlow and on torch take the gradient with respect to the value after the assignment "
                f"(the assignment is not differentiated), {LIBRARY_NAMES.get(folder.library, folder.library)} "
                f"{how}. Which one the layer means is Keras's to say, but one model and one set of "
                f"weights must train alike on every backend. {folder.reference}'s gradients are attached as "
                f"`expected.npz`. Actual: {happened}", *printed]
    computed = "The training step's arrays" if folder.kind in TRAINING_KINDS else "Outputs"
    control = folder_remat_control(folder)
    said = (f"as {LIBRARY_NAMES.get(folder.library, folder.library)} computes them for the same model and weights "
            f"built without `{remat_scope(control)}` (the script's `expected`)" if control
            else f"as {named} computes them (attached as `expected.npz`)")
    lines = [f"{computed} {said}, within rtol 1e-3 and atol 1e-3 x max(1, mean |expected|). Actual: {happened}",
             *printed]
    if opinion.get("reason"):
        lines += ["", f"ONNX's reference implementation on the same file: {opinion['reason']}."]
    if unoptimized:
        lines += ["", unoptimized]
    truth = folder.info.get("truth") or {}
    if truth.get("errors"):
        mode = folder_remat(folder)
        unscoped = f", built without `{remat_scope(mode)}`: what remat must not change" if mode else ""
        lines += ["", f"memo's float64 recomputation of the reduced model ({truth.get('method', '')}{unscoped}; not "
                      f"printed by the script) says {truth.get('decision', '?')}: {truth.get('reason', '')}", "",
                  "| library | error against float64 (in tolerances; at most 1 is within tolerance) |", "|---|---|"]
        lines += [f"| {name} | {value if isinstance(value, str) else format(value, '.3g')} |"
                  for name, value in truth["errors"].items()]
    return lines


def _crash_expected(folder: BugFolder, named: str) -> str:
    """What should have happened instead of a crash, by who says so: ONNX's reference implementation on the same
    file (an engine's crash on a converted file), the converted file computing what the Keras model computes (the
    converter's, where the reference fails on the file too), the reference library, or, where that is the accused
    library itself, the output shape Keras declares for the model."""
    shapes = reference_outputs(folder)
    plural = "s" if len(shapes) > 1 else ""
    returns = f" and returns output{plural} of shape {', '.join(shapes)}" if shapes else ""
    raised = f"`{folder.exception or 'an error'}`"
    opinion = folder.info.get(ONNX_REFERENCE_KEY) or {}
    if folder.converter_blamed:
        return (f"{folder.filed_on}'s file computes what the Keras model computes ({named} runs the Keras model"
                f"{returns}). Instead ONNX's reference implementation says: {opinion.get('reason', '')}; "
                f"{folder.library}, which reads that file, raises {raised}.")
    if folder.inside:  # a library the backend calls: it should have done its part
        return (f"{folder.inside} {LIBRARIES[folder.inside].duty} ({named} "
                f"runs this model{returns}). Instead {raised} is raised"
                + (" by onnx.checker on the file it wrote." if folder.exception in LIBRARIES[folder.inside].writes
                   else f" inside {folder.inside}."))
    if folder.exception == INVALID_ONNX:  # the converter returned; ONNX's checks reject what it wrote
        return (f"{tracker_name(folder.library)} writes a valid ONNX file for this model ({named} runs it{returns}). "
                f"Instead the file it writes fails ONNX's checks (the script's error below).")
    if opinion.get("decision") == ENGINE and opinion.get("blamed") == folder.library:
        also = f", as {named} does on the Keras model" if shapes else ""
        return (f"{folder.library} runs the file: ONNX's reference implementation (`onnx.reference."
                f"ReferenceEvaluator`, the specification's semantics) runs the same file{returns}{also}. Instead "
                f"{folder.library} raises {raised}.")
    if computing_library(folder.reference) == computing_library(folder.library) or not folder.reference:
        declared = f" and returns output{plural} of shape {', '.join(shapes)}, the shape{plural} Keras declares " \
                   f"for it" if shapes else ""
        return f"The model runs{declared}. Instead {folder.library} raises {raised}."
    return (f"The model runs: {named} runs this model{returns}.{second_engine_text(folder.info)} Instead "
            f"{folder.library} raises {raised}.")


def _log(folder: BugFolder, checked: MinimalScript) -> list[str]:
    """The script's output from the exception it raised on (its first lines: a message may go on with data)."""
    if not checked.reproduces:
        text = quoted(str(folder.info.get("error_message") or folder.info.get("message") or ""))
        excerpt = "\n".join(text.rstrip().splitlines()[:ERROR_LINES])
        return ["As the campaign recorded it, on the unreduced model:", "", _fenced(excerpt)] if excerpt else ["(none)"]
    excerpt = "\n".join(error_excerpt(folder, checked))
    if checked.versions and excerpt and not checked.output.startswith(excerpt):
        excerpt = f"{quoted(checked.versions)}\n...\n{excerpt}"
    return [_fenced(excerpt)] if excerpt else ["(none)"]


def search_words(folder: BugFolder, checked: MinimalScript | None = None) -> str:
    """The words to search the tracker with: the culprit, the exception and the message's stated cause."""
    stated = stated_cause(folder, checked) if folder.kind == "crash" else KIND_WORDS.get(folder.kind, "")
    words = " ".join([word for word in stated.replace("`", " ").split()
                      if not any(mark in word for mark in ("/", "::", "\\", "0x"))][:8])
    return " ".join(part for part in (culprit(folder, checked).split(",")[0], folder.exception, words) if part)


def _duplicates(folder: BugFolder, checked: MinimalScript, tracker: str) -> list[str]:
    words = search_words(folder, checked)
    lines = [f"Search words: `{words}`"]
    if tracker:
        lines.append(f"Search: {tracker}?q={quote_plus('is:issue ' + words)}")
    return lines


def issue_text(folder: Path) -> str:
    """The issue text of the bug folder at ``folder`` in its tracker's form (Markdown); its minimal script is
    written and checked first when the folder keeps none (a few seconds: the library runs once)."""
    return render_issue(BugFolder.read(folder), minimal_script(folder))


def kept_issue_text(folder: Path, blamed: str | None = None) -> tuple[str, MinimalScript] | None:
    """The issue text and minimal script of ``folder`` when its minimal script was checked already (the report:
    a read-only view, which runs no library), filed against ``blamed`` (triage's blame, ``bugs.blame``) where given;
    None otherwise."""
    bug = BugFolder.read(folder, blamed)
    checked = cached_minimal(bug)
    return (render_issue(bug, checked), checked) if checked is not None else None


def _described(bug: BugFolder, checked: MinimalScript) -> str:
    """The bug in one sentence: the library, what goes wrong, on what, at which stage."""
    stage = bug.info.get("stage", "?")
    origin = wrong_shape(bug)
    if bug.converter_blamed:  # the converter's file is wrong; the engine reading it only shows it
        parted = (f" {bug.library} and {origin.get('by') or 'the reference'} part at its {origin['op']} node: output "
                  f"shape {shape_text(origin['engine'])} against {shape_text(origin['reference'])}; the script "
                  f"prints that node's constant inputs." if origin else "")
        what = f"that {bug.library} fails on ({stage} stage)" if bug.kind == "crash" else \
            f"that computes another result ({bug.library} {KIND_WORDS.get(bug.kind, 'fails')} on it, {stage} stage)"
        return (f"{bug.filed_on} converts a model of {', '.join(layer_classes(bug)) or '?'} to an ONNX file {what}."
                f"{parted} The script below runs {bug.filed_on} on the Keras model and the file it writes on ONNX's "
                f"reference implementation (`onnx.reference`), which differs from Keras on it (or fails).")
    if bug.inside:  # the crash arises inside a library that the backend calls
        calls = " -> ".join(frame.rpartition("/")[2] for frame in reversed(bug.frames[:3]))
        where = (f"{bug.inside} writes an invalid ONNX file" if bug.exception in LIBRARIES[bug.inside].writes
                 else f"the exception is raised inside {bug.inside} ({calls})")
        return (f"{LIBRARY_NAMES.get(bug.library, bug.library)} fails on a model of "
                f"{', '.join(layer_classes(bug)) or '?'} ({stage} stage): {where}.{torch_only_origin(checked)}")
    if origin:  # the crash follows from a node whose output shape is already wrong
        failing = engine_operator(bug, checked)
        attributes = node_attributes(bug.file(ONNX_FILE), str(origin["op"]), str(origin["node"]))
        listed = ", ".join(f"{name}={value}" for name, value in sorted(attributes.items())
                           if isinstance(value, (int, float, str, list)) and len(str(value)) <= 40)
        return (f"{bug.library} computes output shape {shape_text(origin['engine'])} for the {origin['op']} node "
                f"`{origin['node']}`{f' ({listed})' if listed else ''} of the attached ONNX file, where "
                f"{origin.get('by') or 'the reference'} gives {shape_text(origin['reference'])} on the same file and "
                f"inputs (the first node whose output shape differs); a later node{f' ({failing})' if failing else ''}"
                f" then fails on it ({stage} stage).")
    if bug.exception == INVALID_ONNX:  # the converter returns; the file it wrote is what onnx.checker rejects
        return (f"{tracker_name(bug.library)} converts a model of {', '.join(layer_classes(bug)) or '?'} without an "
                f"error, but the ONNX file it writes is invalid ({stage} stage): the script checks it as ONNX's "
                f"tools do (`onnx.checker.check_model(..., full_check=True)`, strict shape inference, and the "
                f"operator's documented attribute bounds) and raises where it breaks them.")
    stepped = stepped_optimizer(bug)
    if stepped is not None and bug.kind == VerdictKind.TRAINING_CRASH.value:  # the optimizer fails, whatever layers
        built, dtypes = stepped
        finished = finished_by(bug)
        held = f"{' and '.join(dtypes)} variables" if dtypes else "a model's variables"
        return (f"With {LIBRARY_NAMES.get(bug.library, bug.library)}, `keras.optimizers.{built}` fails to step "
                f"{held} (`optimizer.apply(gradients, variables)`, training stage {stage})"
                + (f", where {finished} steps the same variables." if finished else ".") + low_precision_note(dtypes))
    symptom = folder_training_symptom(bug)
    if symptom and stepped is not None:  # an optimizer's update: the optimizer and the variables it steps
        built, dtypes = stepped
        held = f"{' and '.join(dtypes)} variables" if dtypes else "a model's variables"
        options = "," in built  # settings beside the learning rate (the reduction left those the bug needs)
        nonfinite = bug.kind == VerdictKind.TRAINING_NAN.value  # a factor rounded to 1.0 makes a NaN, not a crash
        cause = (" " + TORCH_SCALARS + (" The option is not the cause." if options else "")
                 if any_optimizer(bug) and bug.library == TORCH_BACKEND else "")
        return (f"With {LIBRARY_NAMES.get(bug.library, bug.library)}, `keras.optimizers.{built}` stepping {held} "
                f"(`optimizer.apply(gradients, variables)`, fixed gradients) computes a step whose {symptom} "
                f"(training stage {stage}).{cause}{rounded_decays_note(built, dtypes) if nonfinite else ''}"
                f"{low_precision_note(dtypes)}")
    if symptom:  # which array of the training step goes wrong, not that the library "fails"
        return (f"On a model of {culprit(bug, checked)}, {LIBRARY_NAMES.get(bug.library, bug.library)} computes a "
                f"training step whose {symptom} (training stage {stage}; the script computes it as a user of "
                f"{bug.library} would).{weightless_note(bug)}{assigned_text(bug)}")
    head = message_head(bug, checked) if bug.kind in CRASH_KINDS else ""  # what it says, not only that it fails
    said = f": {bug.exception + ': ' if bug.exception else ''}{head.rstrip('.')}" if head else ""
    if bug.delegated:  # the check that fails is the delegate's own code, reached through the backend's lowering
        site = native_site(str(bug.info.get("error_message") or bug.info.get("message") or ""))
        named = upstream_of(bug.delegated).form.project or bug.delegated
        return (f"{named} fails on the model {LIBRARY_NAMES.get(bug.library, bug.library)} builds for "
                f"{culprit(bug, checked)} ({stage} stage){said}. The check that fails is {named}'s own code"
                f"{f' (`{site}`)' if site else ''}, not the backend's lowering.")
    return (f"{LIBRARY_NAMES.get(bug.library, bug.library)} {KIND_WORDS.get(bug.kind, 'fails')} on a model of "
            f"{culprit(bug, checked)} ({stage} stage){said}.{traced_ones_note(bug)}{torchscript_note(bug)}"
            f"{training_mode_note(bug)}{caught_optimizer_note(bug)}"
            f"{together_note(bug)}")


def together_note(bug: BugFolder) -> str:
    """Where the culprit layer computes right alone and wrong after the layers before it (:func:`wrong_together`):
    what that tells the backend's maintainer, as a sentence opening with a space (t56's reader: "Dense: gives wrong
    results" on a model of Conv2D, RepeatVector, GRU, RandomZoom and Dense, with no isolation of the faulty op)."""
    before = wrong_together(bug)
    located = bug.info.get("localization") if isinstance(bug.info.get("localization"), dict) else {}
    if not before:
        return ""
    reference = LIBRARY_NAMES.get(bug.reference, bug.reference or "the reference")
    return (f" Every layer's output before `{located.get('layer')}` agrees with {reference}'s; that layer alone, fed "
            f"the very arrays {reference} computes for it, computes right on "
            f"{LIBRARY_NAMES.get(bug.library, bug.library)} too. It is wrong only compiled after "
            f"{', '.join(before)} (the reduction kept them): a fault of the graph compiled as a whole (a fusion or "
            f"transformation across layers), not of the layer's own lowering.")


CRASH_KINDS = (VerdictKind.CRASH.value, VerdictKind.TRAINING_CRASH.value)


def torch_only_origin(checked: MinimalScript) -> str:
    """Where a checked torch-only script's call comes from (:func:`memo.filing.torch_onnx_code.found_through`: the
    TorchScript exporter Keras uses, the Keras line making the call), as sentences opening with a space; "" for
    another script."""
    said = found_through(checked.text) if checked.reproduces and checked.source == TORCH_ONLY else ""
    return f" {said}" if said else ""


def render_issue(bug: BugFolder, checked: MinimalScript) -> str:
    """The issue text of ``bug`` with its checked minimal script: in its tracker's form, or, for a library whose
    spec says its bugs are not filed (retired upstream), a record in the generic form saying so."""
    upstream = upstream_of(bug.filed_on)
    tracker = "" if upstream.record_only else upstream.tracker
    form = upstream.form if tracker else GENERIC
    parts = {
        DESCRIBE: [_described(bug, checked) + remat_note(bug) + f" Found by memo {__version__} (coverage-guided model mutation), bug "
                   f"`{bug.id}`; the model was reduced to what still shows the bug."],
        ENVIRONMENT: environment(bug, checked),
        REPRODUCE: _reproduce(bug, checked),
        EXPECTED: _expected(bug, checked),
        LOG: _log(bug, checked),
        DUPLICATES: _duplicates(bug, checked, tracker),
    }
    lines = [f"# {title(bug, checked)}", ""]
    if upstream.filing:
        lines += [f"**{upstream.filing[0].upper()}{upstream.filing[1:]}**" + (f" ({upstream.reason})" if upstream.reason
                                                                             else ""), ""]
    elif tracker:
        if upstream.status in UNLIKELY_FIXED:  # a legacy path: the tracker exists, but no fix will come of it
            lines += [f"**Not fileable as is: {upstream.status} code**" + (f" ({upstream.reason})" if upstream.reason
                                                                          else ""), ""]
        lines += [f"File at: {tracker}" + (f" ({form.project})" if form.project else "")
                  + (f"; {upstream.where}" if upstream.where else ""), ""]
    fields = form.answers("import keras" in checked.text)
    lines += [f"**{heading}:** {answer}  " for heading, answer in fields.items()]
    if fields:
        lines.append("")
    for key in form.order:
        lines += [f"### {form.headings[key]}", "", *parts[key], ""]
    return "\n".join(lines).rstrip() + "\n"
