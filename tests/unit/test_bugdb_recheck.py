"""Rechecking a bug folder: memo's real scripts (rendered for a small plugin backend whose ``run`` is the bug)
run in a fresh process and are classified reproduces / fixed / error; "fixed" only when the script ran to its end
and said so. A recorded ONNX Runtime bug (tests/corpus/bugs/) reproduces on memo's ONNX Runtime and is fixed in a
later release: found on ONNX Runtime 1.31.1, fixed in 1.32.0 (memo's own since the newest releases became its
default); the 1.31 half runs where scripts/make_recheck_env.sh made that older release's environment."""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from memo.bugdb.recheck import (ERROR, FIXED, FLAKY_NOTE, REPRODUCES, classify, read_facts, recheck_all,
                                recheck_folder)
from memo.bug_files import Reduction
from memo.triage.repro import render_script

CORPUS_BUG = Path(__file__).resolve().parents[1] / "corpus" / "bugs" / "crash-onnxruntime-53e3373378"
# The environment with ONNX Runtime 1.31.1, where that bug was found (scripts/make_recheck_env.sh creates it).
OTHER_ENV_PYTHON = Path(os.environ.get("MEMO_RECHECK_OTHER_PYTHON", "/tmp/venv-ort131/bin/python"))
LIMIT_S = 1.0  # a hang's per-model limit: its script waits twice as long


def _bug(tmp_path: Path, kind: str, body: str, *, expected: np.ndarray | None = None,
         exception: str = "ValueError", message: str = "boom", prelude: str = "",
         bug_json: dict[str, object] | None = None) -> Path:
    """A bug folder for a plugin backend whose ``run`` executes ``body`` then returns its inputs."""
    folder = tmp_path / f"{kind}-plug-0123456789"
    folder.mkdir(parents=True)
    plugin = folder / "plugin_backend.py"
    plugin.write_text(f"import os\nimport signal\nimport time\n{prelude}\nfrom memo.backends import BackendSpec\n\n\n"
                      f"def run(path, inputs):\n    {body}\n    return list(inputs.values())\n\n\n"
                      "SPEC = BackendSpec(name='plug', consumes='keras', load=str, run=run)\n")
    np.savez(folder / "inputs.npz", x=np.ones((2, 3), np.float32))
    (folder / "model.keras").write_bytes(b"")
    if expected is not None:
        np.savez(folder / "expected.npz", out_0=expected)
    text, _files = render_script(bug_id=folder.name, kind=kind, library="plug", faulty="plug", symptom="it breaks",
                                 input_names=["x"], reference="keras-tensorflow", plugin=plugin, timeout_s=LIMIT_S,
                                 expected_exception=exception, expected_message=message, expected_stage="execute")
    (folder / "repro.py").write_text(text)
    (folder / "bug.json").write_text(json.dumps({"id": folder.name, "kind": kind, "library": "plug",
                                                 "exception": exception, "error_message": message,
                                                 **(bug_json or {})}))
    return folder


def test_the_recorded_exception_again_reproduces(tmp_path: Path) -> None:
    checked = recheck_folder(_bug(tmp_path, "crash", "raise ValueError('boom')"))
    assert checked.result == REPRODUCES, checked.output
    assert checked.detail == "ValueError at stage execute: boom: reproduces"
    assert checked.versions["numpy"] == np.__version__ and checked.python == sys.executable
    assert 0 < checked.seconds < 60


def test_running_to_the_end_without_the_exception_is_fixed(tmp_path: Path) -> None:
    checked = recheck_folder(_bug(tmp_path, "crash", "pass"))
    assert (checked.result, checked.returncode) == (FIXED, 1)
    assert checked.detail == "ran without an exception: does not reproduce"


def test_another_exception_is_an_error_not_a_fix(tmp_path: Path) -> None:
    checked = recheck_folder(_bug(tmp_path, "crash", "raise KeyError('other')"))
    assert checked.result == ERROR and checked.returncode == 1
    assert checked.detail.startswith("a different exception: KeyError at stage execute"), checked.detail


def test_a_missing_module_is_an_error_naming_it(tmp_path: Path) -> None:
    checked = recheck_folder(_bug(tmp_path, "crash", "pass", prelude="import memo_no_such_library"))
    assert checked.result == ERROR and checked.returncode == 1
    assert "ModuleNotFoundError: No module named 'memo_no_such_library'" in checked.detail


def test_a_library_the_interpreter_lacks_is_named(tmp_path: Path) -> None:
    folder = _bug(tmp_path, "crash", "pass", prelude="import memo_no_such_library")
    script = folder / "repro.py"
    script.write_text(script.read_text().replace("pip install numpy", "pip install memo-no-such-library numpy"))
    checked = recheck_folder(folder)
    assert checked.versions == {"memo-no-such-library": "missing", "numpy": np.__version__}
    assert checked.detail.endswith(f"(not installed for {sys.executable}: memo-no-such-library)"), checked.detail
    assert checked.library_version == ""


SAME, OTHER = np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)


