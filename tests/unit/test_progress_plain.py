"""A campaign without a terminal (cron, CI, ``memo fuzz > log``) is not silent: plain lines with the time plan,
a progress line every so often, each new bug's headline once, memo's own news, and the summary with the report
path and the triage left over."""
from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from memo.campaign.config import CampaignConfig
from memo.campaign.progress import PlainReporter, Reporter, plan_line
from memo.campaign.schedule import TriageSchedule
from memo.campaign.stop import StopFlag
from memo.triage import TriageService
from tests.unit.test_campaign_pipeline import StandIn
from tests.unit.triage_store import make_campaign

REPO = Path(__file__).resolve().parents[2]
STAMP = re.compile(r"^\[\d\d:\d\d:\d\d\] ")
SNAPSHOT = {"elapsed_s": 125.0, "remaining_s": 415.0, "generated": 300, "executed": 90, "executed_per_s": 0.75,
            "coverage": {"types": [50, 85], "pairs": [400, 5090], "params": [700, 1602], "shapes": [90, 510]},
            "findings": {"crash:onnxruntime": 4, "nan:keras-jax": 1},
            "triage": {"reduced": 2, "reproduced": 1, "merged": 0, "waiting": 3, "distinct": 1}}


def _lines(stream: io.StringIO) -> list[str]:
    lines = stream.getvalue().splitlines()
    assert all(STAMP.match(line) for line in lines), "every line has the time of day"
    return [STAMP.sub("", line) for line in lines]


def test_plain_lines_for_a_log(tmp_path: Path) -> None:
    log = io.StringIO()
    reporter = PlainReporter(stream=log, every_s=0.3)
    ends_at = time.time() + 600
    reporter.start({"name": "night", "seeds": ["a", "b"], "backends": ["x"], "search": "mh", "seed": 3,
                    "plan": {"fuzzing_s": 540.0, "final_s": 60.0, "ends_at": ends_at}})
    reporter.progress(SNAPSHOT)  # too soon after the start: no line
    crash = {"mutant_id": 12, "kind": "crash", "backend": "onnxruntime", "stage": "execute",
             "message": "\x1b[1mGot invalid dimensions\x1b[0m for input dense_1\nTraceback...", "signature": "sig-a"}
    reporter.finding(crash)
    reporter.finding({**crash, "mutant_id": 40})  # the same bug again: no second headline
    reporter.finding({**crash, "kind": "unsupported", "signature": None})  # not a bug
    reporter.finding({"mutant_id": 41, "kind": "nan", "backend": "keras-jax", "message": "3 non-finite values",
                      "signature": "sig-b"})
    time.sleep(0.35)
    reporter.progress(SNAPSHOT)
    reporter.progress(SNAPSHOT)  # within the interval again: no line
    reporter.finding({"mutant_id": "-", "kind": "triage", "backend": "memo", "stage": "final",
                      "message": "final triage pass, up to 45 s"})
    reporter.end({**SNAPSHOT, "name": "night", "stopped_because": "budget spent", "report": "reports/night.html",
                  "triage_left": {"bugs": 3, "localizations": 0, "budget_s": 90}})
    lines = _lines(log)
    assert lines[0] == "memo fuzz: campaign night: 2 seeds, 1 backends, search mh, seed 3"
    assert lines[1] == "memo: fuzzing 9 min, final triage up to 1 min, ends by " + time.strftime(
        "%H:%M", time.localtime(ends_at))
    assert lines[2] == ("memo: newest code: none (bugs are not rechecked on development builds; scripts/setup.sh "
                        "builds .venv-next)")
    lines = lines[:2] + lines[3:]
    assert lines[2] == ("memo: new bug 1: crash in onnxruntime (execute) on mutant 12: "
                        "Got invalid dimensions for input dense_1")
    assert lines[3] == "memo: new bug 2: nan in keras-jax on mutant 41: 3 non-finite values"
    assert lines[4] == ("memo: 0:02:05 elapsed, 0:06:55 left; 300 generated, 90 executed (45.0/min); "
                        "coverage types 50/85, pairs 400/5090, params 700/1602; "
                        "2 bugs, 5 findings (crash:onnxruntime 4, nan:keras-jax 1); "
                        "triage: 2 bugs reduced, 1 reproduce standalone, 0 merged, 3 waiting (1 distinct)")
    assert lines[5] == "memo: triage: final triage pass, up to 45 s"
    assert lines[6].startswith("memo: campaign night budget spent: 300 mutants, 90 executed in 0:02:05;")
    assert "; triage left: 3 bugs (`python -m memo report night --triage --budget 90` does it)" in lines[6]
    assert lines[6].endswith("; report: reports/night.html")
    assert len(lines) == 7


