"""Keras 3 on JAX."""
from memo.backends.keras_common import keras_spec

SPEC = keras_spec("jax", ("jax", "jaxlib"))
