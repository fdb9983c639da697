"""Family modules of the catalogue: each defines build() -> list[LayerSpec]."""
