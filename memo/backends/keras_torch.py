"""Keras 3 on PyTorch."""
from memo.backends.keras_common import keras_spec

SPEC = keras_spec("torch", ("torch",))
