"""Seed models: the bundled ten, user seeds, and their cached block-aware reductions."""
from memo.seeds.cache import (DEFAULT_CACHE, ModelFigures, SeedSummary, cached_entry, figures, matching_weights,
                              reduced_seed, seed_summary, store_entry)
from memo.seeds.loading import (RECIPE_CACHE, SEEDS_DIR, Seed, check_catalogue, discover_seeds, has_seed_name,
                                is_seed_file, load_seed)

__all__ = ["DEFAULT_CACHE", "RECIPE_CACHE", "SEEDS_DIR", "ModelFigures", "Seed", "SeedSummary", "cached_entry",
           "check_catalogue", "discover_seeds", "figures", "has_seed_name", "is_seed_file", "load_seed",
           "matching_weights", "reduced_seed", "seed_summary", "store_entry"]