@pytest.mark.parametrize(("kind", "expected", "result", "detail"), [
    ("inconsistency", SAME, FIXED, "outputs match the reference: does not reproduce"),
    ("inconsistency", OTHER, REPRODUCES, "output 0: 6 of 6 elements differ from keras-tensorflow (max |diff| 1,"),
    ("nan", SAME, FIXED, "no unexpected NaN/Inf: does not reproduce"),
    ("nan", np.full((2, 3), np.inf, np.float32), REPRODUCES, "output 0: non-finite values at 6 positions differ"),
    ("shape", SAME, FIXED, "shapes match: does not reproduce"),
    ("shape", np.ones((2, 4), np.float32), REPRODUCES, "reproduces: output 0 has shape (2, 3)"),
])
def test_a_numeric_bug_compares_with_the_expected_outputs(tmp_path: Path, kind: str, expected: np.ndarray,
                                                          result: str, detail: str) -> None:
    checked = recheck_folder(_bug(tmp_path, kind, "pass", expected=expected))
    assert checked.result == result, checked.output
    assert checked.detail.startswith(detail), checked.detail


def test_a_numeric_bug_whose_library_now_raises_is_an_error(tmp_path: Path) -> None:
    """Python exits 1 on an uncaught exception too: the script never reached its verdict."""
    checked = recheck_folder(_bug(tmp_path, "nan", "raise RuntimeError('no kernel')", expected=np.ones((2, 3))))
    assert (checked.result, checked.returncode) == (ERROR, 1)
    assert checked.detail == "could not run (exit 1): RuntimeError: no kernel"


def test_a_missing_file_is_an_error_without_running(tmp_path: Path) -> None:
    folder = _bug(tmp_path, "shape", "pass", expected=np.ones((2, 3)))
    (folder / "expected.npz").unlink()
    checked = recheck_folder(folder)
    assert (checked.result, checked.detail, checked.returncode) == (ERROR, "missing file: expected.npz", None)
    assert recheck_folder(tmp_path / "nowhere").detail == f"no repro.py in {tmp_path / 'nowhere'}"


def test_a_missing_interpreter_is_an_error(tmp_path: Path) -> None:
    checked = recheck_folder(_bug(tmp_path, "crash", "pass"), python=str(tmp_path / "no-python"))
    assert (checked.result, checked.detail) == (ERROR, f"interpreter {tmp_path / 'no-python'} not found")


def test_an_interpreter_that_cannot_start_is_an_error(tmp_path: Path) -> None:
    checked = recheck_folder(_bug(tmp_path, "crash", "pass"), python=str(tmp_path))  # a folder, not a program
    assert (checked.result, checked.versions, checked.returncode) == (ERROR, {}, None)
    assert checked.detail.startswith(f"could not run (not started): cannot start {tmp_path}: [Errno 13]"), \
        checked.detail


def test_recheck_all_answers_every_folder_two_at_once(tmp_path: Path) -> None:
    folders = [_bug(tmp_path / "a", "crash", "raise ValueError('boom')"), _bug(tmp_path / "b", "crash", "pass"),
               tmp_path / "nowhere"]
    answered = {folder: result.result for folder, result in recheck_all(folders, jobs=2)}
    assert answered == {folders[0]: REPRODUCES, folders[1]: FIXED, folders[2]: ERROR}


def test_a_crash_that_outlives_its_time_limit_is_an_error(tmp_path: Path) -> None:
    checked = recheck_folder(_bug(tmp_path, "crash", "time.sleep(60)"), timeout_s=3)
    assert (checked.result, checked.returncode) == (ERROR, None)
    assert checked.detail == "timed out after 3 s (not a hang bug: the script did not finish)"
    assert checked.seconds < 30


def test_a_hang_gets_its_own_limit_and_decides_itself(tmp_path: Path) -> None:
    still = recheck_folder(_bug(tmp_path / "a", "hang", "time.sleep(3600)"), timeout_s=1)
    assert (still.result, still.detail) == (REPRODUCES, "still running after 2 s: reproduces"), still.output
    done = recheck_folder(_bug(tmp_path / "b", "hang", "time.sleep(0.1)"), timeout_s=1)
    assert (done.result, done.detail) == (FIXED, "finished within 2 s: does not reproduce"), done.output


def test_a_bug_that_killed_the_worker_reproduces_by_the_same_signal_only(tmp_path: Path) -> None:
    died = {"exception": "WorkerDied", "error_message": "worker process killed by signal 6 (SIGABRT)"}
    aborts = _bug(tmp_path / "a", "crash", "os.abort()", exception="WorkerDied", message=died["error_message"],
                  bug_json=died)
    same = recheck_folder(aborts)
    assert (same.result, same.detail) == (REPRODUCES, "ended by SIGABRT, as the bug did"), same.output
    (aborts / "bug.json").unlink()  # the script alone says how the worker died
    alone = recheck_folder(aborts)
    assert (alone.result, alone.detail) == (REPRODUCES, "ended by SIGABRT, as the bug did"), alone.output
    other = recheck_folder(_bug(tmp_path / "b", "crash", "os.kill(os.getpid(), signal.SIGTERM)",
                                exception="WorkerDied", message=died["error_message"], bug_json=died))
    assert (other.result, other.detail) == (ERROR, "ended by SIGTERM (the bug: signal 6)")
    raises = recheck_folder(_bug(tmp_path / "c", "crash", "raise ValueError('checked now')", exception="WorkerDied",
                                 message=died["error_message"], bug_json=died))
    assert raises.result == ERROR, raises.output
    assert raises.detail.startswith("raises ValueError at stage execute instead of ending the process")
    survives = recheck_folder(_bug(tmp_path / "d", "crash", "pass", exception="WorkerDied",
                                   message=died["error_message"], bug_json=died))
    assert (survives.result, survives.detail) == (FIXED, "ran to the end: does not reproduce"), survives.output


