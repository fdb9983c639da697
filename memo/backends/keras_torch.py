"""Keras 3 on PyTorch."""
from memo.backends.cuda import DEVICE_CUDA
from memo.backends.keras_common import keras_spec

SPEC = keras_spec("torch", ("torch",))
SPEC_CUDA = keras_spec("torch", ("torch",), device=DEVICE_CUDA)
