"""memo's model IR (pure Python) and its bridge to Keras (lazy import)."""
from memo.model.ir import INPUT_CLASS, Layer, ModelIR, input_dtype, input_shape

__all__ = ["INPUT_CLASS", "Layer", "ModelIR", "input_dtype", "input_shape"]
