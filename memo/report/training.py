"""The report's training section beyond its findings: which optimizer configurations of the catalogue
(:mod:`memo.backends.training_optimizers`) the campaign's training checks stepped, and what each found."""
from __future__ import annotations

from collections import Counter

from memo.backends.training_optimizers import CATALOGUE, OPTIMIZER_STAGE, constructor_text, recorded_optimizer
from memo.json_types import JsonObject
from memo.kinds import TRAINING_KINDS
from memo.store import CampaignStore


def training_optimizers(store: CampaignStore) -> list[JsonObject]:
    """Per catalogue entry the campaign's checks stepped (each execution's ``training`` record: the pipeline keeps
    it), most checked first: the models checked with it, those the check left out, and the findings at stage
    ``optimizer`` (the verdicts' ``training.optimizer``)."""
    checked: Counter[str] = Counter()
    left_out: Counter[str] = Counter()
    for row in store.executions():
        record = row.result.get("training") if isinstance(row.result, dict) else None
        name = recorded_optimizer(record)
        if name is None:
            continue
        checked[name] += 1
        left_out[name] += bool(isinstance(record, dict) and record.get("left_out"))
    found: Counter[str] = Counter(
        recorded_optimizer(stored.verdict.extra.get("training")) or ""
        for stored in store.verdicts(tuple(sorted(TRAINING_KINDS))) if stored.verdict.stage == OPTIMIZER_STAGE)
    return [{"optimizer": name, "constructor": constructor_text(name) if name in CATALOGUE else "",
             "models": count, "left_out": left_out[name], "findings": found[name]}
            for name, count in sorted(checked.items(), key=lambda item: (-item[1], item[0]))]
