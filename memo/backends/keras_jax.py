"""Keras 3 on JAX."""
from memo.backends.cuda import DEVICE_CUDA
from memo.backends.keras_common import keras_spec

SPEC = keras_spec("jax", ("jax", "jaxlib"))
SPEC_CUDA = keras_spec("jax", ("jax", "jaxlib"), device=DEVICE_CUDA)
