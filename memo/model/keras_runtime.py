"""The one place that imports Keras in the orchestrator, and the private patches memo applies to it.

In the orchestrator Keras runs on its numpy backend (``memo/__init__.py`` sets ``KERAS_BACKEND``): enough
to build a model symbolically (shape inference, which is how mutants are validated), to draw
deterministic weights and to write the ``.keras`` artifact that every backend loads. No library under
test is imported here.

Keras is imported lazily, inside :func:`keras_module` (and the ``keras.src`` internals inside the
functions that patch them), never at module import time: it costs about 1.5 s even on the numpy
backend, ``memo --help`` and the pure-Python parts of memo must not pay it, and a worker process must
be able to choose its own backend before Keras is first imported.
"""
from __future__ import annotations

import contextlib
import os
import sys
import warnings
from typing import Any, Iterator

from memo.model.ir import Layer


def keras_module() -> Any:
    """Keras, imported the orchestrator's way (numpy backend, TensorFlow kept out, build warnings off)."""
    import keras

    # Symbolic builds of mutants trigger Keras's advice (masks dropped, layers unbuilt...): noise here.
    warnings.filterwarnings("ignore", category=UserWarning, module=r"keras(\.|$)")
    # Mutants compute on overflowed values on purpose (NaN operator, huge weights): numpy's overflow and
    # invalid-value warnings in the orchestrator (weight edits, output statistics) would only litter the console.
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"(numpy|keras)(\.|$)")
    _keep_tensorflow_out(keras)
    cache_attr_skipsets()
    return keras


@contextlib.contextmanager
def weights_deferred() -> Iterator[None]:
    """Build layers symbolically without drawing or allocating their weights (most of a numpy-backend
    build's time; shapes and weight counts do not depend on weight values).

    Inside Keras's StatelessScope, variables made from an initializer are only registered, in a global
    list, for later initialization; the list is restored to a copy taken on entry, so nothing registered
    here accumulates (the scope appends to the list that is there, so restoring that same object would not).
    """
    keras = keras_module()
    from keras.src.backend.common import global_state

    pending = list(global_state.get_global_attribute("uninitialized_variables", [], set_to_default=True))
    try:
        with keras.StatelessScope(initialize_variables=False):
            yield
    finally:
        global_state.set_global_attribute("uninitialized_variables", pending)


def reset_auto_names() -> None:
    """Start Keras's automatic layer names afresh, as in a new process.

    A layer built without a name (the layer a wrapper such as TimeDistributed or SpectralNormalization
    holds: the IR names only its nodes) is named from a per-process counter, so the same IR would give
    ``dense`` in one build and ``dense_3`` in a later one. Names reach the libraries under test (Keras's
    ONNX export on torch fails when a wrapped layer's name equals another layer's), so an artifact must
    depend on its IR alone, the way a user's script builds it in a fresh process.
    """
    import collections

    keras_module()
    from keras.src.backend.common import global_state

    global_state.set_global_attribute("object_name_uids", collections.defaultdict(int))


def allow_unsafe_deserialization() -> None:
    """Let Keras deserialize layers that carry Python code (Lambda). Only on the user's explicit request."""
    keras_module().config.enable_unsafe_deserialization()


def _keep_tensorflow_out(keras: Any) -> None:
    """On the numpy backend, stop Keras from importing TensorFlow just because it is installed.

    Keras's serializer asks ``tf.available`` (importing TensorFlow, 3+ s and hundreds of MB) merely
    to check ``isinstance(obj, tf.TensorShape)``. The orchestrator must stay free of every library
    under test, so we tell Keras's lazy module that TensorFlow is absent.
    """
    if keras.backend.backend() != "numpy" or "tensorflow" in sys.modules:
        return
    if os.environ.get("KERAS_BACKEND", "numpy") != "numpy":
        return
    from keras.src.utils import module_utils

    module_utils.tensorflow._available = False


def cache_attr_skipsets() -> None:
    """Make Keras's cache of the attributes its saving and loading skip work (idempotent; in every Keras worker).

    Keras 3.15's ``saving_lib.get_attr_skipset`` reads its cache under ``saving_attr_skiplist_<type>`` and
    writes it under ``saving_attr_skipset_<type>``, so it never hits: every layer saved or loaded builds a
    throw-away ``Layer()`` and lists its attributes. The cache makes loading cheaper (docs/benchmarks.md), and
    every model is loaded six times. The set depends only on the type, so caching it under the key Keras reads
    changes nothing else.
    """
    from keras.src.backend.common import global_state
    from keras.src.saving import saving_lib

    compute = saving_lib.get_attr_skipset
    if getattr(compute, "memo_cached", False):
        return

    def get_attr_skipset(obj_type: str) -> Any:
        key = f"saving_attr_skiplist_{obj_type}"  # the key Keras itself reads first
        skipset = global_state.get_global_attribute(key, None)
        if skipset is None:
            skipset = compute(obj_type)
            global_state.set_global_attribute(key, skipset)
        return skipset

    get_attr_skipset.memo_cached = True  # type: ignore[attr-defined]
    saving_lib.get_attr_skipset = get_attr_skipset


def deserialize_layer(keras: Any, layer: Layer) -> Any:
    """A Keras layer object from an IR node (its class, module and config), not yet called on anything."""
    conf = dict(layer.config)
    conf["name"] = layer.name
    return keras.layers.deserialize({"module": layer.module, "class_name": layer.class_name, "config": conf,
                                     "registered_name": None})
