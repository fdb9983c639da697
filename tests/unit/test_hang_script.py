"""A hang's minimal script: the library's call under faulthandler's watchdog, and where the watchdog found it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from memo.filing.folder import BugFolder
from memo.filing.hang import START_S, check_limit_s, hang_limit_s, watchdog_lines
from memo.triage.hang_site import HANG_SYMPTOM, hang_site

# faulthandler's dump when t58's keras-openvino hang met the watchdog (paths shortened as the check keeps them)
DUMP = """keras 3.15.1 openvino 2026.4.1
...
Timeout (0:01:00)!
Thread 0x00007fa4badff6c0 (most recent call first):
  File "/usr/lib/python3.11/concurrent/futures/thread.py", line 81 in _worker
  File "/usr/lib/python3.11/threading.py", line 982 in run

Thread 0x00007fa4c2bc0b80 (most recent call first):
  File "site-packages/openvino/_ov_api.py", line 646 in compile_model
  File "site-packages/keras/src/backend/openvino/trainer.py", line 284 in predict
  File "bug_repro.py", line 29 in <module>
"""


def _folder(tmp_path: Path, kind: str, timeout_s: float) -> BugFolder:
    (tmp_path / "bug.json").write_text(f'{{"id": "x", "kind": "{kind}", "library": "keras-openvino", '
                                       f'"timeout_s": {timeout_s}}}')
    return BugFolder.read(tmp_path)


def test_the_watchdog_names_the_frame_of_the_scripts_own_thread() -> None:
    assert hang_site(DUMP) == "`compile_model` (openvino/_ov_api.py:646)"
    assert hang_site("Traceback ... no watchdog") == ""


def test_a_hang_gets_a_watchdog_of_six_times_its_timeout_and_other_bugs_none(tmp_path: Path) -> None:
    # t64's reader: "hangs" stopped after one minute finished by themselves in 28-105 s
    hang = _folder(tmp_path, "hang", 45.0)
    assert hang_limit_s(hang) == 270 and hang_limit_s(_folder(tmp_path, "hang", 10.0)) == 180
    assert hang_limit_s(_folder(tmp_path, "hang", 300.0)) == 300
    assert check_limit_s(hang, 120.0) == 270 + START_S and check_limit_s(_folder(tmp_path, "crash", 45.0), 120.0) == 120
    assert watchdog_lines(hang)[1].startswith("faulthandler.dump_traceback_later(270, exit=True)")
    assert watchdog_lines(_folder(tmp_path, "crash", 45.0)) == []


def test_a_hang_script_that_finishes_is_slow_not_a_hang(tmp_path: Path) -> None:
    from memo.filing.check import run_candidate
    from memo.filing.script import Candidate

    result = run_candidate(_folder(tmp_path, "hang", 30.0), Candidate("print('keras 3')\nprint('done')\n"))
    assert not result.reproduces and result.reason == "the call finished within the watchdog's 180 s: slow, not a hang"


def test_the_watchdog_stops_a_call_holding_the_gil_and_exits_1(tmp_path: Path) -> None:
    """The property the script relies on: a native call that never returns (here a C-level sleep holding the GIL)."""
    script = "\n".join(["import faulthandler, ctypes",
                        "faulthandler.dump_traceback_later(1, exit=True)",
                        "ctypes.PyDLL(None).sleep(30)"])  # PyDLL keeps the GIL
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20)
    assert done.returncode == 1 and HANG_SYMPTOM in done.stderr


def test_a_hang_stopped_inside_the_library_its_backend_delegates_to_is_that_librarys(tmp_path: Path) -> None:
    """t59's reader: the keras-openvino hang stopped inside OpenVINO's compile_model, filed at keras-openvino."""
    import json

    from memo.triage.hang_site import hang_delegate

    (tmp_path / "minimal").mkdir()
    (tmp_path / "minimal" / "check.json").write_text(json.dumps({"output": DUMP}))
    assert hang_delegate("keras-openvino", tmp_path) == "openvino"
    assert hang_delegate("keras-tensorflow", tmp_path) is None  # a backend delegating to none
    own = DUMP.replace("site-packages/openvino/_ov_api.py", "site-packages/keras/src/ops/core.py")
    (tmp_path / "minimal" / "check.json").write_text(json.dumps({"output": own}))
    assert hang_delegate("keras-openvino", tmp_path) is None  # stopped in Keras's own code
    assert hang_delegate("keras-openvino", tmp_path / "none") is None and hang_delegate("keras-openvino", None) is None
