"""Each backend's outputs against the reference's: the figures of every output and the flags they raise."""
from __future__ import annotations

from typing import Mapping

import numpy as np

from memo.kinds import VerdictKind
from memo.oracle.criterion import (Thresholds, d_mad_from_deltas, finite_mad, mismatch, nan_problem, output_scale,
                                   shape_problem, tolerances)
from memo.oracle.verdict import Comparison, OutputFigures


def compare(outputs: dict[str, list[np.ndarray]], reference: str, thresholds: Thresholds,
            per_backend: Mapping[str, Thresholds] | None = None) -> dict[str, Comparison]:
    """Every backend's outputs against the reference's, output by output, with D_MAD against the closest peer.
    ``per_backend``: the thresholds of backends whose results were computed in a relaxed precision (GPU, tf32)."""
    ref = outputs[reference]
    own = dict(per_backend or {})
    comparisons: dict[str, Comparison] = {}
    per: dict[str, list[OutputFigures]] = {}
    for name, outs in outputs.items():
        if name == reference:
            continue
        comparisons[name] = Comparison(backend=name, shape_problem=shape_problem(outs, ref))
        if comparisons[name].shape_problem:
            continue
        rows = []
        mine = own.get(name, thresholds)
        for index, (y, o) in enumerate(zip(outs, ref)):
            count, max_abs, atol = mismatch(y, o, mine)
            rows.append(OutputFigures(output=index, nan_problem=nan_problem(y, o), mismatched=count,
                                      max_abs_diff=max_abs, mad=finite_mad(y, o), elements=int(np.size(y)),
                                      scale=output_scale(o), tolerance=atol,
                                      mad_floor=tolerances(y, o, mine)[2]))
        per[name] = rows
    for name, rows in per.items():
        for row in rows:
            peers = {peer: per[peer][row.output].mad for peer in per if peer != name}
            if peers:
                closest = min(peers, key=lambda peer: peers[peer])
                row.dmad = d_mad_from_deltas(row.mad, peers[closest])
                row.dmad_peer, row.peer_mad = closest, peers[closest]
            row.flags = [kind for kind, _ in row_flags(row, own.get(name, thresholds))]
        comparison = comparisons[name]
        comparison.per_output = rows
        if not rows:
            continue
        decisive = next((row for row in rows if row.flags), None) or max(
            rows, key=lambda row: row.max_abs_diff / max(row.tolerance, 1e-300))
        comparison.nan_problem = next((f"output {row.output}: {row.nan_problem}" if len(rows) > 1
                                       else row.nan_problem for row in rows if row.nan_problem), None)
        comparison.output = decisive.output
        comparison.max_abs_diff = decisive.max_abs_diff
        comparison.mad = decisive.mad
        comparison.dmad = decisive.dmad
        comparison.dmad_peer = decisive.dmad_peer
        comparison.peer_mad = decisive.peer_mad
        comparison.mismatched = decisive.mismatched
        comparison.elements = decisive.elements
        comparison.scale = decisive.scale
        comparison.tolerance = decisive.tolerance
        comparison.mad_floor = decisive.mad_floor
    return comparisons


def row_flags(row: OutputFigures, thresholds: Thresholds) -> list[tuple[str, str]]:
    """(kind, message) of each flag one output raises: ``nan``, then ``inconsistency``."""
    flags = []
    if row.nan_problem:
        flags.append((VerdictKind.NAN.value, row.nan_problem))
    reasons = []
    if row.mismatched:
        reasons.append(f"{row.mismatched}/{row.elements} elements outside atol={thresholds.atol:g}*scale "
                       f"rtol={thresholds.rtol:g} (scale {row.scale:.3g}, max |diff| {row.max_abs_diff:.3g})")
    if (row.dmad is not None and row.dmad > thresholds.dmad and row.mad > row.mad_floor
            and row.mad > (row.peer_mad or 0.0)):
        reasons.append(f"D_MAD {row.dmad:.3f} against {row.dmad_peer} (MAD {row.mad:.3g}, "
                       f"floor {row.mad_floor:.3g})")
    if row.mismatched:  # D_MAD supports a flag, never makes one: a two-library repro must confirm it
        flags.append((VerdictKind.INCONSISTENCY.value, "; ".join(reasons)))
    return flags


def numeric_flags(comparison: Comparison, thresholds: Thresholds,
                  output_names: list[str]) -> list[tuple[str, str, int | None]]:
    """(kind, message, output index) per kind, for the first output flagged with that kind."""
    if comparison.shape_problem:
        return [(VerdictKind.SHAPE.value, comparison.shape_problem, None)]
    flags: dict[str, tuple[str, str, int | None]] = {}
    rows = comparison.per_output or []
    for row in rows:
        for kind, message in row_flags(row, thresholds):
            if kind not in flags:
                index = row.output
                if len(rows) > 1:
                    name = output_names[index] if index < len(output_names) else str(index)
                    message = f"output {index} ({name}): {message}"
                flags[kind] = (kind, message, index)
    return list(flags.values())
