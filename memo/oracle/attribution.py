"""Attribution by agreement (reference included): who a numeric flag is filed against.

Backends are grouped by :func:`memo.oracle.criterion.agree`.

* converter: every backend (>= 2) on one converted file differs alike while another backend agrees with
  the reference (or no other backend ran) -> the converter (tf2onnx), stage ``convert``;
* converter, by engine: a backend differs on one converter's file while the same engine (ONNX Runtime) agrees
  with the reference on another converter's file -> that converter (Keras's ONNX export, say);
* reference: no compared backend agrees with the reference and at least two agree with each other ->
  the reference, whichever artifacts they read (keras-jax and keras-torch agreeing on what TensorFlow does
  differently is one TensorFlow finding, not two);
* a GPU backend: judged against its CPU twin too (:mod:`memo.devices`);
* otherwise each flagged backend. Each verdict records the agreement groups used.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from memo.backends import find_spec, producer_of, producers
from memo.backends.result import ExecutionResult
from memo.devices import judge_by_twins, library_count
from memo.oracle.criterion import Thresholds, agree
from memo.oracle.verdict import Attribution, Comparison, Verdict


def attribute(kind: str, flagged: dict[str, str], outputs: dict[str, list[np.ndarray]], result: ExecutionResult,
               thresholds: Thresholds, metrics: Callable[[str], Comparison],
               flagged_any: set[str], groups: list[list[str]]) -> list[Verdict]:
    """Turn per-backend flags of one kind into verdicts, blaming a shared cause where agreement says so.

    ``flagged_any``: the backends flagged with any kind (they do not agree with the reference); ``groups``:
    the agreement groups of every backend with outputs, reference included (recorded in each verdict's
    :class:`Attribution`); ``metrics``: a flagged backend's figures for this kind.
    """
    compared = [name for name in outputs if name != result.reference]

    def consistent(names: list[str]) -> bool:
        return all(agree(outputs[name], outputs[names[0]], thresholds) for name in names[1:])

    flagged, cpu_twins = judge_by_twins(flagged, flagged_any, lambda name: name in outputs)
    verdicts: list[Verdict] = []
    for artifact_kind in producers():
        converter = producer_of(artifact_kind, result.backends) or artifact_kind
        group = [name for name in compared if result.backends[name].consumes == artifact_kind]
        others = [name for name in compared if name not in group]
        others_agree = any(name not in flagged_any for name in others)
        if len(group) >= 2 and set(group) <= set(flagged) and (others_agree or not others) and consistent(group):
            verdicts.append(Verdict(kind, converter, "convert",
                                    f"every backend on its conversion ({', '.join(group)}) differs alike: "
                                    + flagged[group[0]],
                                    attribution=Attribution(groups, {name: metrics(name) for name in group})))
            flagged = {name: message for name, message in flagged.items() if name not in group}
    engines = {name: spec.engine_name if (spec := find_spec(name)) is not None else name for name in compared}
    for name in list(flagged):  # one engine on two converters' files: right on one, wrong on the other
        kind_read = result.backends[name].consumes
        twins = [other for other in compared if other != name and engines[other] == engines[name]
                 and result.backends[other].consumes != kind_read and other not in flagged_any]
        converter = producer_of(kind_read, result.backends)
        if converter is not None and twins:
            verdicts.append(Verdict(kind, converter, "convert",
                                    f"{name} differs on {converter}'s file while the same engine agrees with the "
                                    f"reference on another conversion ({twins[0]}): " + flagged[name],
                                    attribution=Attribution(groups, {name: metrics(name)}, same_engine=twins[0])))
            del flagged[name]
    if len(compared) >= 2 and set(compared) <= flagged_any:  # none agrees with the reference
        majority = next((group for group in groups if library_count(group) >= 2 and result.reference not in group
                         and set(group) <= set(flagged)), None)
        if majority is not None:
            verdicts.append(Verdict(kind, result.reference, "execute",
                                    f"{len(majority)} backends ({', '.join(majority)}) agree with each other on a "
                                    f"different result: " + flagged[majority[0]],
                                    attribution=Attribution(groups, {name: metrics(name) for name in majority})))
            flagged = {name: message for name, message in flagged.items() if name not in majority}
    return verdicts + [Verdict(kind, name, "execute", message, comparison=metrics(name),
                               attribution=Attribution(groups, cpu_twin=cpu_twins.get(name)))
                       for name, message in flagged.items()]
