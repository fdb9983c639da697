"""Keras 3 on TensorFlow: the reference backend."""
from memo.backends.keras_common import keras_spec

SPEC = keras_spec("tensorflow", ("tensorflow-cpu",))
