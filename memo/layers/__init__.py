"""memo's layer catalogue: one declarative entry (:class:`LayerSpec`) per Keras 3 layer API.

``CATALOGUE`` maps Keras class names to entries; ``RESHAPING`` and ``MERGING`` name the APIs MEMO's LResh
and LMerg operators insert; ``pair_possible(a, b)`` says whether A -> B can be an edge by tensor rank.
"""
from memo.layers.catalogue import (CATALOGUE, MERGING, RESHAPING, family_members, get_spec, pair_possible,
                                   possible_pairs)
from memo.layers.spec import Bucket, Draw, Impossible, LayerSpec, ParamSpace, Shape

__all__ = ["CATALOGUE", "MERGING", "RESHAPING", "Bucket", "Draw", "Impossible", "LayerSpec", "ParamSpace",
           "Shape", "family_members", "get_spec", "pair_possible", "possible_pairs"]
