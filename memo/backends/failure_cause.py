"""The failure a library meant to raise, where building its exception failed on the way (pure, no DL import).

Keras's traceback filter (``keras.src.utils.traceback_utils``) re-raises a layer's error as ``type(e)(message)``;
JAX's tracer errors take a tracer, not a message, so re-creating one raises ``AttributeError: 'str' object has no
attribute '_error_repr'`` inside the error class's ``__init__``, chained (``__context__``) to the error that
happened: t52's BatchNormalization under ``RematScope`` on JAX was filed under that secondary error. A worker
records the error that happened; a minimal script on such an error turns Keras's filter off so that it prints it.
"""
from __future__ import annotations

import re

# Exceptions Keras's traceback filter cannot re-create (JAX's, whose constructors take a tracer).
FILTER_BREAKS = re.compile(r"Tracer\w*Error$|ConcretizationTypeError$")
UNFILTERED = "keras.config.disable_traceback_filtering()  # else Keras's filter hides JAX's error behind another"


def primary_failure(exc: BaseException) -> BaseException:
    """``exc``, or, where it was raised while another exception was being built (its innermost frame is an
    exception's ``__init__``), the exception it interrupted."""
    seen: set[int] = set()
    while exc.__context__ is not None and id(exc) not in seen and _raised_building_exception(exc):
        seen.add(id(exc))
        exc = exc.__context__
    return exc


def _raised_building_exception(exc: BaseException) -> bool:
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    return frame.f_code.co_name == "__init__" and isinstance(frame.f_locals.get("self"), BaseException)


def unfiltered_lines(exception: str) -> list[str]:
    """The line a Keras minimal script adds after its imports for a bug whose exception Keras's filter cannot
    re-create (``exception``: its type's name), else none."""
    return [UNFILTERED] if FILTER_BREAKS.search(exception or "") else []
