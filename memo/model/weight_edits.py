"""Recorded weight edits: ``ModelIR.weight_edits`` applied to a model's generated weights, by edit kind.

An operator that edits weights (LEMON's weight shuffling and neuron effect block, :mod:`memo.mutation.lemon`)
records ``{"layer": name, "kind": kind, ...}`` in the IR instead of touching arrays; whoever writes the
artifact applies the edits here. The appliers live with the weights, not with the operators, so that every
process that writes an artifact (the campaign, triage, a repro) can apply a stored IR's edits without
importing the mutation operators.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from memo.model.weights import Weights

# Applies one recorded edit ({"layer": name, "kind": kind, ...}) in place to one layer's weight arrays.
WeightEdit = Callable[[list[np.ndarray], dict[str, Any]], None]

WEIGHT_EDITS: dict[str, WeightEdit] = {}


def register_weight_edit(kind: str) -> Callable[[WeightEdit], WeightEdit]:
    """Decorator: the function applying weight edits of ``kind`` (``ModelIR.weight_edits[i]["kind"]``)."""

    def add(function: WeightEdit) -> WeightEdit:
        WEIGHT_EDITS[kind] = function
        return function

    return add


def apply_weight_edits(weights: Weights, edits: list[dict[str, Any]]) -> None:
    """Apply ``ModelIR.weight_edits`` in place; an edit of a layer without weights is ignored."""
    for edit in edits:
        arrays = weights.get(edit["layer"])
        if arrays:
            WEIGHT_EDITS[edit["kind"]](arrays, edit)


@register_weight_edit("shuffle")
def shuffle_units(arrays: list[np.ndarray], edit: dict[str, Any]) -> None:
    """LEMON's weight shuffling: permute the incoming weights of some output units of the kernel."""
    kernel = arrays[0]
    rng = np.random.default_rng(edit["seed"])
    flat = kernel.reshape(-1, kernel.shape[-1])
    for unit in edit["units"]:
        flat[:, unit % flat.shape[1]] = rng.permutation(flat[:, unit % flat.shape[1]])
    arrays[0] = flat.reshape(kernel.shape)


@register_weight_edit("block")
def block_units(arrays: list[np.ndarray], edit: dict[str, Any]) -> None:
    """LEMON's neuron effect block: zero the incoming weights (and bias) of some output units."""
    for index, array in enumerate(arrays[:2]):
        if array.ndim >= 1 and (index == 0 or array.shape[-1] == arrays[0].shape[-1]):
            for unit in edit["units"]:
                array[..., unit % array.shape[-1]] = 0
