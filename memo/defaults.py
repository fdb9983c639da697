"""Defaults that the command line shows and the objects it configures apply, each defined once.

Stdlib only: the command modules read these when the parser is built, and importing
:mod:`memo.campaign` or :mod:`memo.backends.executor` there would load numpy and Keras for every
``memo`` invocation, ``memo --help`` included.
"""
from __future__ import annotations

# Seconds a backend may spend on one model (``memo fuzz --timeout``, ``memo run --timeout``,
# CampaignConfig.timeout_s, DifferentialExecutor's timeout_s, triage's cap). A typical reduced-seed
# mutant takes under 3 s; a library past this is recorded as a hang.
DEFAULT_TIMEOUT_S = 30.0

# The limit counts the library's own work on the model, not memo's or the machine's: a worker's start-up (the
# library's imports) has its own limit (memo.backends.supervisor.WorkerProcess.startup_timeout_s), and a
# backend's first model after its worker started gets this many times the limit, for the library's first
# compilation and lazy imports, which a loaded machine can stretch past the limit. Later models get the
# limit itself.
FIRST_MODEL_GRACE = 2.0

# A warm worker is restarted after a model once its resident memory exceeds this many MB (the recycling bound,
# DifferentialExecutor's max_rss_mb). A worker still inside one model is killed when it passes the request bound,
# a quarter of the machine's memory and never below the recycling bound (MEMO_WORKER_MEMORY_MB overrides it): the
# model is recorded as skipped on that backend ("MemoryBound"), not as a finding (long150f: one worker reached
# 12.1 GB inside a localization and left the machine 2.4 GB).
WORKER_RECYCLE_MB = 3000
WORKER_MEMORY_SHARE = 0.25
WORKER_MEMORY_VARIABLE = "MEMO_WORKER_MEMORY_MB"

# A hang is filed only when it hangs again: triage re-runs the model on the hanging backend alone (a fresh
# worker, nothing else in the run) with this many times the limit, and a repro script says "reproduces" only
# when its run is still going after this many times the limit (memo.triage.checker, memo.triage.repro).
HANG_CONFIRM_FACTOR = 2.0

# A diverse mutant with more layers is executed but not kept as a parent (0: no bound); see
# docs/architecture.md, "Throughput".
DEFAULT_MAX_PARENT_LAYERS = 20

# A diverse mutant whose estimated multiply-adds per sample (memo.mutation.analysis.compute_cost) exceed this
# is executed but not kept as a parent (0: no bound); see docs/architecture.md, "Throughput".
DEFAULT_MAX_PARENT_COST = 200_000_000

# A diverse mutant with more recurrent layers than this (memo.mutation.analysis.recurrent_layers), and than its
# parent, is executed but not kept as a parent (0: no bound); see docs/architecture.md, "Throughput".
DEFAULT_MAX_PARENT_RECURRENT = 2

# Share of the mutations that the directed operator (Target) makes: MH (Eq. 1-4) still chooses the seed
# <model, operator>, and with this probability the model it chose is mutated by Target instead of the
# operator it chose (``memo fuzz --directed``); see docs/mutation.md, "Directed share".
DEFAULT_DIRECTED_SHARE = 0.5

# Share of the executed models (the reference ran them) that get the training check by a hash of their folder
# (``memo fuzz --train-share``, docs/training.md); the first model of each layer class (and class in a non-float32
# dtype policy) not trained yet gets it too, up to memo.training.selection.NOVELTY_CAP of the models. The check costs
# about 5.7 CPU seconds per model on the three Keras backends, its optimizer stage included (docs/benchmarks.md,
# "Training check"), against about 5 CPU seconds per executed model: checking one model in five in all keeps the
# campaign's throughput near issue 40's bound (15 %).
DEFAULT_TRAIN_SHARE = 0.1

# The training check's CPU budget: the checks' measured seconds stay within this share of the inference runs' seconds
# (``memo fuzz --train-budget``; memo.training.selection). Issue 40 allows the check 15 % fewer models per hour; the
# triage of its findings (float64 truth, reduction) runs beside the pipelines and takes its share too.
DEFAULT_TRAIN_BUDGET = 0.1

# Without a terminal (cron, CI, ``memo fuzz > log``), a campaign prints a plain progress line this often
# (``memo fuzz --progress-every``; memo.campaign.progress.PlainReporter).
DEFAULT_PROGRESS_EVERY_S = 60.0

# Mutants traced for library coverage (--library-coverage-every): one executed mutant in this many, every seed.
# coverage.py's line tracer on Python 3.11 costs +58 % CPU on a campaign's mutants (tf2onnx +89 %), against the
# goal of +25 % (docs/benchmarks.md, "Library code coverage").
LIBRARY_TRACE_EVERY = 3
