"""The typed rows the bug database takes and returns (no query returns a plain dict)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from memo.json_types import JsonObject

ID_PREFIX = "M-"
NEW, FILED, FIXED, WONTFIX, DUPLICATE = "new", "filed", "fixed", "wontfix", "duplicate"
# reproduces on the release memo tests, not on the development build named (memo.triage.newest): nothing to file
FIXED_UPSTREAM = "fixed-upstream"
# status -> what its detail holds (``memo bugs mark ID STATUS DETAIL``)
STATUSES: dict[str, str] = {NEW: "", FILED: "URL", FIXED: "VERSION", WONTFIX: "REASON", DUPLICATE: "ID",
                            FIXED_UPSTREAM: "BUILD"}
COLLAPSED_STATUSES = (FILED, WONTFIX, DUPLICATE, FIXED_UPSTREAM)  # a report folds these away: nothing left to do
OPEN_STATUSES = (NEW, FILED)
RECHECK_RESULTS = ("reproduces", "fixed", "error")
REDUCER_KEY = "reducer"  # a reduction document's (bug.json's "reduction") version of the reducer that made it


def reducer_of(reduction: object) -> int | None:
    """The version of the reducer a ``reduction`` document records (None: none recorded, an older memo's)."""
    version = reduction.get(REDUCER_KEY) if isinstance(reduction, dict) else None
    return version if isinstance(version, int) and not isinstance(version, bool) else None


def public_id(num: int) -> str:
    """``M-0007`` for row 7: stable for the life of the database file."""
    return f"{ID_PREFIX}{num:04d}"


STATUS_WORDS = {"new": "not filed yet"}  # a database status as the report and `memo bugs list` word it

@dataclass(frozen=True)
class CampaignRef:
    """A campaign as the database knows it: ``key`` is its name and start time, so two campaigns of one name
    (two machines' ``nightly``) stay two."""

    key: str
    name: str
    directory: str
    started: float | None

    @classmethod
    def of(cls, name: str, directory: str, started: float | None) -> "CampaignRef":
        return cls(key=f"{name}@{int(started or 0)}", name=name, directory=directory, started=started)


@dataclass
class Sighting:
    """One campaign's bug, to record: ``keys`` find the database bug it is (``sig:...``, ``rc:...``);
    ``files`` (called only when the database needs them) gives the folder's files; ``reduced`` says whether
    they hold a finished reduction, ``reducer`` by which reducer."""

    campaign: CampaignRef
    campaign_bug: str
    keys: list[str]
    kind: str
    library: str
    stage: str
    headline: str
    occurrences: int
    versions: Mapping[str, str]
    first_seen: float
    last_seen: float
    reduced: bool = False
    reducer: int | None = None  # the version of the reducer that made a reduced model (memo.triage.bug_reduction)
    files: Callable[[], tuple[dict[str, bytes], list[str]]] | None = None


@dataclass(frozen=True)
class SeenIn:
    """Where a database bug was seen: one campaign bug."""

    campaign: str  # the campaign's key
    campaign_name: str
    campaign_bug: str
    occurrences: int
    versions: JsonObject
    first_seen: float
    last_seen: float

    def to_json(self) -> JsonObject:
        return {"campaign": self.campaign_name, "campaign_key": self.campaign, "campaign_bug": self.campaign_bug,
                "occurrences": self.occurrences, "versions": self.versions, "first_seen": self.first_seen,
                "last_seen": self.last_seen}


@dataclass(frozen=True)
class StatusChange:
    status: str
    detail: str
    note: str
    changed: float

    def to_json(self) -> JsonObject:
        return {"status": self.status, "detail": self.detail, "note": self.note, "changed": self.changed}


@dataclass(frozen=True)
class RecheckRecord:
    result: str
    detail: str
    versions: JsonObject
    seconds: float
    checked: float

    def to_json(self) -> JsonObject:
        return {"result": self.result, "detail": self.detail, "versions": self.versions, "seconds": self.seconds,
                "checked": self.checked}


@dataclass(frozen=True)
class KnownBug:
    """One database bug with where it was seen (oldest sighting first)."""

    num: int
    kind: str
    library: str
    stage: str
    headline: str
    origin: str  # the campaign bug id it was first recorded as
    status: str
    detail: str
    regression: bool
    reduced: bool
    files_left_out: list[str]
    created: float
    updated: float
    seen: list[SeenIn] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    expected: str = ""  # how its expected output is kept: stored, compressed, digest ("" none; memo.bugdb.expected)

    @property
    def id(self) -> str:
        return public_id(self.num)

    @property
    def link(self) -> str:
        """The tracker URL of a filed bug, the bug a duplicate points to; else empty."""
        return self.detail if self.status in (FILED, DUPLICATE) else ""

    @property
    def first(self) -> SeenIn | None:
        return min(self.seen, key=lambda s: (s.first_seen, s.campaign)) if self.seen else None

    @property
    def last(self) -> SeenIn | None:
        return max(self.seen, key=lambda s: (s.last_seen, s.campaign)) if self.seen else None

    @property
    def campaigns(self) -> list[str]:
        """Campaign names, oldest first, each once."""
        ordered = sorted(self.seen, key=lambda s: (s.first_seen, s.campaign))
        return list(dict.fromkeys(s.campaign_name for s in ordered))

    def status_words(self) -> str:
        """The status as a reader takes it: ``new`` in the database is a bug seen before but not filed yet (a report
        saying "known M-0010: new" beside "4 new, 56 known" read as a contradiction, s50's reader)."""
        return STATUS_WORDS.get(self.status, self.status)

    def status_text(self) -> str:
        """``filed https://...``, ``fixed 1.32 (regression)``, ``not filed yet``."""
        text = f"{self.status_words()} {self.detail}".strip()
        return text + (" (regression: reproduces again)" if self.regression else "")

    def to_json(self) -> JsonObject:
        first, last = self.first, self.last
        return {"id": self.id, "kind": self.kind, "library": self.library, "stage": self.stage,
                "headline": self.headline, "origin": self.origin, "status": self.status, "detail": self.detail,
                "link": self.link, "regression": self.regression, "reduced": self.reduced,
                "files_left_out": self.files_left_out, "expected": self.expected, "campaigns": self.campaigns,
                "first_campaign": first.campaign_name if first else None,
                "first_seen": first.first_seen if first else None,
                "last_campaign": last.campaign_name if last else None,
                "last_seen": last.last_seen if last else None,
                "occurrences": sum(s.occurrences for s in self.seen),
                "seen": [s.to_json() for s in self.seen]}
