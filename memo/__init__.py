"""memo: a coverage-guided model-mutation fuzzer for deep-learning libraries.

The orchestrator process never imports a library under test. When it needs Keras (to validate a
mutant symbolically, infer shapes or write the shared ``.keras`` artifact) it uses Keras's numpy
backend, which imports in about a second and pulls in neither TensorFlow, torch nor JAX. Worker
processes set their own ``KERAS_BACKEND`` before importing Keras, so this default never reaches them.
"""
import os as _os

_os.environ.setdefault("KERAS_BACKEND", "numpy")
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

__version__ = "0.1.0"
