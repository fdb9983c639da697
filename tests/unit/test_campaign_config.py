"""How many pipelines and workers a campaign starts, from the machine's cores and memory."""
from __future__ import annotations

import pytest

from memo.campaign import config


@pytest.mark.parametrize(("cores", "memory_gb", "jobs"), [
    (2, 23.0, 3),    # this machine: cores + 1
    (2, 8.0, 3),     # under one worker set's worth of memory: still one set of three pipelines
    (16, 23.0, 3),   # many cores, memory for one worker set only
    (16, 128.0, 17),  # memory for ten sets: cores + 1
    (None, 23.0, 2),  # cpu_count unknown: treated as one core
])
def test_default_jobs_fits_cores_and_memory(monkeypatch, cores, memory_gb, jobs) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: cores)
    monkeypatch.setattr(config, "total_memory_gb", lambda: memory_gb)
    assert config.default_jobs() == jobs


@pytest.mark.parametrize(("jobs", "memory_gb", "replicas"), [
    (3, 23.0, {"tf2onnx": 2}),  # a shared set on this machine runs two tf2onnx workers
    (3, 12.0, None),            # not with too little memory
    (1, 64.0, None),            # a set serving one pipeline never waits on tf2onnx for another model
])
def test_shared_worker_set_gets_a_second_tf2onnx_where_memory_allows(monkeypatch, jobs, memory_gb, replicas) -> None:
    monkeypatch.setattr(config, "total_memory_gb", lambda: memory_gb)
    assert config.worker_replicas(jobs) == replicas


def test_a_campaign_stored_before_the_disk_budget_resumes_with_the_defaults() -> None:
    old = config.CampaignConfig(name="c").to_json()
    del old["max_disk_bytes"], old["keep_per_signature"]
    restored = config.CampaignConfig.from_json(old)
    assert restored.max_disk_bytes == config.DEFAULT_MAX_DISK == 2 * 2**30
    assert restored.keep_per_signature == config.KEEP_PER_SIGNATURE == 2


def test_the_parent_bound_and_timeout_defaults_are_the_command_line_ones() -> None:
    from memo.cli import build_parser

    args = build_parser().parse_args(["fuzz", "--iterations", "1"])
    defaults = config.CampaignConfig(name="c")
    assert args.max_parent_layers == defaults.max_parent_layers == 20
    assert args.timeout == defaults.timeout_s == build_parser().parse_args(["run", "m.keras"]).timeout == 30.0


def test_a_campaign_stored_before_the_parent_bound_resumes_unbounded() -> None:
    old = config.CampaignConfig(name="c").to_json()
    del old["max_parent_layers"]
    assert config.CampaignConfig.from_json(old).max_parent_layers == 0
