"""The failure a library meant to raise where re-creating its exception failed (memo.backends.failure_cause)."""
from __future__ import annotations

import pytest

from memo.backends.failure_cause import UNFILTERED, primary_failure, unfiltered_lines


class TracerBoolConversionError(Exception):
    """Like JAX's: built from a tracer, whose repr it asks for."""

    def __init__(self, tracer: object) -> None:
        super().__init__(f"Attempted boolean conversion of {tracer._error_repr()}.")  # type: ignore[attr-defined]


class Tracer:
    def _error_repr(self) -> str:
        return "traced array with shape bool[]"


def _keras_filter(error: Exception) -> None:
    """Keras's traceback filter: the error re-created with its message, re-raised without context."""
    try:
        raise type(error)(str(error))
    except Exception as rebuilt:
        raise rebuilt from None


def test_an_error_raised_while_re_creating_another_is_not_the_failure() -> None:
    with pytest.raises(AttributeError) as caught:
        try:
            raise TracerBoolConversionError(Tracer())
        except TracerBoolConversionError as error:
            _keras_filter(error)
    found = primary_failure(caught.value)
    assert isinstance(found, TracerBoolConversionError) and "bool[]" in str(found)


def test_an_ordinary_error_is_its_own_failure_even_when_chained() -> None:
    with pytest.raises(ValueError) as caught:
        try:
            raise KeyError("inner")
        except KeyError:
            raise ValueError("outer")
    assert primary_failure(caught.value) is caught.value


def test_a_minimal_script_turns_keras_filter_off_only_for_the_errors_it_cannot_re_create() -> None:
    assert unfiltered_lines("TracerBoolConversionError") == [UNFILTERED]
    assert unfiltered_lines("UnexpectedTracerError") == [UNFILTERED]
    assert unfiltered_lines("AttributeError") == [] and unfiltered_lines("") == []
