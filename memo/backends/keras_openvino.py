"""Keras 3 on OpenVINO (``KERAS_BACKEND=openvino``, inference only): a fourth Keras backend."""
from memo.backends.keras_common import keras_spec

SPEC = keras_spec("openvino", ("openvino",))
