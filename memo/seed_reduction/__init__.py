"""Block-aware reduction of seed models (MEMO Section 3.2): smaller seeds with exactly the same coverage."""
from memo.seed_reduction.reducer import (PHASE_ORDERS, PHASES, CoverageFn, ReductionResult, ReductionStats,
                                         coverage_key, default_coverage_fn, reduce_model)

__all__ = ["PHASE_ORDERS", "PHASES", "CoverageFn", "ReductionResult", "ReductionStats", "coverage_key",
           "default_coverage_fn", "reduce_model"]
