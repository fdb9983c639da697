"""Checking a minimal script: it runs in a fresh process, with the library's own interpreter, in a folder holding
only the script and its files, and reproduces when it exits 1 with the bug's symptom.

The result is kept in the bug folder (``minimal/``: the script, its files and ``check.json``), keyed by the
folder's model and verdict, so the report and ``memo bugs issue`` show it without running the library again.
"""
from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import time
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from memo.backends.onnx_validity import INVALID_ONNX
from memo.bugdb.recheck import run_script
from memo.bug_files import MINIMAL_CHECK_FILE as CHECK_FILE, MINIMAL_DIR
from memo.filing.hang import HANG, check_limit_s, hang_limit_s
from memo.triage.hang_site import HANG_SYMPTOM
from memo.filing.folder import BUG_FILE, IR_FILE, ONNX_FILE, BugFolder
from memo.text import without_ansi
from memo.filing.onnx_code import GraphNotWritable, file_summary, loop_facts, onnx_graph_code
from memo.triage.stored_weights import computed_weight
from memo.filing.script import (KERAS_ATTACHED, MAX_SCRIPT_LINES, ONNX_ATTACHED, SCRIPT_FILE, Candidate,
                                NoMinimalScript, candidates, has_optional_env, script_library,
                                written_candidates)
from memo.triage.onnx_reference import opine_on_crash, trace_shape_origin
from memo.triage.assigned import probe_assigned
from memo.triage.ort_unoptimized import probe_unoptimized
from memo.triage.second_engine import probe_second_engine
from memo.triage.passes import SCRIPT_CHECK_S

GENERATOR = "memo-minimal/5"  # changes when the scripts memo writes change: older checks are then redone
CHECK_TIMEOUT_S = 120.0
REFERENCE_TIMEOUT_S, REFERENCE_MIN_S = 30.0, 5.0  # ONNX's reference evaluator on a reduced file takes seconds
OUTPUT_TAIL = 3000
# The exception a script raises for memo's own name of a crash: memo's converters validate their ONNX output with
# onnx.checker (InvalidONNX), which a script calls itself.
EXCEPTION_ALIASES: dict[str, tuple[str, ...]] = {INVALID_ONNX: ("ValidationError", "InferenceError")}
NUMERIC_SYMPTOM = ("AssertionError",)


@dataclass
class MinimalScript:
    """A bug's minimal script and its check: ``reproduces`` in a fresh process (False: not shown), the
    interpreter's ``versions`` line (the script prints it first), the check's output and why there is none."""

    text: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    reproduces: bool = False
    versions: str = ""
    output: str = ""
    reason: str = ""
    source: str = ""
    # decided nothing, so not kept: stopped by a deadline (not its own limit), or killed before it printed a line
    inconclusive: bool = field(default=False, compare=False)
    exit_code: int | None = field(default=None, compare=False)  # the run's exit status (not kept: the verdict is)

    @property
    def lines(self) -> int:
        return len(self.text.rstrip().splitlines())

    def to_json(self) -> dict[str, object]:
        out = asdict(self)
        out.pop("inconclusive")
        out.pop("exit_code")
        out["files"] = sorted(self.files)
        out["lines"] = self.lines
        return out


def folder_key(folder: BugFolder) -> str:
    """What a check depends on: the generator, the verdict and the reduced model's files."""
    digest = hashlib.sha256(GENERATOR.encode())
    if folder.kind == HANG:  # a hang's check depends on its watchdog's limit too (longer since t64)
        digest.update(f"watchdog {hang_limit_s(folder)}".encode())
    if has_optional_env(script_library(folder)):  # tried without XLA's -O0 first since t64
        digest.update(b"plain env first")
    for name in (BUG_FILE, IR_FILE, ONNX_FILE):
        path = folder.file(name)
        digest.update(path.read_bytes() if path else b"-")
    return digest.hexdigest()[:20]


def symptoms(folder: BugFolder) -> tuple[str, ...]:
    """The words whose presence in the script's error output says the bug showed."""
    if folder.numeric or folder.converter_blamed:  # a converter's script asserts on the file it wrote
        return NUMERIC_SYMPTOM
    if folder.kind == HANG:  # its watchdog fired (memo.filing.hang)
        return (HANG_SYMPTOM,)
    exception = folder.exception
    return (exception, *EXCEPTION_ALIASES.get(exception, ())) if exception else ()


def _reproduced(folder: BugFolder, returncode: int, stderr: str) -> bool:
    if returncode < 0:  # died by a signal: a native crash when memo's worker died so too
        return not folder.numeric and (not folder.exception or folder.exception.startswith(("signal", "Worker")))
    return returncode == 1 and any(word and word in stderr for word in symptoms(folder))


