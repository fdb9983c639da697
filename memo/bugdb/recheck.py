"""Rechecking a bug on the installed library versions: run its ``repro.py`` in a fresh process and say whether
it still reproduces, no longer does (fixed), or could not be run at all.

A bug's script exits 0 when the bug shows and 1 when it does not; but Python also exits 1 on an uncaught
exception (a missing module, an error before the check), and a crash's script exits 1 when the library raises
something else than the recorded exception. So "fixed" is given only when the script ran to its end and printed
its own "does not reproduce" verdict; everything else that is not a reproduction is ``error`` with one line
saying why (import error, timeout, a different exception, a missing file, another signal). A bug that killed
memo's worker and now raises an exception instead is ``error`` too: its behaviour changed, but whether the fix
is real (a clean error) or another bug hides it is for a person to read.

The interpreter is the one the bug's library needs (its spec's ``python``, as ``memo repro`` chooses: memo's
environment, or MXNet's own), or any other given: a virtual environment with an older or newer release of the
library. The versions the script ran with are read from that interpreter's package metadata (the script's "Needs:"
line names the distributions), without importing the libraries.
"""
from __future__ import annotations

import functools
import json
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Iterable, Iterator, Literal

from memo.backends import find_spec
from memo.backends.versions import MISSING
from memo.bug_files import REPRO_FILE, Reduction, read_bug_file
from memo.bugdb.expected import AS_RECORDED, RERUN_TIMEOUT_S, prepare
from memo.bugdb.script_runs import remembered_runs, run_key
from memo.json_types import JsonObject
from memo.newest import DEV_BUILDS, installed_as
from memo.script_exit import ALARM_SLACK_S, HANG_RERUN_MARGIN_S, expected_death, interpret

Result = Literal["reproduces", "fixed", "error"]
REPRODUCES: Final = "reproduces"
FIXED: Final = "fixed"
ERROR: Final = "error"
RESULTS: tuple[Result, ...] = (REPRODUCES, FIXED, ERROR)

DETAIL_CHARS = 240
# Said of a "fixed" bug that triage could not show again either: the campaign's one sighting may have been chance
# (a hang under load, a nondeterministic kernel), so "fixed" may not mean that a release fixed it.
FLAKY_NOTE = "triage could not show it again either: flaky?"
OUTPUT_TAIL = 4000

# The verdict lines a script prints when it ran to its end and the bug did not show (templates/checks/*.py.j2).
# A training bug's repro.py (memo.triage.training_repro) says "keras-torch finished forward: not reproduced" or
# "... agrees with the expected gradients arrays: not reproduced" (t51: a training crash fixed on keras-nightly read as
# "could not run")
_NOT_REPRODUCED = re.compile(r"^(?:(?:ran without an exception|ran to the end|outputs match the reference|"
                             r"no unexpected NaN/Inf|shapes match|finished within [0-9.e+]+ s): does not reproduce|"
                             r"[\w.-]+ (?:finished \w+|agrees with the expected \w+ arrays): not reproduced)$",
                             re.MULTILINE)
