"""A repro script gives the same answer wherever it is run from: TensorFlow's graph-mode trace errors quote
the script's own file ("in user code: File "bugs/ID//repro.py", line ..."), which the message check masks.

AdaptiveAveragePooling3D traced with a dynamic batch fails with "Negative dimension size" in Keras 3.15 on
TensorFlow 2.21 while it runs eagerly (the bug of test_triage_tensorflow.py)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from triage_fixtures import SEED, chain  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

BACKENDS = ["keras-tensorflow", "onnxruntime"]


def _run(cwd: Path, script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, script], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_a_trace_failure_script_reproduces_from_any_path(tmp_path: Path) -> None:
    from memo.artifact import prepare_artifact
    from memo.backends.executor import DifferentialExecutor
    from memo.oracle import TF_FUNCTION_STAGE, judge
    from memo.triage.materialize import materialize
    from memo.triage.probe import Roles
    from memo.triage.signature import failure_details

    ir = chain("trace", (12, 8, 8, 2), [("AdaptiveAveragePooling3D", {"output_size": [1, 1, 1]}), ("Flatten", {})])
    artifact = prepare_artifact(ir, tmp_path / "artifact", seed=SEED)
    with DifferentialExecutor(backends=BACKENDS, timeout_s=120) as executor:
        result = executor.run(artifact)
    verdict = next(v for v in judge(result) if v.stage == TF_FUNCTION_STAGE)
    details = failure_details(verdict, result)
    assert 'File "' in details.message, "the message quotes a traceback frame, as the scripts at issue did"
    bug = {"id": "crash-trace", "kind": "crash", "library": verdict.backend, "stage": verdict.stage,
           "exception": details.exception, "error_message": details.message, "message": verdict.message}
    folder = tmp_path / "bugs" / bug["id"]
    materialize(folder, artifact.directory, ir, bug, Roles(verdict.backend, verdict.backend, ()), {})
    copied = tmp_path / "elsewhere" / "copied bugs" / bug["id"]
    shutil.copytree(folder, copied)
    runs = {"in its folder": _run(folder, "repro.py"),
            "bugs/ID//repro.py": _run(tmp_path, f"bugs/{bug['id']}//repro.py"),
            "a copy, by a relative path with a space": _run(copied.parents[1], f"copied bugs/{bug['id']}/repro.py"),
            "a copy, by its absolute path": _run(tmp_path, str(copied / "repro.py"))}
    verdicts = {how: (done.returncode, done.stdout.strip().splitlines()[-1]) for how, done in runs.items()}
    assert set(verdicts.values()) == {(0, "reproduces")}, {how: done.stdout[-1500:] for how, done in runs.items()}
