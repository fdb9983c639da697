"""Test plugin: Keras on TensorFlow, except that a Dense layer's output is off by one when the model also
holds a ReLU layer (or always, with MEMO_TEST_DENSE_ALWAYS=1): a planted bug whose culprit is right alone and
wrong together with its neighbour, as Keras-OpenVINO's Dot after a RandomZoom."""
import os

import numpy as np

from memo.backends import BackendSpec
from memo.backends.keras_tensorflow import SPEC as KERAS_TF


def run(model, inputs):
    outputs = [np.asarray(array) for array in KERAS_TF.run(model, inputs)]
    classes = {type(layer).__name__ for layer in model.layers}
    if "ReLU" in classes or os.environ.get("MEMO_TEST_DENSE_ALWAYS") == "1":
        for index, tensor in enumerate(model.outputs):
            if type(tensor._keras_history[0]).__name__ == "Dense":
                outputs[index] = outputs[index] + 1.0
    return outputs


SPEC = BackendSpec(name="dense-wrong-after-relu", consumes="keras", load=KERAS_TF.load, run=run,
                      setup=KERAS_TF.setup, env={"KERAS_BACKEND": "tensorflow"})