# A crash's script whose library raised, but not the recorded exception (templates/checks/crash.py.j2).
_OTHER_EXCEPTION = re.compile(r"^raises, but not the same exception.*$", re.MULTILINE)
_GOT = re.compile(r"^got: +(.*)$", re.MULTILINE)
# A dying bug's script whose library raised instead of ending the process.
_RAISED_INSTEAD = re.compile(r"^raised (\S+) at stage (\S+) instead of ending the process.*$", re.MULTILINE)
# The last line of a Python traceback: "ModuleNotFoundError: No module named 'x'".
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failed)\b.*)$", re.MULTILINE)
_NEEDS = re.compile(r"^Needs: pip install (.*?)(?: \(.*)?\.?$", re.MULTILINE)
_FILES = re.compile(r"^Files: (.*?), next to this script\.$", re.MULTILINE)
_HANG_TIMEOUT = re.compile(r"^TIMEOUT_S = ([0-9.e+]+)$", re.MULTILINE)
_DEATH = re.compile(r'^EXPECTED_DEATH = "((?:signal|exit) \d+)"', re.MULTILINE)
_BUG_ID = re.compile(r'^"""Reproduce memo bug (\S+?)\.$', re.MULTILINE)
_REQUIREMENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass
class RecheckResult:
    """One bug's recheck: ``result`` is ``reproduces``, ``fixed`` or ``error``; ``detail`` one line saying what the
    script said (or why it could not run); ``versions`` the distributions the script needs, as installed for the
    interpreter that ran it; ``seconds`` the wall time of the run."""

    result: Result
    detail: str
    versions: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    python: str = ""
    returncode: int | None = None
    output: str = ""  # the tail of what the script printed
    distribution: str = ""  # the blamed library's distribution: the first the script needs (onnxruntime, keras)
    expected: str = ""  # which expected output a numeric bug was judged by (memo.bugdb.expected.prepare)
    remembered: bool = False  # the script's run was answered from the remembered runs (ScriptRun.remembered)
    ran_at: float | None = None  # a remembered run: when it ran (ScriptRun.ran_at)

    @property
    def library_version(self) -> str:
        """The blamed library and its version as the interpreter has it, ``onnxruntime 1.32.0`` ("" if unknown):
        what "fixed in VERSION" names."""
        found = installed_as(self.distribution, self.versions)
        return f"{found[0]} {found[1]}" if found and found[1] != MISSING else ""

    def to_json(self) -> JsonObject:
        return {"result": self.result, "detail": self.detail, "versions": dict(self.versions),
                "seconds": round(self.seconds, 2), "python": self.python, "returncode": self.returncode,
                "library_version": self.library_version, "expected": self.expected}


@dataclass(frozen=True)
class ScriptFacts:
    """What a bug folder's script and ``bug.json`` say about running it."""

    bug_id: str
    kind: str
    library: str
    distributions: tuple[str, ...]
    files: tuple[str, ...]
    hang_limit_s: float | None  # a hang's own limit (TIMEOUT_S): it decides by itself after that
    bug: JsonObject  # what :func:`memo.script_exit.interpret` reads: kind, exception, message


def script_files(text: str) -> tuple[str, ...]:
    """The files a repro script's docstring says it reads next to itself ("Files: model.keras, inputs.npz, ...")."""
    files = _FILES.search(text)
    return tuple(name.strip() for name in files.group(1).split(",")) if files else ()


def read_facts(folder: Path) -> ScriptFacts:
    """The facts of ``folder``'s script; ``bug.json`` when present, else read from the script alone (a folder
    written from the bug database may hold only the script and the files it reads)."""
    text = (folder / REPRO_FILE).read_text(errors="replace")
    bug = read_bug_file(folder)
    found = _BUG_ID.search(text)
    bug_id = str(bug.get("id") or (found.group(1) if found else folder.name))
    kind = str(bug.get("kind") or bug_id.split("-", 1)[0])
    library = str(bug.get("python_library") or bug.get("library") or _library_from_id(bug_id))
    needs = _NEEDS.search(text)
    distributions = tuple(dict.fromkeys(name.group(0) for word in (needs.group(1).split() if needs else [])
                                        if (name := _REQUIREMENT_NAME.match(word))))
    hang = _HANG_TIMEOUT.search(text)
    death = _DEATH.search(text)
    recorded = {"exception": death.group(1)} if death and not bug.get("exception") else {}  # as old records say it
    return ScriptFacts(bug_id, kind, library, distributions,
                       script_files(text), float(hang.group(1)) if hang else None, {**bug, **recorded, "kind": kind})


def _library_from_id(bug_id: str) -> str:
    """``crash-onnxruntime-53e3373378`` -> ``onnxruntime``."""
    parts = bug_id.split("-")
    return "-".join(parts[1:-1]) if len(parts) > 2 else bug_id


def default_python(facts: ScriptFacts) -> str:
    """The interpreter the bug's library needs: a registered library's (MXNet's own environment), a plugin's as
    ``bug.json`` recorded it, else the one running memo."""
    spec = find_spec(facts.library)
    recorded = facts.bug.get("python") if spec is None else spec.python
    return str(recorded) if recorded else sys.executable