def test_facts_come_from_the_script_when_the_folder_has_no_bug_json(tmp_path: Path) -> None:
    folder = _bug(tmp_path, "hang", "pass")
    (folder / "bug.json").unlink()
    facts = read_facts(folder)
    assert (facts.bug_id, facts.kind, facts.library) == (folder.name, "hang", "plug")
    assert facts.files == ("model.keras", "plugin_backend.py", "inputs.npz") and facts.hang_limit_s == 2.0
    assert facts.distributions == ("numpy",)


def test_a_verdict_followed_by_a_traceback_is_not_a_fix() -> None:
    facts = read_facts(CORPUS_BUG)
    output = "ran without an exception: does not reproduce\nTraceback (most recent call last):\nOSError: closing\n"
    assert classify(facts, 1, output, timed_out=False, limit_s=10) == (ERROR,
                                                                      "could not run (exit 1): OSError: closing")


def test_a_training_repro_that_finishes_its_stage_or_agrees_is_fixed() -> None:
    facts = read_facts(CORPUS_BUG)
    for said in ("keras-torch finished forward: not reproduced",
                 "keras-jax agrees with the expected gradients arrays: not reproduced"):
        assert classify(facts, 1, f"keras 3.16.0\n{said}\n", timed_out=False, limit_s=10) == (FIXED, said)
    changed = "keras-jax failed (TypeError), the bug is a training-nan: not reproduced"  # another failure: not fixed
    assert classify(facts, 1, f"{changed}\n", timed_out=False, limit_s=10)[0] == ERROR


def _corpus_copy(tmp_path: Path) -> Path:
    return Path(shutil.copytree(CORPUS_BUG, tmp_path / CORPUS_BUG.name))


@pytest.mark.skipif(not OTHER_ENV_PYTHON.exists(), reason=f"no {OTHER_ENV_PYTHON} (scripts/make_recheck_env.sh)")
def test_a_recorded_onnxruntime_bug_reproduces_on_the_release_it_was_found_on(tmp_path: Path) -> None:
    checked = recheck_folder(_corpus_copy(tmp_path), python=str(OTHER_ENV_PYTHON))
    assert checked.result == REPRODUCES, checked.output
    assert checked.detail.startswith("Fail at stage load: [ONNXRuntimeError] : N : FAIL : Exception during "
                                     "initialization: PATH:N onnxruntime::PoolAttributes::PoolAttributes")
    assert checked.library_version == "onnxruntime 1.31.1"


def test_the_same_bug_is_fixed_on_memos_onnxruntime_1_32(tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    if not ort.__version__.startswith("1.32."):
        pytest.skip(f"the bug is fixed in onnxruntime 1.32 (installed: {ort.__version__})")
    checked = recheck_folder(_corpus_copy(tmp_path))
    assert checked.versions["onnxruntime"] == ort.__version__
    assert checked.library_version == f"onnxruntime {ort.__version__}"
    assert (checked.result, checked.detail) == (FIXED, "ran without an exception: does not reproduce"), checked.output


def test_a_fix_of_a_bug_triage_could_not_show_again_says_it_may_be_flaky(tmp_path: Path) -> None:
    folder = _bug(tmp_path, "crash", "pass", bug_json={"reduction": {"status": Reduction.NOT_AGAIN}})
    checked = recheck_folder(folder)
    assert (checked.result, checked.detail) == (FIXED, f"ran without an exception: does not reproduce ({FLAKY_NOTE})")


def test_the_one_runner_keeps_stderr_apart_when_asked(tmp_path: Path) -> None:
    """The minimal-script check reads stdout's first line and the error output: run_script keeps them apart."""
    from memo.bugdb.recheck import run_script

    (tmp_path / "s.py").write_text("import sys\nprint('warning first', file=sys.stderr, flush=True)\n"
                                   "print('versions line')\nraise ValueError('boom')\n")
    run = run_script(tmp_path, sys.executable, 60, "s.py", stderr_apart=True, tail=None)
    assert (run.returncode, run.timed_out) == (1, False)
    assert run.output.splitlines()[0] == "versions line" and "ValueError: boom" in run.stderr
    merged = run_script(tmp_path, sys.executable, 60, "s.py")
    assert "warning first" in merged.output and "ValueError: boom" in merged.output and merged.stderr == ""
    late = run_script(tmp_path, "/nonexistent/python", 60, "s.py")
    assert late.returncode is None and not late.timed_out and late.output.startswith("cannot start")
