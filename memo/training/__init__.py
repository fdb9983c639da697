"""The training check (docs/training.md): one model's training step on every Keras backend, judged stage by stage.

The workers compute it (:mod:`memo.backends.training`, op ``train``); :mod:`~memo.training.judge` turns their arrays
into verdicts pinned to the stage that first differs (pure numpy, the oracle's criterion);
:mod:`~memo.training.truth` judges a numeric verdict by the same computation in float64 (pure numpy, memo.truth's
maths); :mod:`~memo.training.check` runs all of it on one artifact (``memo run --train``).
"""
