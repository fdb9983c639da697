"""``memo run SEED --library-coverage --json`` through the real CLI and real libraries: the lines each library's
code reached come back per library, within that library's executable statements."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.mark.integration
def test_run_reports_library_lines_for_tf2onnx_and_keras(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "memo", "run", str(ROOT / "seeds" / "lenet5.json"), "--library-coverage",
               "--json", "--backends", "keras-tensorflow,keras-torch,onnx2torch"]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}  # the totals are counted, then cached
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    figures = report["library_coverage"]
    for library in ("tf2onnx", "keras-tensorflow", "keras-torch", "onnx2torch"):
        assert 0 < figures[library]["covered"] <= figures[library]["total"], library
    assert figures["tf2onnx"]["total"] > 10_000 and figures["keras-tensorflow"]["total"] > 10_000
    assert "library" not in report["result"]["backends"]["tf2onnx"], "the lines themselves stay out of the result"
    assert list((tmp_path / "cache" / "memo" / "library-coverage").glob("tf2onnx-*.json"))
