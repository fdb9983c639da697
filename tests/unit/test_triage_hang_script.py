"""A hang's script says "reproduces" only when the model is still running after twice the limit memo ran it
under, timed after the imports; a library hung while holding the GIL ends it by its alarm (SIGALRM), which
``memo repro`` reads as "reproduces"; a script killed from outside decides nothing."""
from __future__ import annotations

import signal
from pathlib import Path

import numpy as np

from memo.triage.repro import render_script
from memo.script_exit import ALARM_SLACK_S, interpret
from memo.triage.rerun import hang_limit_s, rerun_script

LIMIT_S = 1.0  # the per-model limit the bug was "found" under: the script waits twice as long


def _hang_bug(tmp_path: Path, body: str) -> tuple[Path, dict[str, object]]:
    """A hang's folder for a plugin whose ``run`` executes ``body``."""
    folder = tmp_path / "bug"
    folder.mkdir(parents=True)
    plugin = folder / "plugin_backend.py"
    plugin.write_text("import time\n\nfrom memo.backends import BackendSpec\n\n\n"
                      f"def run(path, inputs):\n    {body}\n    return list(inputs.values())\n\n\n"
                      "SPEC = BackendSpec(name='sleeper', consumes='keras', load=str, run=run)\n")
    np.savez(folder / "inputs.npz", x=np.zeros((2, 3), np.float32))
    (folder / "model.keras").write_bytes(b"")
    text, _files = render_script(bug_id="hang-1", kind="hang", library="sleeper", faulty="sleeper",
                                 symptom="it hangs", input_names=["x"], reference="", plugin=plugin, timeout_s=LIMIT_S)
    (folder / "repro.py").write_text(text)
    return folder, {"kind": "hang", "timeout_s": LIMIT_S}


def test_a_run_slower_than_the_limit_but_finishing_within_twice_is_not_a_hang(tmp_path: Path) -> None:
    folder, bug = _hang_bug(tmp_path, f"time.sleep({1.5 * LIMIT_S})")
    outcome = rerun_script(folder, bug, timeout_s=LIMIT_S)  # rerun waits for the script's own verdict
    assert outcome.returncode == 1 and outcome.reproduces is False, outcome.output
    assert f"finished within {hang_limit_s(LIMIT_S):g} s: does not reproduce" in outcome.output


def test_a_run_still_going_after_twice_the_limit_reproduces(tmp_path: Path) -> None:
    folder, bug = _hang_bug(tmp_path, "time.sleep(3600)")
    outcome = rerun_script(folder, bug, timeout_s=LIMIT_S)
    assert outcome.returncode == 0 and outcome.reproduces is True, outcome.output
    assert outcome.seconds < hang_limit_s(LIMIT_S) + 60


def test_a_hang_that_holds_the_gil_ends_by_the_alarm_and_reproduces(tmp_path: Path) -> None:
    folder, bug = _hang_bug(tmp_path, "sum(range(10 ** 15))")  # one C call: the GIL is never released
    outcome = rerun_script(folder, bug, timeout_s=LIMIT_S)
    assert outcome.returncode == -signal.SIGALRM and outcome.reproduces is True, outcome.output
    assert outcome.seconds >= int(hang_limit_s(LIMIT_S)) + ALARM_SLACK_S - 1


def test_a_script_killed_from_outside_or_alarmed_for_another_kind_decides_nothing() -> None:
    assert interpret(None, {"kind": "hang"}, timed_out=True) is None
    assert interpret(-signal.SIGALRM, {"kind": "hang"}) is True
    assert interpret(-signal.SIGALRM, {"kind": "crash", "exception": "ValueError"}) is None
