"""Seed models: find them in ``seeds/``, load them safely, and refuse layers outside the catalogue.

A seed file is a Keras model (``.keras``, ``.h5``, a Keras JSON architecture, or a memo IR document) or
a recipe (see :mod:`memo.seeds.recipes`). With ``safe_mode`` (the default) nothing inside a file runs:
a Lambda layer is refused before Keras reads it, and recipes may only name whitelisted builders.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import memo
from memo.coverage import unknown_layers
from memo.errors import ModelLoadError, UnsupportedLayerError, one_line
from memo.model.files import load_model_file
from memo.model.ir import ModelIR
from memo.model.weights import Weights
from memo.seeds.recipes import cached_recipe, is_recipe, normalize

SEEDS_DIR = Path(memo.__file__).resolve().parent.parent / "seeds"
RECIPE_CACHE = Path(memo.__file__).resolve().parent.parent / ".cache" / "recipes"
SEED_SUFFIXES = (".json", ".keras", ".h5", ".hdf5")


@dataclass
class Seed:
    """A seed model. ``weights`` is ``None`` when the file holds none: they are then generated."""

    name: str
    path: Path
    ir: ModelIR
    weights: Weights | None


def has_seed_name(path: Path) -> bool:
    """Model file suffixes only; names starting with ``_`` or ``.`` (helper scripts, notes) are not seeds."""
    return path.suffix.lower() in SEED_SUFFIXES and not path.name.startswith(("_", "."))


def is_seed_file(path: Path) -> bool:
    return path.is_file() and has_seed_name(path)


def load_seed(path: Path | str, *, safe_mode: bool = True, recipe_cache: Path | None = RECIPE_CACHE) -> Seed:
    """Load one seed file; :class:`ModelLoadError` (one line) if it is unreadable or uses unknown layers.

    Recipes are built through ``recipe_cache`` (``None``: always build).
    """
    path = Path(path)
    ir = recipe_model(path, recipe_cache=recipe_cache)
    if ir is not None:
        return _checked(Seed(path.stem, path, ir, None))
    loaded = load_model_file(path, safe_mode=safe_mode)
    return _checked(Seed(path.stem, path, normalize(loaded.ir), loaded.weights))


def recipe_model(path: Path, *, recipe_cache: Path | None = RECIPE_CACHE) -> ModelIR | None:
    """The model of a seed recipe file (built through ``recipe_cache``; ``None``: always build), or ``None``
    when ``path`` is not a recipe. A recipe is no Keras file: ``load_model_file`` cannot read one.

    :class:`ModelLoadError` for a ``.json`` file that is not valid JSON.
    """
    if path.suffix.lower() != ".json" or not path.is_file():
        return None
    try:
        document = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelLoadError(f"{path}: not valid JSON ({one_line(exc)})") from exc
    return cached_recipe(document, path, recipe_cache) if is_recipe(document) else None


def _checked(seed: Seed) -> Seed:
    check_catalogue(seed.ir, seed.path)
    return seed


def check_catalogue(ir: ModelIR, path: Path) -> None:
    """Refuse a model with layers outside the catalogue, naming them.

    memo can neither count coverage for such a layer nor mutate it, and a backend may not know it either,
    so the seed is refused rather than silently fuzzed in part.
    """
    unknown = unknown_layers(ir)
    if unknown:
        shown = ", ".join(unknown[:8]) + (f" and {len(unknown) - 8} more" if len(unknown) > 8 else "")
        raise UnsupportedLayerError(f"{path}: layer(s) outside memo's catalogue: {shown}; replace them with "
                                    "built-in Keras layers to use this model as a seed")


def discover_seeds(directory: Path = SEEDS_DIR, *, safe_mode: bool = True, problems: list[str] | None = None,
                   recipe_cache: Path | None = RECIPE_CACHE) -> list[Seed]:
    """Every seed in ``directory``, sorted by file name.

    A bad file raises :class:`ModelLoadError`, unless ``problems`` is given: then its one-line error is
    appended there and the file is skipped (a campaign keeps going with the seeds that load).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise ModelLoadError(f"{directory}: seed directory does not exist")
    seeds = []
    for path in sorted(directory.iterdir()):
        if not is_seed_file(path):
            continue
        try:
            seeds.append(load_seed(path, safe_mode=safe_mode, recipe_cache=recipe_cache))
        except ModelLoadError as exc:
            if problems is None:
                raise
            problems.append(str(exc))
    names = [seed.name for seed in seeds]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ModelLoadError(f"{directory}: several seed files share the name(s) {', '.join(duplicates)}")
    return seeds
