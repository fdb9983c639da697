"""Keras 3 on OpenVINO (``KERAS_BACKEND=openvino``, inference only): a fourth Keras backend.

Its bugs are filed to keras-team/keras-openvino: Keras's development code no longer holds the backend
(keras-nightly 3.16.0.dev has no ``keras/src/backend/openvino``; the ``keras-openvino`` package, whose metadata names
that repository, provides it), so a maintainer of the released keras/src/backend/openvino reads the report there.
"""
import dataclasses

from memo.backends import trackers
from memo.backends.keras_common import keras_spec
from memo.backends.spec import Upstream

UPSTREAM = Upstream("active", "https://github.com/keras-team/keras-openvino/issues",
                    "Keras's OpenVINO backend moved out of Keras to keras-team/keras-openvino (keras-openvino 0.0.1 "
                    "beside keras-nightly); the released Keras 3.15.1 still holds it", trackers.KERAS,
                    "Keras's OpenVINO backend: keras-nightly no longer holds keras/src/backend/openvino, the "
                    "keras-openvino package holds it, and its repository is keras-team/keras-openvino")

SPEC = dataclasses.replace(keras_spec("openvino", ("openvino",)), upstream=UPSTREAM)
