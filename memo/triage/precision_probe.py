"""A shortcut for reducing an optimizer stage's bug: the model's weights by precision, without its graph.

An optimizer stage (``sgd``, ``adam``, ``optimizer``: :data:`memo.training.judge.UPDATE_STAGES`) steps every trainable
variable on a fixed gradient (:func:`memo.backends.training.fixed_gradients`): its result depends on the variables'
shapes, dtypes and values, never on the inputs or on how the layers are wired. Its bug is keyed by those dtypes
(:func:`memo.triage.training_signature.update_precision`). Delta debugging over a 30-layer seed model checks a candidate
per run for a minute and times out (p41's two optimizer crashes of Keras on TensorFlow: a float16 variable scaled by
a float32 global norm, Muon on float64 variables); the probe proposes, in one run, the smallest model with the same
precisions: for each variable dtype, the first layer of that dtype that holds weights (else the first of that dtype),
each alone, fed by a fresh input of the shape it reads, side by side as the model's outputs. The differing weight's
own layer (``keep``) is the one its dtype keeps.
"""
from __future__ import annotations

from memo.model.ir import Layer, ModelIR
from memo.mutation.analysis import analyse
from memo.triage.bug_reduction import fed_alone
from memo.training.selection import variable_dtype


def precision_probe(ir: ModelIR, keep: str | None = None) -> ModelIR | None:
    """The model of :mod:`this module <memo.triage.precision_probe>`'s docstring; None when Keras cannot say the layers'
    input shapes, or when the probe is no smaller than ``ir``."""
    try:
        infos = analyse(ir)
    except Exception:  # noqa: BLE001  (a model Keras rejects has no shapes to copy)
        return None
    chosen: dict[str, Layer] = {}
    weighted: set[str] = set()
    ordered = sorted(ir.body, key=lambda layer: layer.name != keep)  # the differing weight's layer first
    for layer in ordered:
        dtype = variable_dtype(layer)
        has_weights = bool(getattr(infos.get(layer.name), "weights", 0))
        if dtype not in chosen or (has_weights and dtype not in weighted and chosen[dtype].name != keep):
            chosen[dtype] = layer
            if has_weights:
                weighted.add(dtype)
    picked = [layer for layer in ir.body if layer in chosen.values()]  # in the model's order
    if not picked or len(picked) >= len(ir.body):
        return None
    probe = ModelIR(layers=[], outputs=[], name=f"{ir.name}_precisions")
    names = {layer.name for layer in picked}

    def fresh(name: str) -> str:  # a source feeding two picked layers becomes two inputs
        while name in names:
            name += "_"
        names.add(name)
        return name

    for layer in picked:
        sources = list(dict.fromkeys(layer.inputs))
        fed = fed_alone(layer, infos, lambda source, owner=layer.name, sources=sources:
                        fresh(f"{owner}_input_{sources.index(source)}"))
        if fed is None:
            return None
        probe.layers += fed
        probe.outputs.append(layer.name)
    return probe


def dense_probe(dtypes: tuple[str, ...]) -> ModelIR:
    """The smallest model with weights of ``dtypes``: one ``Dense(3)`` per dtype on its own 4-wide input, side by side
    (an optimizer bug that needs only the variables' dtypes shows on it, and its script holds 27 weights)."""
    probe = ModelIR(layers=[], outputs=[], name="dense_" + "_".join(dtypes))
    for dtype in dtypes:
        probe.layers += [Layer(f"x_{dtype}", "InputLayer", {"batch_shape": [None, 4], "dtype": "float32"}),
                         Layer(f"dense_{dtype}", "Dense", {"units": 3, "dtype": dtype}, [f"x_{dtype}"])]
        probe.outputs.append(f"dense_{dtype}")
    return probe


# The weight precisions Keras layers take (their dtype policy), alone and beside float32: the optimizer sweep's
# matrix (memo.training.sweep), whichever of them the campaign's mutants reach.
STANDARD_PRECISIONS: tuple[tuple[str, ...], ...] = (
    ("float32",), ("float16",), ("bfloat16",), ("float64",),
    ("float16", "float32"), ("bfloat16", "float32"), ("float32", "float64"))


__all__ = ["STANDARD_PRECISIONS", "dense_probe", "precision_probe"]
