"""Shape-adaptation plans and the coverage tiers: pure logic, no Keras import."""
from __future__ import annotations

import math
import random

import pytest

from memo.mutation.adapt import AdaptationImpossible, balanced_shape, plan, rerank
from memo.mutation.analysis import TensorInfo
from memo.mutation.preference import by_tier, pick


def _t(*dims: int | None) -> TensorInfo:
    return TensorInfo((None, *dims), "float32")


def test_equal_shapes_need_nothing() -> None:
    assert plan(_t(4, 4, 3), _t(4, 4, 3)) == []


def test_same_element_count_is_one_reshape() -> None:
    assert plan(_t(4, 4, 3), _t(48)) == [("Reshape", {"target_shape": [48]})]


def test_divisible_count_reshapes_then_dense_on_channels() -> None:
    steps = plan(_t(4096), _t(32, 32, 3))
    assert steps == [("Reshape", {"target_shape": [32, 32, 4]}), ("Dense", {"units": 3})]


def test_spatial_dims_are_padded_and_cropped() -> None:
    steps = plan(_t(5, 9, 3), _t(8, 6, 3))
    assert steps == [("Cropping2D", {"cropping": [[0, 0], [1, 2]], "data_format": "channels_last"}),
                     ("ZeroPadding2D", {"padding": [[1, 2], [0, 0]], "data_format": "channels_last"})]


def test_rank_change_then_pad_and_dense() -> None:
    steps = plan(_t(7, 5), _t(3, 3, 2))
    assert [name for name, _ in steps][0] == "Reshape" and steps[-1] == ("Dense", {"units": 2})
    assert rerank((7, 5), 4) == (7, 1, 5) and rerank((2, 3, 4), 3) == (6, 4)


def test_unknown_dims_only_adapt_the_channels() -> None:
    assert plan(_t(None, 8), _t(None, 3)) == [("Dense", {"units": 3})]
    with pytest.raises(AdaptationImpossible):
        plan(_t(None, 8), _t(5, 8))


def test_huge_dense_adapters_are_refused() -> None:
    with pytest.raises(AdaptationImpossible):
        plan(_t(3, 3, 5000), _t(2, 2, 5000))


@pytest.mark.parametrize("rank", [2, 3, 4, 5])
def test_balanced_shape_keeps_the_element_count(rank: int) -> None:
    for dims in [(12, 12, 6), (127,), (7, 5, 3), (64, 64)]:
        shape = balanced_shape(_t(*dims), rank)
        assert len(shape) == rank and math.prod(shape[1:]) == math.prod(dims)
    assert balanced_shape(_t(None, 3), 3) is None


def test_tiers_order_candidates_and_pick_takes_the_lowest() -> None:
    tiers = {"a": 2, "b": 0, "c": 1, "d": 0}
    ordered = by_tier(random.Random(1), sorted(tiers), tiers.__getitem__)
    assert set(ordered[:2]) == {"b", "d"} and ordered[2:] == ["c", "a"]
    assert pick(random.Random(3), ["a", "c"], tiers.__getitem__) == "c"
    assert by_tier(random.Random(5), sorted(tiers), tiers.__getitem__) == \
        by_tier(random.Random(5), sorted(tiers), tiers.__getitem__)
