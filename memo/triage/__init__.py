"""Bug triage: deduplicate findings into bugs, localize numeric bugs, reduce every bug to a minimal model,
merge bugs whose reduced forms coincide, and write a standalone reproduction script for each.

The face of the package; the work lives in :mod:`memo.triage.passes` (one pass), :mod:`.session` (its
executor and clock), :mod:`.checker` (the reduction predicate), :mod:`.background` (triage while a
campaign runs), :mod:`.signature` / :mod:`.dedup` (what makes findings one bug: a finding is signed once, when it
is recorded, :func:`sign`), :mod:`.rekey` (a bug's root-cause key and merge) and :mod:`.blame` (whom an entry is
filed against, decided once); its tables live in :mod:`memo.store.triage` (``store.triage``).
"""
from __future__ import annotations

from memo.triage.background import TriageService, start_background_triage
from memo.triage.checker import Checker
from memo.triage.dedup import sign, sign_findings
from memo.triage.finding import Finding, load_finding
from memo.triage.passes import MIN_STEP_S, PER_BUG_S, triage_campaign
from memo.triage.pending import pending_bugs, pending_localizations, seconds_for, seconds_wanted
from memo.triage.session import WORK_DIR, TriageSummary
from memo.triage.signature import signature, signature_parts

__all__ = ["Checker", "Finding", "MIN_STEP_S", "PER_BUG_S", "TriageService", "TriageSummary", "WORK_DIR",
           "load_finding", "pending_bugs", "pending_localizations", "seconds_for", "seconds_wanted", "sign",
           "sign_findings", "signature", "signature_parts", "start_background_triage", "triage_campaign"]
