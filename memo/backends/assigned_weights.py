"""Which trainable weights a Keras model's training-mode call assigns, in a child process:
``python -m memo.backends.assigned_weights MODEL INPUTS OUT`` (Keras on TensorFlow, the model loaded with
``safe_mode=True``, called once with ``training=True`` on the inputs; ``OUT``: a JSON list of the weights' paths whose
values changed). SpectralNormalization assigns ``kernel / sigma`` to its kernel in ``call``: a gradient with respect
to a weight the forward pass overwrites depends on how a backend differentiates that assignment.

The worker records the same during the training check (:mod:`memo.backends.training`, ``assigned``); this answers
it for a bug folder made before that (a bug adopted from the bug database), for its issue text.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np


def _main(model_path: str, inputs_path: str, out_path: str) -> int:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras

    model = keras.saving.load_model(model_path, compile=False, safe_mode=True)
    with np.load(inputs_path, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    names = [getattr(tensor, "name", "").split(":")[0] for tensor in model.inputs]
    inputs = [arrays[name] for name in names] if all(name in arrays for name in names) else list(arrays.values())
    before = [np.array(keras.ops.convert_to_numpy(v.value), copy=True) for v in model.trainable_weights]
    model(inputs if len(inputs) > 1 else inputs[0], training=True)
    changed = [v.path for v, old in zip(model.trainable_weights, before)
               if not np.array_equal(keras.ops.convert_to_numpy(v.value), old)]
    with open(out_path, "w") as out:
        json.dump(changed, out)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1], sys.argv[2], sys.argv[3]))
