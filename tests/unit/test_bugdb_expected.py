"""A numeric bug's expected output under the per-bug cap: kept as is, compressed, or as a digest that the recheck
restores by rerunning the reference library (Keras on TensorFlow, for real) on the stored model; the recheck says
which expected output it judged by."""
from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from memo.bugdb import BugDatabase, CampaignRef, Sighting, export_bug_files, folder_files
from memo.bugdb.expected import (COMPRESSED, DIGEST, DIGEST_FILE, EXPECTED_FILE, STORED, _RERUN, digest, kept_as,
                                 prepare)
from memo.bugdb.recheck import FIXED, recheck_folder
from memo.model.ir import Layer, ModelIR

CAP = 64 * 1024
# a numeric bug's script as memo writes it, shortened: it reads expected.npz and says its verdict
SCRIPT = '''"""Reproduce memo bug inconsistency-keras-jax-0123456789.

Needs: pip install keras numpy (nothing from memo).
Files: model.keras, expected.npz, inputs.npz, next to this script.
"""
import sys
import numpy as np
with np.load("expected.npz") as data:
    assert data["out_0"].shape == (2, 4)
print("outputs match the reference: does not reproduce")
sys.exit(1)
'''


def _npz(**arrays: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def _folder(path: Path, expected: bytes) -> Path:
    path.mkdir(parents=True)
    (path / "repro.py").write_text(SCRIPT)
    (path / "bug.json").write_text(json.dumps({"id": path.name, "kind": "inconsistency", "library": "keras-jax",
                                               "reference": "keras-tensorflow"}))
    (path / "inputs.npz").write_bytes(_npz(input=np.ones((2, 8), np.float32)))
    (path / EXPECTED_FILE).write_bytes(expected)
    return path


def test_an_expected_output_over_the_cap_is_kept_compressed_else_as_its_digest(tmp_path: Path) -> None:
    zeros = _npz(out_0=np.zeros((200, 200), np.float32))  # 160 KB that compresses to almost nothing
    noise = _npz(out_0=np.random.default_rng(0).standard_normal((200, 200)).astype(np.float32))
    small = _folder(tmp_path / "small", _npz(out_0=np.ones((2, 4), np.float32)))
    files, left_out = folder_files(small, CAP)
    assert kept_as(files) == STORED and not left_out
    files, left_out = folder_files(_folder(tmp_path / "zeros", zeros), CAP)
    assert kept_as(files) == COMPRESSED and not left_out and len(files[EXPECTED_FILE]) < CAP
    with np.load(io.BytesIO(files[EXPECTED_FILE])) as data:  # what the script reads: the same arrays
        assert np.array_equal(data["out_0"], np.zeros((200, 200), np.float32))
    files, left_out = folder_files(_folder(tmp_path / "noise", noise), CAP)
    assert kept_as(files) == DIGEST and left_out == [EXPECTED_FILE] and EXPECTED_FILE not in files
    assert json.loads(files[DIGEST_FILE])["arrays"] == digest(noise)
    assert {"repro.py", "bug.json", "inputs.npz"} <= set(files)  # what the rerun needs came first

    with BugDatabase(tmp_path / "bugs.sqlite") as db:
        campaign = CampaignRef.of("c", str(tmp_path), 1.0)
        for name, folder in (("a", small), ("b", tmp_path / "zeros"), ("c", tmp_path / "noise")):
            db.record(Sighting(campaign=campaign, campaign_bug=name, keys=[f"sig:{name}"], kind="inconsistency",
                               library="keras-jax", stage="execute", headline=name, occurrences=1, versions={},
                               first_seen=1.0, last_seen=1.0, reduced=True,
                               files=lambda folder=folder: folder_files(folder, CAP)))
        assert [bug.expected for bug in db.bugs()] == [STORED, COMPRESSED, DIGEST]
        assert db.get("M-0003").to_json()["expected"] == DIGEST


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real model.keras and inputs, with the reference's own expected output (Keras on TensorFlow)."""
    import os
    import subprocess
    import sys

    from memo.artifact import prepare_artifact

    layers = [Layer("input", "InputLayer", {"batch_shape": [None, 8], "dtype": "float32"}),
              Layer("dense", "Dense", {"units": 4}, ["input"])]
    root = tmp_path_factory.mktemp("model")
    artifact = prepare_artifact(ModelIR(layers, ["dense"], "m"), root / "artifact", seed=1)
    folder = root / "bug"
    folder.mkdir()
    shutil.copy(artifact.keras_path, folder / "model.keras")
    shutil.copy(artifact.inputs_path, folder / "inputs.npz")
    (folder / "ir.json").write_text(ModelIR(layers, ["dense"], "m").dumps())
    env = {**os.environ, "KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "2"}
    subprocess.run([sys.executable, "-c", _RERUN, "input"], cwd=folder, env=env, check=True, timeout=300)
    return folder


def test_a_digest_bugs_recheck_reruns_the_reference_and_says_so(model_folder: Path, tmp_path: Path) -> None:
    recorded = (model_folder / EXPECTED_FILE).read_bytes()
    folder = tmp_path / "bug"
    shutil.copytree(model_folder, folder)
    (folder / "repro.py").write_text(SCRIPT)
    (folder / "bug.json").write_text(json.dumps({"id": "inconsistency-keras-jax-0123456789", "kind": "inconsistency",
                                                 "library": "keras-jax", "reference": "keras-tensorflow"}))
    files, left_out = folder_files(folder, max_bytes=sum(p.stat().st_size for p in folder.iterdir()) - 1)
    assert left_out == [EXPECTED_FILE] and DIGEST_FILE in files
    with BugDatabase(tmp_path / "bugs.sqlite") as db:
        db.record(Sighting(campaign=CampaignRef.of("c", str(tmp_path), 1.0), campaign_bug="b", keys=["sig:b"],
                           kind="inconsistency", library="keras-jax", stage="execute", headline="b", occurrences=1,
                           versions={}, first_seen=1.0, last_seen=1.0, reduced=True, files=lambda: (files, left_out)))
        restored = export_bug_files(db, "M-0001", tmp_path / "restored")
    assert not (restored / EXPECTED_FILE).exists()
    result = recheck_folder(restored, timeout_s=300)
    assert result.result == FIXED, result.detail + result.output
    assert result.expected == "expected output rerun on keras-tensorflow, identical to the recorded digest"
    assert result.detail.endswith(f"({result.expected})") and result.to_json()["expected"] == result.expected
    with np.load(restored / EXPECTED_FILE) as again, np.load(io.BytesIO(recorded)) as first:
        assert np.array_equal(again["out_0"], first["out_0"])
    # a digest the rerun does not match (another release of the reference): the rerun is the truth, and it says so
    (restored / EXPECTED_FILE).unlink()
    summary = json.loads((restored / DIGEST_FILE).read_text())
    summary["arrays"]["out_0"]["sha256"] = "0" * 64
    (restored / DIGEST_FILE).write_text(json.dumps(summary))
    assert prepare(restored).endswith("differs from the recorded digest (another release?), the rerun is the truth")
    # stored and compressed ones are judged as recorded, and say that
    assert prepare(model_folder) == "expected output as recorded (stored compressed)"


def test_a_known_bug_whose_record_left_out_a_file_its_script_reads_is_not_adopted() -> None:
    """t70 adopted crash-keras-export-65a337de54 from the database without its 10-MB inputs.npz (over the record's
    bound): the copied script failed for want of it and the real bug left "ready" as not reproducing."""
    from memo.triage.remember import missing_files

    script = b'"""Reproduce memo bug crash-x.\n\nFiles: model.keras, inputs.npz, expected.npz, next to this script.\n"""\n'
    whole = {"repro.py": script, "model.keras": b"k", "inputs.npz": b"i", "expected.npz": b"e"}
    assert missing_files(whole) == []
    assert missing_files({name: data for name, data in whole.items() if name != "inputs.npz"}) == ["inputs.npz"]
    digest_only = {**{name: data for name, data in whole.items() if name != "expected.npz"}, "expected.digest.json": b"{}"}
    assert missing_files(digest_only) == []  # the reference reruns the expected output from its digest
    assert missing_files({"repro.py": b"print()"}) == []  # a script that names no files
