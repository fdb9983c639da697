"""The campaign end to end, through the real CLI in real processes: determinism, resume, signals, kill -9.

Generation-only runs (``--no-execute``) are cheap and exercise search, mutation, coverage and the store;
one run executes on the real keras-tensorflow and onnxruntime workers.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SMALL_SEEDS = ("lenet5.json", "lstm_sine_wave.json")


@pytest.fixture(scope="module")
def seeds_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("seeds")
    for name in SMALL_SEEDS:
        shutil.copy(REPO / "seeds" / name, directory / name)
    return directory


def _fuzz(workdir: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memo", "fuzz", *args], cwd=workdir, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(REPO)})


def _mutants(campaign: Path) -> list[tuple[int, str, str, str | None]]:
    with sqlite3.connect(campaign / "campaign.sqlite") as db:
        return list(db.execute("SELECT iteration, slot, operator, ir FROM mutants WHERE iteration >= 0 "
                               "ORDER BY iteration"))


def test_same_seed_same_mutants_and_resume_continues_the_sequence(tmp_path: Path, seeds_dir: Path) -> None:
    common = ["--no-execute", "--quiet", "--seeds-dir", str(seeds_dir), "--seed", "11"]
    whole = _fuzz(tmp_path, *common, "--iterations", "24", "--out", "whole")
    assert whole.returncode == 0, whole.stderr
    again = _fuzz(tmp_path, *common, "--iterations", "24", "--out", "again")
    assert again.returncode == 0, again.stderr
    assert _mutants(tmp_path / "whole") == _mutants(tmp_path / "again")
    assert sum(1 for *_, ir in _mutants(tmp_path / "whole") if ir) >= 12, "most mutants are valid"

    first = _fuzz(tmp_path, *common, "--iterations", "10", "--out", "parts")
    assert first.returncode == 0, first.stderr
    rest = _fuzz(tmp_path, "--resume", str(tmp_path / "parts"), "--iterations", "24", "--quiet")
    assert rest.returncode == 0, rest.stderr
    assert _mutants(tmp_path / "parts") == _mutants(tmp_path / "whole")

    other = _fuzz(tmp_path, *common[:-1], "12", "--iterations", "24", "--out", "other")
    assert other.returncode == 0
    assert _mutants(tmp_path / "other") != _mutants(tmp_path / "whole")


def test_json_progress_and_sigterm_stop_cleanly(tmp_path: Path, seeds_dir: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "memo", "fuzz", "--no-execute", "--json", "--minutes", "10",
                             "--seeds-dir", str(seeds_dir), "--out", "run"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    events: list[dict] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        events.append(json.loads(line))
        if events[-1]["event"] == "progress" and events[-1]["generated"] >= 5:
            break
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - sent < 20, "a SIGTERM stops the campaign within seconds"
    assert proc.returncode == 0, err
    events += [json.loads(line) for line in out.splitlines()]
    assert events[0]["event"] == "start" and events[-1]["event"] == "end"
    assert events[-1]["stopped_because"] == "terminated"
    snapshot = next(e for e in events if e["event"] == "progress")
    assert set(snapshot["coverage"]) >= {"types", "pairs", "params"}
    covered, total = snapshot["coverage"]["pairs"]
    assert 0 < covered < total
    stored = len(_mutants(tmp_path / "run"))
    assert stored == events[-1]["generated"]


def test_kill_9_loses_no_stored_mutant_and_resume_executes_the_rest(tmp_path: Path, seeds_dir: Path) -> None:
    args = [sys.executable, "-m", "memo", "fuzz", "--json", "--minutes", "10", "--seeds-dir", str(seeds_dir),
            "--backends", "keras-tensorflow,onnxruntime", "--seed", "3", "--out", "killed"]
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout is not None
    for line in proc.stdout:
        event = json.loads(line)
        if event["event"] == "progress" and event["executed"] >= 3 and event["generated"] >= 4:
            break
    proc.kill()  # SIGKILL: no clean-up at all
    proc.wait(timeout=30)
    before = _mutants(tmp_path / "killed")
    assert len(before) >= 4
    resumed = _fuzz(tmp_path, "--resume", str(tmp_path / "killed"), "--iterations", str(len(before) + 3), "--quiet",
                    timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    after = _mutants(tmp_path / "killed")
    assert after[: len(before)] == before, "every mutant stored before the kill is still there, unchanged"
    assert len(after) == len(before) + 3
    with sqlite3.connect(tmp_path / "killed" / "campaign.sqlite") as db:
        unexecuted = db.execute("SELECT COUNT(*) FROM mutants WHERE (diverse = 1 OR operator = 'seed') AND ir IS NOT "
                                "NULL AND id NOT IN (SELECT mutant_id FROM executions)").fetchone()[0]
        statuses = [json.loads(r[0]) for r in db.execute("SELECT result FROM executions")]
    assert unexecuted == 0, "mutants whose execution the kill interrupted are executed on resume"
    assert statuses and all("backends" in s for s in statuses), "no execution failed inside memo itself"
    reference_ok = [s for s in statuses
                    if all(stage["status"] == "ok" for stage in s["backends"]["keras-tensorflow"]["stages"])]
    assert len(reference_ok) >= len(statuses) // 2, "the reference library really ran most models"


def test_bad_flags_are_one_line_errors(tmp_path: Path, seeds_dir: Path) -> None:
    cases = [
        (["--iterations", "5", "--search", "genetic", "--no-execute"], "unknown search strategy"),
        (["--iterations", "5", "--ops", "NLA,Bogus", "--no-execute"], "unknown mutation operator"),
        (["--no-execute"], "give a budget"),
        (["--iterations", "5", "--seeds-dir", str(tmp_path / "none"), "--no-execute"], "seed"),
        (["--resume", str(tmp_path / "ghost"), "--iterations", "3"], "no campaign"),
        (["--iterations", "5", "--max-disk", "banana", "--no-execute"], "--max-disk 'banana'"),
        (["--iterations", "5", "--directed", "1.5", "--no-execute"], "--directed must be a share between 0 and 1"),
    ]
    for args, message in cases:
        if "--seeds-dir" not in args and "--resume" not in args:
            args = [*args, "--seeds-dir", str(seeds_dir)]
        result = _fuzz(tmp_path, *args, "--quiet")
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (args, result.stderr)


def test_two_pipelines_execute_every_mutant_and_keep_the_sequence(tmp_path: Path, seeds_dir: Path) -> None:
    # 24 iterations with --jobs 2: outcomes feed generation from iteration 16 on (the lag), in a fixed order
    common = ["--quiet", "--seeds-dir", str(seeds_dir), "--seed", "5", "--iterations", "24", "--jobs", "2",
              "--execute-all", "--backends", "keras-tensorflow"]
    for name in ("parallel", "again"):
        done = _fuzz(tmp_path, *common, "--out", name, timeout=600)
        assert done.returncode == 0, done.stderr
    assert _mutants(tmp_path / "parallel") == _mutants(tmp_path / "again"), \
        "the same seed and --jobs give the same campaign, whatever order the executions finish in"
    with sqlite3.connect(tmp_path / "parallel" / "campaign.sqlite") as db:
        valid = db.execute("SELECT COUNT(*) FROM mutants WHERE valid = 1").fetchone()[0]
        executed = db.execute("SELECT COUNT(*) FROM executions").fetchone()[0]
        parents = {row[0] for row in db.execute("SELECT parent FROM mutants WHERE iteration >= 0")}
    assert executed == valid, "with --execute-all every valid mutant (and every seed) runs"
    assert any(not parent.startswith("seed:") for parent in parents), "executed mutants became parents"


def test_parent_size_bound_keeps_large_mutants_out_of_the_pool(tmp_path: Path, seeds_dir: Path) -> None:
    common = ["--no-execute", "--quiet", "--seeds-dir", str(seeds_dir), "--seed", "3", "--iterations", "30"]
    for bound in ("0", "9"):
        done = _fuzz(tmp_path, *common, "--max-parent-layers", bound, "--out", f"bound{bound}")
        assert done.returncode == 0, done.stderr
    layers: dict[str, int] = {}
    parents: dict[str, list[str]] = {}
    for bound in ("0", "9"):
        with sqlite3.connect(tmp_path / f"bound{bound}" / "campaign.sqlite") as db:
            rows = db.execute("SELECT iteration, parent, ir FROM mutants WHERE iteration >= 0").fetchall()
        parents[bound] = [parent for _, parent, _ in rows]
        layers.update({f"{bound}/m{i}": len(json.loads(ir)["layers"]) for i, _, ir in rows if ir})
    unbounded = [p for p in parents["0"] if not p.startswith("seed:")]
    assert unbounded and max(layers[f"0/{p}"] for p in unbounded) > 9, "without a bound, lineages grow"
    bounded = [p for p in parents["9"] if not p.startswith("seed:")]
    assert all(layers[f"9/{p}"] <= 9 for p in bounded), "a mutant above the bound is never a parent"


# ---------------------------------------------------------------------------- disk
ABORT_PLUGIN = REPO / "tests" / "plugins" / "abort_on_poison.py"
DISK_ARGS = ("--quiet", "--seed", "5", "--jobs", "1", "--execute-all", "--backends", "keras-tensorflow")


def _stop_line(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.startswith("memo: ")]
    assert lines, stderr
    return lines[-1]


def _consistent(campaign: Path) -> tuple[int, int]:
    """(mutants stored, executions stored); the saved state is the last stored mutant's."""
    with sqlite3.connect(campaign / "campaign.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        iteration = db.execute("SELECT iteration FROM state").fetchone()[0]
        last = db.execute("SELECT MAX(iteration) FROM mutants").fetchone()[0]
        assert iteration == last, "state and mutants were written together"
        return (db.execute("SELECT COUNT(*) FROM mutants WHERE iteration >= 0").fetchone()[0],
                db.execute("SELECT COUNT(*) FROM executions").fetchone()[0])


def test_disk_budget_stops_cleanly_clean_frees_and_resume_continues(tmp_path: Path, seeds_dir: Path) -> None:
    # every artifact path says "poison", so the plugin aborts on every model: every model has a finding
    args = [*DISK_ARGS, "--seeds-dir", str(seeds_dir), "--backend-plugin", str(ABORT_PLUGIN), "--name", "poison"]
    stopped = _fuzz(tmp_path, *args, "--iterations", "8", "--max-disk", "1K", timeout=600)
    assert stopped.returncode == 3, stopped.stderr
    line = _stop_line(stopped.stderr)
    assert "disk budget of 1.0 KB reached" in line and "stopped cleanly" in line, line
    assert "memo clean poison frees" in line and line.endswith("memo fuzz --resume poison"), line
    assert (tmp_path / "reports" / "poison.html").exists(), "the report is still written"
    campaign = tmp_path / "campaigns" / "poison"
    generated, executed = _consistent(campaign)
    assert generated < 8 and executed >= 1

    dry = subprocess.run([sys.executable, "-m", "memo", "clean", "poison", "--dry-run"], cwd=tmp_path,
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert dry.returncode == 0 and "would free" in dry.stdout, dry.stderr
    assert (tmp_path / "mutants" / "poison").is_dir()
    clean = subprocess.run([sys.executable, "-m", "memo", "clean", "poison"], cwd=tmp_path,
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert clean.returncode == 0 and clean.stdout.startswith("memo clean: freed "), clean.stderr
    assert not (tmp_path / "mutants" / "poison").exists() and (campaign / "campaign.sqlite").exists()

    resumed = _fuzz(tmp_path, "--resume", "poison", "--iterations", "8", "--max-disk", "0", "--quiet", timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert _consistent(campaign)[0] == 8
    with sqlite3.connect(campaign / "campaign.sqlite") as db:
        unexecuted = db.execute("SELECT COUNT(*) FROM mutants WHERE valid = 1 AND id NOT IN "
                                "(SELECT mutant_id FROM executions)").fetchone()[0]
        kept = db.execute("SELECT COUNT(*) FROM executions WHERE artifact_dir IS NOT NULL").fetchone()[0]
        aborts = db.execute("SELECT COUNT(*) FROM verdicts WHERE backend = 'abort-on-poison' AND kind = 'crash'"
                            ).fetchone()[0]
        silent = db.execute("SELECT COUNT(*) FROM executions WHERE mutant_id NOT IN "
                            "(SELECT mutant_id FROM verdicts)").fetchone()[0]
    assert unexecuted == 0, "what the stop left unexecuted ran on resume"
    # every model shows the plugin's bug, unless tf2onnx (whose file the plugin reads) failed first
    assert silent == 0 and aborts > 2
    assert kept <= 2, "one bug: only its first two occurrences keep an artifact"
    assert _mutants(campaign) == _mutants_of_uninterrupted_run(tmp_path, [*args, "--max-disk", "0"], "8"), \
        "deleting artifacts never changes generation"


def test_a_full_disk_stops_cleanly_and_resume_continues_once_space_is_freed(tmp_path: Path,
                                                                            seeds_dir: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(small)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"mounting a 4 MB tmpfs needs root (CAP_SYS_ADMIN): {mounted.stderr.strip()}")
    try:
        filler = small / "filler"
        with open(filler, "wb") as out:  # leave about 400 KB: the database fits, the artifacts do not
            out.write(b"\0" * (shutil.disk_usage(small).free - 400 * 1024))
        args = [*DISK_ARGS, "--seeds-dir", str(seeds_dir), "--name", "full", "--iterations", "6"]
        stopped = _fuzz(small, *args, timeout=600)
        assert stopped.returncode == 3, stopped.stderr
        line = _stop_line(stopped.stderr)
        assert line.startswith("memo: disk full: stopped cleanly; free space (memo clean full frees "), line
        assert line.endswith("and run memo fuzz --resume full"), line
        assert "Traceback" not in stopped.stderr
        campaign = small / "campaigns" / "full"
        generated, executed = _consistent(campaign)
        assert executed <= generated

        filler.unlink()
        resumed = _fuzz(small, "--resume", "full", "--quiet", timeout=600)
        assert resumed.returncode == 0, resumed.stderr
        assert _consistent(campaign)[0] == 6
        with sqlite3.connect(campaign / "campaign.sqlite") as db:
            unexecuted = db.execute("SELECT COUNT(*) FROM mutants WHERE valid = 1 AND id NOT IN "
                                    "(SELECT mutant_id FROM executions)").fetchone()[0]
        assert unexecuted == 0
        assert _mutants(campaign) == _mutants_of_uninterrupted_run(tmp_path, args, "6")
    finally:
        subprocess.run(["umount", "-l", str(small)], capture_output=True)


def _mutants_of_uninterrupted_run(workdir: Path, args: list[str], iterations: str) -> list:
    """The mutants of the same campaign run in one go, in a folder of its own (``args`` without a budget)."""
    dropped = {i + k for i, a in enumerate(args) if a in ("--name", "--iterations") for k in (0, 1)}
    args = [a for i, a in enumerate(args) if i not in dropped]
    done = _fuzz(workdir, *args, "--iterations", iterations, "--out", f"whole-{iterations}", timeout=600)
    assert done.returncode == 0, done.stderr
    return _mutants(workdir / f"whole-{iterations}")