def run_candidate(folder: BugFolder, candidate: Candidate, timeout_s: float | None = None) -> MinimalScript:
    """Run ``candidate`` in a fresh process in a scratch folder, for at most ``timeout_s`` (None: the folder's full
    limit, :func:`memo.filing.hang.check_limit_s`); the verdict and the output."""
    full = check_limit_s(folder, CHECK_TIMEOUT_S)
    timeout_s = full if timeout_s is None else timeout_s
    result = MinimalScript(candidate.text, dict(candidate.files), source=candidate.source)
    with tempfile.TemporaryDirectory(prefix="memo-minimal-") as scratch:
        for name, data in {SCRIPT_FILE: candidate.text.encode(), **candidate.files}.items():
            Path(scratch, name).write_bytes(data)
        run = run_script(Path(scratch), candidate.python or sys.executable, timeout_s, SCRIPT_FILE,
                         stderr_apart=True, tail=None, remember=True)
        if run.timed_out:
            result.reason = f"the script ran past {timeout_s:.0f} s"
            result.inconclusive = timeout_s < full
            return result
        if run.returncode is None:
            result.reason = f"could not start {run.output.removeprefix('cannot start ')}"
            return result
        returncode = result.exit_code = run.returncode
        stdout, stderr = (without_ansi(text).replace(scratch + "/", "") for text in (run.output, run.stderr))
    stdout_lines = stdout.strip().splitlines()
    result.versions = stdout_lines[0] if stdout_lines else ""
    result.output = kept_output(stdout, stderr, symptoms(folder))
    result.reproduces = _reproduced(folder, returncode, stderr) and candidate.symptom in stderr
    if not result.reproduces and returncode < 0 and not stdout.strip():
        # killed during its imports (a SIGBUS while another process rewrote a library's files): the machine's doing
        result.reason = f"the script was killed by signal {-returncode} before it printed a line"
        result.inconclusive = True
    elif not result.reproduces and folder.kind == HANG and returncode == 0:
        result.reason = f"the call finished within the watchdog's {hang_limit_s(folder)} s: slow, not a hang"
    elif not result.reproduces:
        result.reason = f"the script exited {returncode} without the bug's symptom ({', '.join(symptoms(folder))})"
    return result


def kept_output(stdout: str, stderr: str, words: tuple[str, ...]) -> str:
    """What a check keeps of a run's output (:data:`OUTPUT_TAIL` characters): its first line (the versions), and
    the error output from the line that names the bug's exception on, its head kept where it is long (torch.onnx
    quotes a whole traceback inside its message: a tail would keep that and lose the exception's name)."""
    found = max((stderr.rfind(f"{word}:") for word in words if word), default=-1)
    start = stderr.rfind("\n", 0, found) + 1 if found >= 0 else max(0, len(stderr) - OUTPUT_TAIL)
    head = stdout.strip().splitlines()[:1]
    kept = stdout if len(stdout) <= OUTPUT_TAIL // 3 else "\n".join([*head, "...", stdout[-OUTPUT_TAIL // 3:]])
    return kept + stderr[start:start + OUTPUT_TAIL]


class CheckCutShort(Exception):
    """The deadline left no time to start a candidate: nothing is kept, a later check does it."""


def _timeout(folder: BugFolder, deadline: float | None) -> float:
    """A candidate's time limit before ``deadline`` (monotonic clock); :class:`CheckCutShort` when a fresh process
    could not finish by then (:data:`memo.triage.passes.SCRIPT_CHECK_S`)."""
    full = check_limit_s(folder, CHECK_TIMEOUT_S)
    if deadline is None:
        return full
    left = deadline - time.monotonic()
    if left < SCRIPT_CHECK_S:
        raise CheckCutShort(f"{max(0.0, left):.0f} s left, a check needs {SCRIPT_CHECK_S:.0f} s")
    return min(full, left)


def check_minimal(folder: BugFolder, deadline: float | None = None) -> MinimalScript:
    """The first candidate that reproduces (the last one tried, with ``reproduces`` False, when none does; the one
    that decided nothing, ``inconclusive``, when one did not). ``deadline`` (monotonic clock): no candidate runs past
    it (one it stops is inconclusive); :class:`CheckCutShort` when there is no time to start one."""
    try:
        tries = candidates(folder, deadline)
    except NoMinimalScript as exc:
        return MinimalScript(reason=str(exc))
    except Exception as exc:  # a folder memo cannot write a script for never breaks an issue text or the report
        return MinimalScript(reason=f"no script could be written ({type(exc).__name__}: {exc})")
    result = MinimalScript()
    for candidate in tries:
        result = run_candidate(folder, candidate, _timeout(folder, deadline))
        if result.reproduces or result.inconclusive:
            break
    return result


def cached_minimal(folder: BugFolder) -> MinimalScript | None:
    """The kept check of ``folder``, None when there is none or the folder changed since."""
    check = folder.path / MINIMAL_DIR / CHECK_FILE
    try:
        data = json.loads(check.read_text())
    except (OSError, ValueError):
        return None
    if data.get("key") != folder_key(folder):
        return None
    root = check.parent
    try:
        files = {name: (root / name).read_bytes() for name in data.get("files", [])}
        text = (root / SCRIPT_FILE).read_text() if (root / SCRIPT_FILE).exists() else ""
    except OSError:
        return None
    return MinimalScript(text, files, bool(data.get("reproduces")), str(data.get("versions", "")),
                         str(data.get("output", "")), str(data.get("reason", "")), str(data.get("source", "")))


