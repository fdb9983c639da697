"""The vocabulary of results, in one place: verdict kinds and stage statuses.

Stdlib only (worker processes of every environment, MXNet's included, import the backends, which import
this). Both enums derive from ``str``, so a member compares equal to its plain-string value
(``VerdictKind.CRASH == "crash"``) and the many places that store or compare plain strings (SQLite
columns, JSON, the report) keep working. Write ``.value`` (or the plain string) when serializing.
"""
from __future__ import annotations

from enum import Enum


class VerdictKind(str, Enum):
    """What the oracle concluded about one backend (or converter, or the shared Keras front end)."""

    CRASH = "crash"  # an exception or a dead worker while other backends ran the model
    HANG = "hang"  # past the per-model timeout
    UNSUPPORTED = "unsupported"  # a library declined a feature on purpose: a known gap, not a bug
    NAN = "nan"  # NaN/Inf where the reference has none, or at other positions
    SHAPE = "shape"  # a different number or shape of outputs
    INCONSISTENCY = "inconsistency"  # finite outputs differ beyond tolerance
    SPECIAL = "special"  # NaN/Inf or numeric differences on a model that injects NaN/Inf on purpose
    INVALID = "invalid"  # memo itself failed (no result at all, a broken artifact): not a library's bug
    # The training check (memo.training, docs/training.md): each pinned to the stage that first differs
    TRAINING_CRASH = "training-crash"  # a backend fails a training stage (gradients, an optimizer step) the reference ran
    TRAINING_NAN = "training-nan"  # NaN/Inf in a training stage's arrays where the reference has none
    TRAINING_INCONSISTENCY = "training-inconsistency"  # a training stage's finite arrays differ beyond tolerance

    def __str__(self) -> str:
        return self.value


class StageStatus(str, Enum):
    """How one stage (start, trace, convert, load, execute) of one backend ended."""

    OK = "ok"
    ERROR = "error"  # the library raised
    UNSUPPORTED = "unsupported"  # the library declined on purpose (NotImplementedError, a declared phrase)
    CRASH = "crash"  # the worker process died (signal or exit code)
    HANG = "hang"  # past the timeout; the worker was killed
    SKIPPED = "skipped"  # did not run (its input artifact is missing, or the library is not installed)

    def __str__(self) -> str:
        return self.value


VERDICT_KINDS: tuple[str, ...] = tuple(kind.value for kind in VerdictKind)
STATUSES: tuple[str, ...] = tuple(status.value for status in StageStatus)
# Statuses of a stage that did not finish and was not merely skipped.
FAILURES: tuple[str, ...] = (StageStatus.ERROR.value, StageStatus.UNSUPPORTED.value, StageStatus.CRASH.value,
                             StageStatus.HANG.value)

# Bug kinds whose signature (for deduplication) comes from a message: an exception, a signal, a timeout,
# a shape description.
MESSAGE_KINDS: frozenset[str] = frozenset({"crash", "hang", "shape"})
# Bug kinds whose evidence is the output values themselves (localized and reduced on the arrays).
NUMERIC_KINDS: frozenset[str] = frozenset({"nan", "inconsistency"})
# Kinds that are bugs of a library under test (what the report counts).
BUG_KINDS: frozenset[str] = MESSAGE_KINDS | NUMERIC_KINDS
# Kinds of the training check (memo.training): findings against a library, triaged apart from BUG_KINDS (their
# signatures, reduction and scripts train the model: memo.triage.training_signature, memo.triage.training_bug).
TRAINING_KINDS: frozenset[str] = frozenset({"training-crash", "training-nan", "training-inconsistency"})
# Kinds that are recorded but are not findings against a library.
NON_FINDINGS: frozenset[str] = frozenset({"invalid", "unsupported", "special"})

# How the message of a stage skipped as a known outcome (stage "known", :mod:`memo.campaign.known`) starts: a
# feature the library declined before, or a failure already filed as a bug (the report tells them apart).
KNOWN_PREFIX = "known unsupported"
KNOWN_FAILURE_PREFIX = "known failure"

__all__ = ["BUG_KINDS", "FAILURES", "KNOWN_FAILURE_PREFIX", "KNOWN_PREFIX", "MESSAGE_KINDS", "NON_FINDINGS",
           "NUMERIC_KINDS", "STATUSES", "StageStatus", "TRAINING_KINDS", "VERDICT_KINDS", "VerdictKind"]
