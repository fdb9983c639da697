"""memo's model IR (pure Python, ``ir.py``) and its Keras side, one job per module: ``keras_runtime``
(importing and patching Keras), ``build`` (building, shapes), ``weights``, ``inputs`` and ``files``."""
from memo.model.ir import INPUT_CLASS, Layer, ModelIR, Shape, input_dtype, input_shape

__all__ = ["INPUT_CLASS", "Layer", "ModelIR", "Shape", "input_dtype", "input_shape"]
