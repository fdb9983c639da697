"""bfloat16 arrays through ``.npz`` files: numpy's own format has no bfloat16 (an ml_dtypes type), so ``np.savez``
stores its elements as raw 2-byte ``void`` and ``np.load`` reads them back so, which no arithmetic accepts
("could not convert string to float: b'\\xd3?'": long150b's localizations of bfloat16 models' inner layers)."""
from __future__ import annotations

import numpy as np


def is_raw_bfloat16(array: np.ndarray) -> bool:
    """Whether ``array`` is bfloat16's bits as ``np.load`` returns them (the only 2-byte raw arrays memo writes)."""
    return array.dtype.kind == "V" and array.dtype.itemsize == 2


def restored(array: np.ndarray) -> np.ndarray:
    """``array`` as read from an ``.npz``, with bfloat16 restored (same bits): the criterion's precision is the
    dtype's, so widening to float32 here would judge a bfloat16 output by float32's tolerance."""
    if not is_raw_bfloat16(array):
        return array
    import ml_dtypes

    return array.view(ml_dtypes.bfloat16)


def portable(array: np.ndarray) -> np.ndarray:
    """``array`` as numpy's own ``.npz`` keeps it: bfloat16 (an ml_dtypes type, or its raw bits as ``np.load`` reads
    them back) widened to float32, exactly; a Keras variable given it rounds back to the same bfloat16 values."""
    array = restored(array)
    return array.astype(np.float32) if array.dtype.name == "bfloat16" else array
