"""The report's training section beyond its findings: which models the campaign's training checks ran on and the
coverage they exercised, and which optimizer configurations of the catalogue
(:mod:`memo.backends.training_optimizers`) they stepped, and what each found."""
from __future__ import annotations

from collections import Counter

from memo.backends.training_remat import recorded_remat
from memo.backends.training_optimizers import CATALOGUE, OPTIMIZER_STAGE, constructor_text, recorded_optimizer
from memo.json_types import JsonObject
from memo.coverage import Coverage, model_coverage
from memo.kinds import TRAINING_KINDS
from memo.model.ir import ModelIR
from memo.store import CampaignStore


def training_coverage(store: CampaignStore) -> JsonObject:
    """The models the campaign's training check ran on (``chosen``: by the hash share or by novelty,
    :mod:`memo.training.selection`; ``left_out``: the check declined them; ``over_budget``: chosen, but the check's
    CPU budget had no room, with the seconds it measured) and the layer types, pairs and parameter values those
    models hold (inert items included); {} when no model was checked."""
    checked: list[int] = []
    chosen: Counter[str] = Counter()
    remat: Counter[str] = Counter()  # models checked with their layers under keras.RematScope, by mode
    left_out = 0
    for row in store.executions():
        record = row.result.get("training") if isinstance(row.result, dict) else None
        if not isinstance(record, dict):
            continue
        checked.append(row.mutant_id)
        chosen[str(record.get("chosen") or "share")] += 1
        left_out += bool(record.get("left_out"))
        remat[recorded_remat(record) or ""] += 1
    if not checked:
        return {}
    covered = Coverage()
    for text in store.mutant_irs(checked).values():
        if text:  # every item: what is inert at inference (a regularizer, Dropout) is not inert in training
            covered = covered | model_coverage(ModelIR.loads(text))
    budget = store.get_meta("training_budget") or {}
    return {"models": len(checked), "left_out": left_out, "by_share": chosen["share"],
            "by_novelty": chosen["novelty"], "types": len(covered.types), "pairs": len(covered.pairs),
            "params": len(covered.params), "over_budget": int(budget.get("over_budget", 0)),
            "budget": budget.get("budget"), "check_s": budget.get("check_s"), "inference_s": budget.get("inference_s"),
            "swept": swept_sets(store), **_remat_counts(remat)}


def _remat_counts(remat: Counter[str]) -> JsonObject:
    """The models checked under each ``keras.RematScope`` mode, in words ({} where none was)."""
    said = ", ".join(f'{count} under RematScope(mode="{mode}")' for mode, count in sorted(remat.items()) if mode)
    return {"remat": said} if said else {}


def swept_sets(store: CampaignStore) -> list[JsonObject]:
    """The optimizer sweeps the campaign ran (:mod:`memo.training.sweep`): per weight-dtype set, the entries stepped
    and the findings."""
    return [{"dtypes": ", ".join(swept.get("dtypes") or []), "entries": swept.get("entries", 0),
             "verdicts": swept.get("verdicts", 0)}
            for row in store.executions()
            if isinstance(row.result, dict) and isinstance(record := row.result.get("optimizer_sweep"), dict)
            for swept in record.get("sets") or [] if isinstance(swept, dict)]


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
