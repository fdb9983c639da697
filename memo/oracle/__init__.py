"""The test oracle: verdicts on one differential execution, against the reference backend.

Pure numpy (no DL library). Four parts, one job each: :mod:`~memo.oracle.criterion` (the numeric criterion
that triage and repro scripts share), :mod:`~memo.oracle.comparison` (each backend's figures against the
reference), :mod:`~memo.oracle.failures` (crash/hang/unsupported/invalid verdicts) and
:mod:`~memo.oracle.attribution` (who a numeric flag is filed against); :mod:`~memo.oracle.judging` puts them
together and :mod:`~memo.oracle.verdict` holds the verdict type. Verdict kinds (:mod:`memo.kinds`):

* ``crash`` / ``hang``: a backend or converter failed at a stage (exception, dead or silent worker).
  A signal death or a hang is always a finding against that backend, whatever else happened; failures one
  cause explains are one finding (:mod:`memo.oracle.failures`).
* ``invalid``: memo itself failed (no backend result at all, or none got past starting its worker:
  a setup problem); never a library's bug.
* ``unsupported``: a library declined a feature on purpose (NotImplementedError or a phrase its spec
  declares); kept apart from crashes.
* ``nan``: non-finite values where the reference has none, or NaN/+Inf/-Inf at different positions.
* ``shape``: a different number of outputs, or an output of a different shape, than the reference.
* ``inconsistency``: finite outputs differ from the reference's (:mod:`memo.oracle.criterion`).
* ``special``: with ``judge(..., special_values=True)`` (the model injects NaN/Inf on purpose, see
  :func:`memo.mutation.nan.has_injection`), or when the reference's own outputs hold NaN/Inf, what would be
  ``nan``/``inconsistency`` is ``special``: libraries legitimately differ on special values. Examples: max
  pooling, ``maximum``/``minimum`` and ReLU over NaN (``max(NaN, x)`` is NaN in numpy/TensorFlow's
  ``tf.maximum`` but x under IEEE 754-2008 ``maxNum`` semantics, which XLA CPU and some oneDNN/ONNX Runtime
  kernels follow; ReLU written as ``max(x, 0)`` turns NaN into 0 in some and keeps it in others);
  ``Inf * 0`` and ``Inf - Inf`` (NaN) after an algebraic rewrite that folds or reorders them differently;
  softmax/normalization of a row holding Inf (NaN everywhere, or only where the Inf was); sums reordered
  around Inf and -Inf; the sign of a zero.
"""
from __future__ import annotations

from memo.kinds import VERDICT_KINDS
from memo.oracle.comparison import compare
from memo.oracle.criterion import (Outputs, Thresholds, agree, agreement_groups, d_mad, d_mad_from_deltas, mad,
                                   mismatch, nonfinite_mask, output_scale, outputs_agree, tolerances)
from memo.oracle.failures import KERAS_FRONT_END, TF_FUNCTION_STAGE
from memo.oracle.judging import judge, load_outputs
from memo.oracle.verdict import Comparison, Verdict

__all__ = ["Comparison", "KERAS_FRONT_END", "Outputs", "TF_FUNCTION_STAGE", "Thresholds", "VERDICT_KINDS", "Verdict",
           "agree", "agreement_groups", "compare", "d_mad", "d_mad_from_deltas", "judge", "load_outputs", "mad",
           "mismatch", "nonfinite_mask", "output_scale", "outputs_agree", "tolerances"]
