"""Rematerialization (gradient checkpointing) in the training check.

``keras.RematScope(mode=...)`` makes every layer built inside it recompute its forward pass during the backward
pass (Keras 3.9+: ``jax.checkpoint``, ``tf.recompute_grad``, ``torch.utils.checkpoint`` per backend,
``keras/src/backend/*/core.py``'s ``remat``). A rematerialized layer must give the gradients and state updates it
gives without remat: any difference is a defect of that code, which only training reaches (measured 2026-11-29 on
the layer catalogue, keras 3.15.1: on TensorFlow an activity regularizer's gradient changes under
``RematScope(mode="full")``; on JAX the same model fails with ``UnexpectedTracerError``; both still on keras-nightly).

A campaign builds a checked model under the mode (or none) that most of its layer classes have not been checked
under yet (:meth:`memo.training.selection.TrainingSelection.remat`); where every option has met them, one model in
:data:`REMAT_SHARE` (:func:`choose_remat`, hashed from the model's folder name like the optimizer entry, so a seed
gives the same choice). The mode is the same on every Keras backend; the
float64 truth computes without remat (the values remat must not change). The worker applies the scope's mode to the
loaded model's layers (:func:`apply_remat`: what building the model inside the scope does, as the minimal script
does); the record names it (``remat``), and triage reruns, ``repro.py`` and the minimal script take it from there.
Orchestrator side: pure, no library imported here.
"""
from __future__ import annotations

import hashlib
from typing import Any

REMAT_MODES: tuple[str, ...] = ("full", "activations")  # RematScope's modes that need no per-model argument
REMAT_SHARE = 4  # where novelty does not decide, one checked model in this many is built under remat
REMAT_KEY = "remat"  # the request option, the worker's record and a verdict's training record


def choose_remat(name: str) -> str | None:
    """The remat mode of the model whose artifact folder is ``name`` (None: checked without remat)."""
    digest = hashlib.sha256(f"remat:{name}".encode()).digest()
    return REMAT_MODES[digest[1] % len(REMAT_MODES)] if digest[0] % REMAT_SHARE == 0 else None


def apply_remat(model: Any, mode: str) -> None:
    """Give every layer of ``model`` (nested ones and the model itself) ``mode``, as building it inside
    ``keras.RematScope(mode=mode)`` does (Keras keeps the scope's mode on each operation at construction)."""
    import keras
    from keras.src.backend.common.remat import get_current_remat_mode

    if mode not in REMAT_MODES:
        raise ValueError(f"unknown remat mode {mode!r} (known: {', '.join(REMAT_MODES)})")
    with keras.RematScope(mode=mode):
        current = get_current_remat_mode()
    for layer in model._flatten_layers(include_self=True, recursive=True):
        layer._remat_mode = current


def recorded_remat(record: object) -> str | None:
    """The remat mode a training record names (a verdict's ``training`` metrics, bug.json's ``training``, a
    worker's arrays); None without one."""
    value = record.get(REMAT_KEY) if hasattr(record, "get") else None
    text = str(value.item() if hasattr(value, "item") else value) if value is not None else ""
    return text if text in REMAT_MODES else None


def remat_scope(mode: str) -> str:
    """The scope as a user writes it."""
    return f'keras.RematScope(mode="{mode}")'


__all__ = ["REMAT_KEY", "REMAT_MODES", "REMAT_SHARE", "apply_remat", "choose_remat", "recorded_remat", "remat_scope"]
