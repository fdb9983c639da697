"""Block-aware reduction of seed models (MEMO Section 3.2): smaller seeds with exactly the same coverage."""
from memo.reduction.reducer import (PHASES, CoverageFn, ReductionResult, ReductionStats, coverage_key,
                                    default_coverage_fn, reduce_model)

__all__ = ["PHASES", "CoverageFn", "ReductionResult", "ReductionStats", "coverage_key", "default_coverage_fn",
           "reduce_model"]
