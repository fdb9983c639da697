"""Fields of a backend's registered declaration, read leniently (a plugin, or a name from another memo)."""
from __future__ import annotations

from typing import Any

from memo.backends import load_spec


def spec_field(backend: str, name: str, default: Any) -> Any:
    """A field of ``backend``'s registered spec (``default`` for a plugin, a converter without it, or a name
    from another version of memo)."""
    try:
        return getattr(load_spec(backend), name, default)
    except (KeyError, ImportError):
        return default