@functools.lru_cache(maxsize=64)
def installed_versions(python: str, distributions: tuple[str, ...]) -> dict[str, str]:
    """``{distribution: version}`` as ``python`` sees them (``missing`` where not installed), read from package
    metadata in that interpreter, isolated from memo and the current directory (no library is imported); {} if
    the interpreter cannot say."""
    # a release the interpreter lacks may be there as its development build (keras -> keras-nightly): then the
    # build is named instead (memo.newest.DEV_BUILDS)
    code = ("import importlib.metadata as m, json, sys\nbuilds = json.loads(sys.argv[1])\nout = {}\n"
            "for n in sys.argv[2:]:\n    for d in (n, builds.get(n)):\n        try:\n"
            "            out[d] = m.version(d)\n            break\n        except (m.PackageNotFoundError, ValueError):\n"
            f"            pass\n    else:\n        out[n] = {MISSING!r}\nprint(json.dumps(out))")
    try:
        done = subprocess.run([python, "-I", "-c", code, json.dumps(dict(DEV_BUILDS)), *distributions],
                              capture_output=True, text=True, timeout=60, check=True)
        return dict(json.loads(done.stdout))
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError):
        return {}


def wall_limit_s(facts: ScriptFacts, timeout_s: float) -> float:
    """How long the script may run: ``timeout_s``; a hang's script decides itself after its own TIMEOUT_S (plus
    its alarm's slack), so it gets that and a margin for its imports: killing it earlier decides nothing."""
    if facts.kind != "hang" or facts.hang_limit_s is None:
        return timeout_s
    return max(timeout_s, facts.hang_limit_s + ALARM_SLACK_S + HANG_RERUN_MARGIN_S)


@dataclass(frozen=True)
class ScriptRun:
    """How a script ended: its exit status (None when it was killed at the limit or could not start), the tail of
    its ``output`` (stdout and stderr interleaved; only stdout when its ``stderr`` was asked for apart) and
    whether it ran past the limit."""

    returncode: int | None
    output: str
    timed_out: bool = False
    stderr: str = ""
    remembered: bool = False  # answered from :mod:`memo.bugdb.script_runs`, not run again
    ran_at: float | None = None  # a remembered run: when it ran (epoch seconds)


def run_script(folder: Path, python: str, limit_s: float, script: str = REPRO_FILE, *,
               stderr_apart: bool = False, tail: int | None = OUTPUT_TAIL, remember: bool = False) -> ScriptRun:
    """``folder/script`` in a fresh process of its own session, killed with its children at the limit (or when the
    caller is interrupted). Keras's backend is the script's own choice (``KERAS_BACKEND`` removed from the
    environment). None and the reason as output when the interpreter cannot start. ``stderr_apart``: stderr in its
    own field (the minimal-script check reads stdout's first line and the error output); ``tail``: the characters
    kept of each (None: all). ``remember``: a run of the same files with the same installed packages is answered
    from :mod:`memo.bugdb.script_runs` (triage's checks; ``memo repro`` and the database's recheck always run). The
    one way memo runs a bug's script: triage's check, ``memo repro``, the bug database's recheck, the newest-code
    check and the minimal script's check all come here."""
    runs = remembered_runs() if remember else None
    key = run_key(folder, python, script, f"{stderr_apart}:{tail}") if runs is not None else None
    if runs is not None and key is not None:
        known = runs.get(key)
        if known is not None:
            returncode, output, errors, created = known
            return ScriptRun(returncode, output.replace(FOLDER_MARK, str(folder)),
                             False, errors.replace(FOLDER_MARK, str(folder)), remembered=True, ran_at=created)
    run = _run_fresh(folder, python, limit_s, script, stderr_apart=stderr_apart, tail=tail)
    if runs is not None and key is not None and run.returncode is not None and not run.timed_out:
        runs.put(key, run.returncode, run.output.replace(str(folder), FOLDER_MARK),
                 run.stderr.replace(str(folder), FOLDER_MARK))
    return run


