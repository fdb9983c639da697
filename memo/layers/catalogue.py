"""The catalogue: every layer API memo generates and counts, collected from the family modules.

Adding a family means adding its module name to FAMILY_MODULES; adding a layer API means adding one entry
to its family's ``build()`` (see docs/layers.md).
"""
from __future__ import annotations

import importlib
from functools import lru_cache
from types import MappingProxyType
from typing import Mapping

from memo.layers.spec import LayerSpec

FAMILY_MODULES = ("conv", "pooling", "recurrent", "normalization", "regularization", "reshaping", "merging",
                  "activation", "core", "attention", "preprocessing")


def _collect() -> dict[str, LayerSpec]:
    specs: dict[str, LayerSpec] = {}
    modules = [importlib.import_module(f"memo.layers.families.{name}") for name in FAMILY_MODULES]
    for module in modules:
        _register(specs, module.build())
    for module in modules:  # wrappers (TimeDistributed, ...) draw their inner layer from the plain entries
        if hasattr(module, "build_wrappers"):
            _register(specs, module.build_wrappers(dict(specs)))
    return specs


def _register(specs: dict[str, LayerSpec], new: list[LayerSpec]) -> None:
    for spec in new:
        if spec.name in specs:
            raise ValueError(f"layer API {spec.name} is declared twice")
        specs[spec.name] = spec


CATALOGUE: Mapping[str, LayerSpec] = MappingProxyType(_collect())


def get_spec(class_name: str) -> LayerSpec | None:
    return CATALOGUE.get(class_name)


def family_members(family: str) -> frozenset[str]:
    return frozenset(name for name, spec in CATALOGUE.items() if spec.family == family)


@lru_cache(maxsize=None)
def _pairs() -> frozenset[tuple[str, str]]:
    produces = {name: spec.all_output_ranks() for name, spec in CATALOGUE.items()}
    return frozenset((a, b) for a in CATALOGUE for b, spec_b in CATALOGUE.items()
                     if produces[a] & spec_b.input_ranks)


def possible_pairs() -> frozenset[tuple[str, str]]:
    """Every ordered (A, B) where some output rank of A is an input rank B accepts: the pair denominator."""
    return _pairs()


def pair_possible(a: str, b: str) -> bool:
    return (a, b) in _pairs()


RESHAPING: frozenset[str] = family_members("reshaping")
MERGING: frozenset[str] = family_members("merging")
