"""Where the bug database lives: ``--bugs-db PATH``, else ``$MEMO_BUGS_DB``, else the user's data folder
(``$XDG_DATA_HOME/memo/bugs.sqlite``, else ``~/.local/share/memo/bugs.sqlite``)."""
from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "MEMO_BUGS_DB"
FILE_NAME = "bugs.sqlite"
OFF = ("none", "off")  # ``--bugs-db none``: a campaign that records nothing
OFF_PATH = Path(OFF[0])  # what a command passes on for "none asked for", so that no recorded database is used either


def default_path() -> Path:
    """The user's bug database (the XDG data folder)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memo" / FILE_NAME


def resolve(flag: str | Path | None, *, fallback: str | Path | None = None, use_default: bool = True) -> Path | None:
    """The database a command uses: the flag, the environment, ``fallback`` (what a campaign recorded), the
    default (unless ``use_default`` is false). ``none``/``off`` anywhere in that order means none."""
    for value in (flag, os.environ.get(ENV_VAR), fallback):
        if value is not None and str(value).strip():
            return None if str(value).strip().lower() in OFF else Path(value).expanduser()
    return default_path() if use_default else None


def switched_off(flag: str | Path | None) -> bool:
    """Whether the user asked for no database: ``--bugs-db none``, else ``$MEMO_BUGS_DB=none`` (which then also
    overrides the database a campaign recorded)."""
    for value in (flag, os.environ.get(ENV_VAR)):
        if value is not None and str(value).strip():
            return str(value).strip().lower() in OFF
    return False


def is_off(path: str | Path | None) -> bool:
    """Whether ``path`` is :data:`OFF_PATH` (or another spelling of none)."""
    return path is not None and str(path).strip().lower() in OFF