def attachment_name(folder: BugFolder) -> str:
    """The zip :func:`keep` writes beside a minimal script: the script and the files it reads."""
    return f"{folder.id}.zip"


def keep(folder: BugFolder, result: MinimalScript) -> None:
    """Write ``result`` into the folder's ``minimal/`` (replacing an older one)."""
    root = folder.path / MINIMAL_DIR
    root.mkdir(exist_ok=True)
    for old in root.iterdir():
        if old.is_file():
            old.unlink()
    if result.text:
        (root / SCRIPT_FILE).write_text(result.text)
    for name, data in result.files.items():
        (root / name).write_bytes(data)
    if result.text and result.files:  # what the issue attaches: a tracker takes a .zip, not .npz or .onnx files
        with zipfile.ZipFile(root / attachment_name(folder), "w", zipfile.ZIP_DEFLATED) as bundle:
            for name, data in {SCRIPT_FILE: result.text.encode(), **result.files}.items():
                bundle.writestr(name, data)
    (root / CHECK_FILE).write_text(json.dumps({**result.to_json(), "key": folder_key(folder)}, indent=1))


def minimal_script(folder: Path, *, refresh: bool = False, deadline: float | None = None) -> MinimalScript:
    """The minimal script of the bug folder at ``folder``, checked in a fresh process (kept in the folder unless the
    check was inconclusive). ``deadline`` (monotonic clock): the check ends by then (:class:`CheckCutShort` when it
    cannot start)."""
    reference_s = REFERENCE_TIMEOUT_S if deadline is None else min(
        REFERENCE_TIMEOUT_S, deadline - time.monotonic() - SCRIPT_CHECK_S)
    if reference_s >= REFERENCE_MIN_S:  # an engine's crash on a converted file: the converter's where the file is
        with tempfile.TemporaryDirectory(prefix="memo-reference-") as scratch:  # wrong (bug.json: before the key)
            opine_on_crash(Path(folder), Path(scratch), reference_s)
            trace_shape_origin(Path(folder), Path(scratch), reference_s)  # where an engine's shapes went wrong
            probe_unoptimized(Path(folder), Path(scratch), reference_s)  # ONNX Runtime's passes off: still there?
            probe_second_engine(Path(folder), Path(scratch), reference_s)  # another engine's crash: ORT runs it?
            probe_assigned(Path(folder), reference_s)  # a training bug: weights its training call assigns
    bug = BugFolder.read(folder)
    cached = None if refresh else cached_minimal(bug)
    if cached is not None and cached.text:  # a kept "no script": writing none again is cheap, and memo may write one
        return cached
    result = check_minimal(bug, deadline)
    if not result.inconclusive:
        keep(bug, result)
    return result


def check_campaign(bugs_dir: Path, *, refresh: bool = False) -> tuple[int, int]:
    """Write and check the minimal script of every bug folder under ``bugs_dir``; ``(checked, reproducing)``."""
    results = [minimal_script(path, refresh=refresh) for path in sorted(bugs_dir.iterdir())
               if (path / BUG_FILE).is_file()] if bugs_dir.is_dir() else []
    decided = [result for result in results if not result.inconclusive]  # the others are not kept: checked later
    return len(decided), sum(1 for result in decided if result.reproduces)


def attached_model_line(folder: BugFolder, checked: MinimalScript, plumbing: frozenset[str] = frozenset(),
                        first: str = "") -> str:
    """The issue's one line on a script that reads the reduced model from its attached file: what the file holds
    (:func:`memo.filing.onnx_code.file_summary`, ``plumbing`` operators listed last) and the true reason it is no code
    (a graph helper code cannot state, a script over :data:`MAX_SCRIPT_LINES` lines, or a code-built model that did
    not show the bug); "" for a script that builds its model."""
    if checked.source not in (ONNX_ATTACHED, KERAS_ATTACHED):
        return ""
    path = folder.file(ONNX_FILE)
    if checked.source == KERAS_ATTACHED or path is None:
        return "The reduced model is attached as a file: built in code, it did not show the bug."
    try:
        onnx_graph_code(path)
        built = [candidate for candidate in written_candidates(folder) if candidate.source != ONNX_ATTACHED]
    except GraphNotWritable as exc:
        why = f"memo writes no `onnx.helper` code for a graph with {exc}"
    except Exception:  # a file memo cannot rewrite: say what it holds all the same
        why = "memo could not write it as `onnx.helper` code"
    else:
        longest = max((candidate.lines for candidate in built), default=0)
        why = (f"as `onnx.helper` code the script would take {longest} lines (over {MAX_SCRIPT_LINES})"
               if longest > MAX_SCRIPT_LINES else "rebuilt as `onnx.helper` code, it did not show the bug")
    facts = [fact for fact in ((computed_weight(path, first), loop_facts(path, first)) if first else ()) if fact]
    return (f"The attached `{ONNX_FILE}` is the reduced model, {file_summary(path, plumbing, first)}"
            f"{''.join(f'; {fact}' for fact in facts)}: {why}.")