def test_the_plan_line_for_an_iteration_budget_and_a_night() -> None:
    assert plan_line({"fuzzing_s": None, "final_s": 1800.0, "ends_at": None}, 500) == (
        "fuzzing until 500 mutants, then final triage up to 30 min")
    tomorrow = time.time() + 20 * 3600
    line = plan_line({"fuzzing_s": 6 * 3600 - 1200.0, "final_s": 1200.0, "ends_at": tomorrow})
    assert line.startswith("fuzzing 5.67 h, final triage up to 20 min, ends by ")
    assert line.endswith(time.strftime("%H:%M", time.localtime(tomorrow)))


def test_the_triage_left_over_is_counted_for_the_summary(tmp_path: Path) -> None:
    store = make_campaign(tmp_path / "campaigns" / "unit")
    try:
        schedule = TriageSchedule(store.directory, store, CampaignConfig(name="unit"), Reporter(), StopFlag())
        left = schedule.left()
    finally:
        store.close()
    assert left is not None and left["bugs"] == 2, "two crash bugs, never triaged"
    assert left["distinct"] == 2, "an invalid-dimensions and an out-of-memory failure: two root guesses"
    assert left["localizations"] == 1, "the NaN finding is not localized yet"
    assert left["budget_s"] > 0


def test_fuzzing_keeps_fewer_models_in_flight_while_bugs_pile_up(tmp_path: Path) -> None:
    from memo.campaign.schedule import BACKLOG_MARK

    store = make_campaign(tmp_path / "campaigns" / "unit")
    try:
        schedule = TriageSchedule(store.directory, store, CampaignConfig(name="unit"), Reporter(), StopFlag())
        assert schedule.fuzz_depth(3) == 6, "nothing counted yet: two per pipeline"
        schedule.waiting = BACKLOG_MARK
        assert schedule.fuzz_depth(3) == 6 and schedule.fuzz_depth(0) == 2
        schedule.waiting = BACKLOG_MARK + 1  # triage's runs queue behind half as many
        assert schedule.fuzz_depth(3) == 3 and schedule.fuzz_depth(1) == 1
    finally:
        store.close()


def test_no_background_pass_runs_past_the_slot(tmp_path: Path) -> None:
    store = make_campaign(tmp_path / "campaigns" / "unit")
    store.close()
    service = TriageService(tmp_path / "campaigns" / "unit", StandIn(), ends_by=time.monotonic() - 1.0).start()
    time.sleep(0.3)
    assert service.stop(5.0), "it was waiting, not triaging"
    assert service.totals.seconds == 0 and service.totals.new == 0


def test_a_campaign_writing_to_a_file_prints_plain_progress_lines(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for name in ("lenet5.json", "lstm_sine_wave.json"):
        shutil.copy(REPO / "seeds" / name, seeds / name)
    log_path = tmp_path / "log"
    began = time.monotonic()
    with log_path.open("w") as log:
        done = subprocess.run([sys.executable, "-m", "memo", "fuzz", "--no-execute", "--minutes", "0.2",
                               "--progress-every", "0.5", "--seeds-dir", str(seeds), "--name", "cron"],
                              cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    took = time.monotonic() - began
    lines = log_path.read_text().splitlines()
    assert done.returncode == 0, lines
    assert took < 12 + 5, f"a 12 s slot took {took:.1f} s"
    assert lines[0].endswith("memo fuzz: campaign cron: loading the seeds, starting the workers")
    assert lines[1].endswith("memo fuzz: campaign cron: 2 seeds, 0 backends, search mh, seed 0")
    assert "memo: fuzzing 6 s, final triage up to 6 s, ends by" in lines[2]
    progress = [line for line in lines if " elapsed, " in line]
    assert len(progress) >= 2, lines
    assert all(STAMP.match(line) for line in lines)
    assert lines[-1].endswith("; report: reports/cron.html") and "memo: campaign cron budget spent:" in lines[-1]


def test_the_final_phase_has_progress_lines_too() -> None:
    log = io.StringIO()
    reporter = PlainReporter(stream=log, every_s=0.0)
    reporter.progress({**SNAPSHOT, "elapsed_s": 540.0, "remaining_s": 0.0, "final": {"in_flight": 2, "left_s": 41.0}})
    reporter.progress({**SNAPSHOT, "elapsed_s": 540.0, "remaining_s": 0.0, "final": {"in_flight": 0, "left_s": 12.0}})
    first, second = _lines(log)
    assert first.startswith("memo: fuzzed 0:09:00; final phase: 2 models in flight, 0:00:41 left; 300 generated")
    assert second.startswith("memo: fuzzed 0:09:00; final phase: 0:00:12 left; 300 generated")


def test_the_summary_line_says_how_many_of_the_bugs_left_are_distinct() -> None:
    from memo.campaign.progress import left_line

    line = left_line("c", {"bugs": 34, "distinct": 10, "localizations": 2, "scripts": 0, "budget_s": 1028})
    assert line.startswith("triage left: 34 bugs (10 of them distinct and fileable; the others likely duplicates or on "
                           "a retired library), 2 localizations (`python -m memo report c --triage --budget 1028` does it)")
    assert left_line("c", {"bugs": 3, "distinct": 3, "budget_s": 90}).startswith("triage left: 3 bugs (`")
