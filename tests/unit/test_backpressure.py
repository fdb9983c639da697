"""Fuzzing waits for triage: pipelines are paused while distinct bugs wait, one per HOLD_STEP, never the last one,
resumed below a hysteresis gap, and every token is given back at the end of fuzzing."""
from __future__ import annotations

import queue

from memo.campaign.backpressure import HOLD_STEP, RELEASE_GAP, TriageShare, pipelines_to_pause
from memo.campaign.progress import progress_line
from tests.unit.test_progress_plain import SNAPSHOT


def test_one_pipeline_paused_per_step_of_distinct_bugs_never_the_last() -> None:
    assert pipelines_to_pause(None, 0, 3) == 0, "nothing counted yet"
    assert pipelines_to_pause(HOLD_STEP - 1, 0, 3) == 0
    assert pipelines_to_pause(HOLD_STEP, 0, 3) == 1
    assert pipelines_to_pause(2 * HOLD_STEP, 0, 3) == 2
    assert pipelines_to_pause(10 * HOLD_STEP, 0, 3) == 2, "one pipeline always fuzzes"
    assert pipelines_to_pause(10 * HOLD_STEP, 0, 1) == 0, "a single pipeline is never paused"
    assert pipelines_to_pause(None, 2, 3) == 2, "a count not renewed changes nothing"


def test_a_paused_pipeline_resumes_only_below_the_gap() -> None:
    assert pipelines_to_pause(HOLD_STEP - 1, 1, 3) == 1, "just below the mark: still paused"
    assert pipelines_to_pause(HOLD_STEP - RELEASE_GAP, 1, 3) == 0
    assert pipelines_to_pause(2 * HOLD_STEP - RELEASE_GAP + 1, 2, 3) == 2
    assert pipelines_to_pause(2 * HOLD_STEP - RELEASE_GAP, 2, 3) == 1
    assert pipelines_to_pause(0, 2, 3) == 0, "an empty backlog resumes every pipeline at once"


def test_tokens_are_taken_only_when_free_and_all_given_back() -> None:
    tokens: queue.Queue[str] = queue.Queue()
    share = TriageShare(tokens, pipelines=3)
    assert share.follow(3 * HOLD_STEP) == 0, "every pipeline busy: nothing is waited for"
    for token in ("a", "a", "a"):
        tokens.put(token)
    assert share.follow(3 * HOLD_STEP) == 2 and tokens.qsize() == 1
    assert share.follow(2 * HOLD_STEP - RELEASE_GAP + 1) == 2, "within the gap"
    assert share.follow(HOLD_STEP) == 1 and tokens.qsize() == 2
    share.release()
    assert share.held == [] and tokens.qsize() == 3 and share.paused_s > 0


def test_the_progress_line_says_when_fuzzing_waits_for_triage() -> None:
    assert "paused" not in progress_line({**SNAPSHOT, "paused": 0, "pipelines": 3})
    line = progress_line({**SNAPSHOT, "paused": 1, "pipelines": 3})
    assert line.endswith("3 waiting (1 distinct), 1 of 3 pipelines paused for it")
