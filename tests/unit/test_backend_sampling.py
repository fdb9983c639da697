"""A sampled engine (torch.compile's inductor) runs on a deterministic share of models, chosen by name."""
from __future__ import annotations

from pathlib import Path

from memo.artifact import Artifact
from memo.backends.executor import Member
from memo.backends.supervisor import WorkerCommand


def _artifact(name: str) -> Artifact:
    folder = Path("/nowhere") / name
    return Artifact(folder, folder / "model.keras", folder / "inputs.npz", folder / "model.ir.json")


def test_one_model_in_n_is_chosen_the_same_way_every_time() -> None:
    member = Member("torch-inductor", "onnx", WorkerCommand(group="torch-compile", args=[]), sample_every=10)
    names = [f"m{index:05d}" for index in range(2000)]
    chosen = [name for name in names if not member.sampled_out(_artifact(name))]
    assert 150 <= len(chosen) <= 250  # one in ten, give or take
    assert chosen == [name for name in names if not member.sampled_out(_artifact(name))]
    every = Member("onnxruntime", "onnx", WorkerCommand(group="onnxruntime", args=[]))
    assert not any(every.sampled_out(_artifact(name)) for name in names)
