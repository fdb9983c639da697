"""Reduced seeds, cached on disk, with the size and coverage figures ``memo seeds list`` shows.

A cache entry is keyed by the seed file's bytes, memo's version, the reduction algorithm's version and a
fingerprint of the coverage definition (the source of the coverage function's module and of the layer
catalogue): change any of them and the seed is reduced again.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import json
from dataclasses import dataclass
from pathlib import Path

import memo
from memo.json_types import JsonObject
from memo.model.ir import ModelIR
from memo.seed_reduction import CoverageFn, default_coverage_fn, reduce_model
from memo.model.weights import Weights
from memo.seed_reduction.specs import full_specs, weight_shapes
from memo.seeds.loading import Seed

REDUCTION_VERSION = "2"  # 2: value absorption
CACHE_FORMAT = "memo-reduced-seed/1"
DEFAULT_CACHE = Path(memo.__file__).resolve().parent.parent / ".cache" / "seeds"


@dataclass
class ModelFigures:
    layers: int
    weights: int
    types: int
    pairs: int
    params: int


@dataclass
class SeedSummary:
    """What ``memo seeds list`` prints for one seed."""

    name: str
    path: str
    original: ModelFigures
    reduced: ModelFigures
    reduction_seconds: float

    def to_json(self) -> JsonObject:
        return {"name": self.name, "path": self.path, "original": self.original.__dict__,
                "reduced": self.reduced.__dict__, "reduction_seconds": round(self.reduction_seconds, 3)}


@functools.lru_cache(maxsize=None)
def coverage_fingerprint(coverage_fn: CoverageFn) -> str:
    """Hash of the code that defines coverage: the function's module and the layer catalogue.

    Computed once per process: the code that runs is the code that was imported, even if the files change.
    """
    digest = hashlib.sha256(f"{coverage_fn.__module__}.{coverage_fn.__qualname__}".encode())
    files = []
    source = inspect.getsourcefile(coverage_fn)
    if source:
        files.append(Path(source))
    catalogue = Path(memo.__file__).resolve().parent / "layers"
    if catalogue.is_dir():
        files.extend(sorted(catalogue.rglob("*.py")))
    for path in files:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_key(seed: Seed, coverage_fn: CoverageFn) -> str:
    digest = hashlib.sha256()
    for part in (seed.path.read_bytes(), memo.__version__.encode(), REDUCTION_VERSION.encode(),
                 coverage_fingerprint(coverage_fn).encode()):
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


def figures(ir: ModelIR, coverage_fn: CoverageFn) -> ModelFigures:
    """Layers (inputs included), weight count (by a symbolic build) and coverage set sizes of a model."""
    return _figures(ir, full_specs(ir).total_weights(), coverage_fn)  # full_specs raises if Keras rejects ir


def _figures(ir: ModelIR, weights: int, coverage_fn: CoverageFn) -> ModelFigures:
    coverage = coverage_fn(ir)
    return ModelFigures(len(ir), weights, len(coverage.types), len(coverage.pairs), len(coverage.params))


def _entry_path(seed: Seed, cache_dir: Path, key: str) -> Path:
    return cache_dir / f"{seed.name}-{key[:16]}.json"


def _read(path: Path, key: str) -> JsonObject | None:
    try:
        entry = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if entry.get("format") != CACHE_FORMAT or entry.get("key") != key:
        return None
    return entry


def _reduce_entry(seed: Seed, coverage_fn: CoverageFn, key: str) -> JsonObject:
    result = reduce_model(seed.ir, coverage_fn)
    stats = result.stats
    summary = SeedSummary(seed.name, str(seed.path), _figures(seed.ir, stats.original_weights, coverage_fn),
                          _figures(result.ir, stats.reduced_weights, coverage_fn), stats.seconds)
    return {"format": CACHE_FORMAT, "key": key, "ir": result.ir.to_json(), "removed": result.removed,
            "stats": result.stats.to_json(), "summary": summary.to_json()}


def cached_entry(seed: Seed, cache_dir: Path | None = DEFAULT_CACHE,
                 coverage_fn: CoverageFn | None = None) -> JsonObject:
    """The cache entry of ``seed`` (reduced IR, removed layers, stats, summary); reduces on a miss."""
    coverage_fn = coverage_fn or default_coverage_fn()
    key = cache_key(seed, coverage_fn)
    if cache_dir is not None:
        path = _entry_path(seed, Path(cache_dir), key)
        entry = _read(path, key)
        if entry is not None:
            return entry
    entry = _reduce_entry(seed, coverage_fn, key)
    if cache_dir is not None:
        store_entry(seed, Path(cache_dir), entry)
    return entry


def store_entry(seed: Seed, cache_dir: Path, entry: JsonObject) -> Path:
    """Write ``entry`` as the cache entry of ``seed`` (replacing older entries of the same name)."""
    path = _entry_path(seed, cache_dir, entry["key"])
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f"{seed.name}-*.json"):
        stale.unlink(missing_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(entry, sort_keys=True))
    tmp.replace(path)
    return path


def reduced_seed(seed: Seed, cache_dir: Path | None = DEFAULT_CACHE, coverage_fn: CoverageFn | None = None) -> ModelIR:
    """The reduced model of ``seed`` (same coverage, fewer layers), from the cache when it is there."""
    return ModelIR.from_json(cached_entry(seed, cache_dir, coverage_fn)["ir"])


def matching_weights(weights: Weights | None, ir: ModelIR) -> Weights | None:
    """The part of a seed's stored weights that still fits ``ir`` (its reduced model).

    Reduction removes layers and may narrow a convolution (a width repair); those layers get generated
    weights instead (``save_keras_artifact`` fills in whatever is missing).
    """
    if weights is None:
        return None
    shapes = weight_shapes(ir)
    return {name: arrays for name, arrays in weights.items()
            if name in shapes and [tuple(a.shape) for a in arrays] == shapes[name]}


def seed_summary(seed: Seed, cache_dir: Path | None = DEFAULT_CACHE,
                 coverage_fn: CoverageFn | None = None) -> SeedSummary:
    data = cached_entry(seed, cache_dir, coverage_fn)["summary"]
    return SeedSummary(data["name"], data["path"], ModelFigures(**data["original"]), ModelFigures(**data["reduced"]),
                       data["reduction_seconds"])