FOLDER_MARK = "\x1dFOLDER\x1d"
"""Where a remembered run's output named the folder it ran in (a scratch folder's name differs each time)."""


def _run_fresh(folder: Path, python: str, limit_s: float, script: str, *, stderr_apart: bool,
               tail: int | None) -> ScriptRun:
    env = {key: value for key, value in os.environ.items() if key != "KERAS_BACKEND"}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        process = subprocess.Popen([python, script], cwd=folder, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE if stderr_apart else subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        return ScriptRun(None, f"cannot start {python}: {exc}")

    def text(data: bytes | None) -> str:
        decoded = (data or b"").decode(errors="replace")
        return decoded[-tail:] if tail else decoded

    try:
        output, errors = process.communicate(timeout=limit_s)
        return ScriptRun(process.returncode, text(output), False, text(errors))
    except subprocess.TimeoutExpired:
        _kill_session(process)
        output, errors = process.communicate()
        return ScriptRun(None, text(output), True, text(errors))
    except BaseException:  # Ctrl-C or an error here: the script, in its own session, would outlive memo
        _kill_session(process)
        process.wait()
        raise


def _kill_session(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= DETAIL_CHARS else line[:DETAIL_CHARS - 3] + "..."


def _last(pattern: re.Pattern[str], output: str, group: int = 0) -> str | None:
    """The last match of ``pattern`` in ``output`` (its ``group``), or None."""
    found = list(pattern.finditer(output))
    return found[-1].group(group) if found else None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def classify(facts: ScriptFacts, returncode: int | None, output: str, *, timed_out: bool,
             limit_s: float) -> tuple[Result, str]:
    """(result, one-line detail) from how the script ended and what it printed."""
    if timed_out:
        if facts.kind == "hang":
            return ERROR, f"killed after {limit_s:g} s before the script reached its own verdict (slow imports?)"
        return ERROR, f"timed out after {limit_s:g} s (not a hang bug: the script did not finish)"
    if interpret(returncode, facts.bug) is True:
        if returncode is not None and returncode < 0:
            return REPRODUCES, f"ended by {_signal_name(-returncode)}, as the bug did"
        if returncode not in (0, None):
            return REPRODUCES, f"exited with code {returncode}, as the bug did"
        return REPRODUCES, _reproduced(output)
    if returncode is not None and returncode < 0:
        death = expected_death(facts.bug)
        recorded = f" (the bug: {death[0]} {death[1]})" if death else ""
        return ERROR, f"ended by {_signal_name(-returncode)}{recorded}"
    if returncode == 1:
        other = _last(_OTHER_EXCEPTION, output)
        if other is not None:
            got = _last(_GOT, output, 1)
            return ERROR, _one_line(f"a different exception: {got}" if got else other)
        raised = _RAISED_INSTEAD.search(output)
        if raised is not None:
            return ERROR, _one_line(f"raises {raised.group(1)} at stage {raised.group(2)} instead of ending the "
                                    "process: changed, not confirmed fixed")
        said = _last(_NOT_REPRODUCED, output)
        if said is not None and not _traceback_after(output, said):
            return FIXED, _one_line(said)
    lines = output.strip().splitlines()
    failure = _last(_EXCEPTION_LINE, output, 1) or (lines[-1] if lines else "no output")
    return ERROR, _one_line(f"could not run ({'not started' if returncode is None else f'exit {returncode}'}): "
                            f"{failure}")


def _reproduced(output: str) -> str:
    """The line that shows the bug: what a crash raised; else the verdict, or when it is a bare "reproduces" the
    line before it (which output differs)."""
    got = _last(_GOT, output, 1)  # a crash's: what was raised, normalized as the signature normalizes it
    if got is not None:
        return _one_line(f"{got}: reproduces")
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for index in range(len(lines) - 1, -1, -1):
        if "reproduces" in lines[index]:
            if lines[index] == "reproduces" and index > 0:
                return _one_line(f"{lines[index - 1]}: reproduces")
            return _one_line(lines[index])
    return "reproduces"


def _never_shown_again(bug: JsonObject) -> bool:
    """Whether triage could not make the bug show again when it re-ran the model (and so left it unreduced)."""
    return Reduction.of(bug.get("reduction")) is Reduction.NOT_AGAIN


def _traceback_after(output: str, verdict: str) -> bool:
    """Whether an uncaught exception followed the verdict line (the script failed after saying it)."""
    return "Traceback (most recent call last)" in output[output.rfind(verdict):]


def recheck_folder(folder: Path, *, python: str | None = None, timeout_s: float = 120.0,
                   also: tuple[str, ...] = (), remember: bool = False) -> RecheckResult:
    """Run ``folder/repro.py`` with ``python`` (None: the interpreter the bug's library needs) and classify the
    outcome: ``reproduces``, ``fixed`` (the script ran to its end and said the bug does not show) or ``error``
    (could not run: missing file or interpreter, import error, a timeout of a non-hang bug, another exception).
    ``timeout_s`` bounds the run; a hang's script gets its own limit (twice memo's per-model one) and a margin.
    ``also``: distributions whose versions are read besides those the script needs (:data:`memo.newest.NEXT_ONLY`).
    ``remember``: see :func:`run_script`."""
    folder = Path(folder)
    started = time.monotonic()
    if not (folder / REPRO_FILE).is_file():
        return RecheckResult(ERROR, f"no {REPRO_FILE} in {folder}", seconds=time.monotonic() - started)
    facts = read_facts(folder)
    interpreter = python or default_python(facts)
    found = Path(interpreter).exists()
    versions = installed_versions(interpreter, (*facts.distributions, *also)) if found else {}

    expected = ""

    def answer(result: Result, detail: str, returncode: int | None = None, output: str = "",
               remembered: bool = False, ran_at: float | None = None) -> RecheckResult:
        detail = _one_line(f"{detail} ({expected})") if expected and expected != AS_RECORDED else detail
        return RecheckResult(result, detail, versions, time.monotonic() - started, interpreter, returncode, output,
                             facts.distributions[0] if facts.distributions else "", expected, remembered, ran_at)

    try:  # a numeric bug whose expected output was too big to keep: the reference reruns it first
        expected = prepare(folder, timeout_s=max(timeout_s, RERUN_TIMEOUT_S))
    except (RuntimeError, OSError, ValueError, subprocess.SubprocessError) as exc:
        return answer(ERROR, _one_line(str(exc)))

    missing = [name for name in facts.files if not (folder / name).is_file()]
    if missing:
        return answer(ERROR, f"missing file{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    if not found:
        return answer(ERROR, f"interpreter {interpreter} not found")
    limit_s = wall_limit_s(facts, timeout_s)
    run = run_script(folder, interpreter, limit_s, remember=remember)
    returncode, output = run.returncode, run.output
    result, detail = classify(facts, returncode, output, timed_out=run.timed_out, limit_s=limit_s)
    absent = [name for name, version in versions.items() if version == MISSING]
    if result == ERROR and absent:
        detail = _one_line(f"{detail} (not installed for {interpreter}: {', '.join(absent)})")
    if result == FIXED and _never_shown_again(facts.bug):
        detail = _one_line(f"{detail} ({FLAKY_NOTE})")
    return answer(result, detail, returncode, output, run.remembered, run.ran_at)


def recheck_all(folders: Iterable[Path], *, python: str | None = None, timeout_s: float = 120.0,
                jobs: int = 2) -> Iterator[tuple[Path, RecheckResult]]:
    """:func:`recheck_folder` on each folder, ``jobs`` scripts at once (each script runs single-threaded, so one
    per core), yielding ``(folder, result)`` as each ends: what a progress bar advances on. Stopping the iteration
    early waits for the scripts already running and starts no other."""
    pending = list(folders)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(recheck_folder, folder, python=python, timeout_s=timeout_s): folder
                   for folder in pending}
        try:
            for future in as_completed(futures):
                yield futures[future], future.result()
        finally:
            for future in futures:
                future.cancel()
