"""Failure classification in the worker: "unsupported" only for deliberate refusals (no library imported).

Every phrase a backend declares is checked against its example message, and the messages that the old
broad list misfiled as "unsupported" stay errors.
"""
from __future__ import annotations

import logging
import sys

import pytest

from memo.backends import BACKENDS, CONVERTERS, load_spec
from memo.backends.result import ConversionProblem, StageFailure
from memo.backends.spec import NEVER_UNSUPPORTED, UnsupportedPhrase
from memo.backends.worker import _problem_record, classify


def _exception(type_name: str, message: str) -> BaseException:
    """An exception whose class is named ``type_name`` (library classes are matched by name)."""
    builtin = getattr(__builtins__ if isinstance(__builtins__, dict) else __builtins__, type_name, None) \
        if not isinstance(__builtins__, dict) else __builtins__.get(type_name)
    cls = builtin if isinstance(builtin, type) else type(type_name, (Exception,), {})
    return cls(message)


ALL_SPECS = [*BACKENDS, *CONVERTERS]


@pytest.mark.parametrize("name", ALL_SPECS)
def test_every_declared_phrase_matches_its_example(name: str) -> None:
    spec = load_spec(name)
    for phrase in spec.unsupported_patterns:
        assert isinstance(phrase, UnsupportedPhrase) and phrase.example, f"{name}: declare an example"
        exc_type = phrase.exc_types[0] if phrase.exc_types else "RuntimeError"
        assert classify(_exception(exc_type, phrase.example), spec.unsupported_patterns) == "unsupported"
        if phrase.exc_types:  # restricted to its types: the same text in another exception is an error
            assert classify(_exception("OSError", phrase.example), spec.unsupported_patterns) == "error"


def _library_exception(type_name: str, base: type[BaseException], message: str) -> BaseException:
    """A library's own exception class (MXNet's MXNetError is a RuntimeError) with ``message``."""
    return type(type_name, (base,), {})(message)


# Documented refusals, as the libraries raised them in memo runs (see the phrases' comments): unsupported.
REFUSALS = [
    ("mxnet", _library_exception("MXNetError", RuntimeError, "Traceback (most recent call last):\n  File "
                                 "\"../src/operator/tensor/./la_op.h\", line 743\nMXNetError: This operation only "
                                 "supports 32-bit and 64-bit floating point")),
    ("mxnet", RuntimeError("simple_bind error. Arguments:\nx: (1, 5, 6, 2)\nMXNetError: Error in operator pad2: "
                           "[06:18:00] ../src/operator/./pad-inl.h:218: Current implementation expects padding on "
                           "the first two axes to be zero.")),
    ("mxnet", RuntimeError("simple_bind error. Arguments:\nx: (2, 3)\nMXNetError: Error in operator pad3: [06:18:00] "
                           "../src/operator/./pad-inl.h:215: Current implementation only supports 4-D or 5-D input.")),
    ("mxnet", NotImplementedError("Operator Loop not implemented.")),  # GRU/SimpleRNN through tf2onnx
    ("tf2onnx", ValueError("make_sure failure: Current implementation of RFFT or FFT only allows ComplexAbs as "
                           "consumer not {'Imag', 'Real'}")),
    ("tf2onnx-opset11", ValueError("make_sure failure: Current implementation of RFFT or FFT only allows ComplexAbs "
                                   "as consumer not {'Real', 'Imag'}")),
]
# Near misses: the same libraries failing in ways no phrase declares a refusal.
NOT_REFUSALS = [
    ("mxnet", KeyError("")),  # LSTM through tf2onnx: a KeyError is never a phrase (a documented difference covers it)
    ("mxnet", RuntimeError("simple_bind error. Arguments:\ninput_layer: (2, 5, 3)\nMXNetError: InferShape pass cannot "
                           "decide shapes for the following arguments (-1 means unknown dimensions).")),
    ("tf2onnx", ValueError("make_sure failure: negative reduce axis is not supported in onnx for now")),
    ("tf2onnx", ValueError("make_sure failure: Current implementation of FFT or RFFT assumes the input is real or "
                           "complex produced by a node Cast just before this one.")),
]


@pytest.mark.parametrize("name,exc", REFUSALS, ids=lambda value: value if isinstance(value, str) else "")
def test_documented_refusals_are_unsupported(name: str, exc: BaseException) -> None:
    assert classify(exc, load_spec(name).unsupported_patterns) == "unsupported"


@pytest.mark.parametrize("name,exc", NOT_REFUSALS, ids=lambda value: value if isinstance(value, str) else "")
def test_near_misses_of_declared_refusals_are_errors(name: str, exc: BaseException) -> None:
    assert classify(exc, load_spec(name).unsupported_patterns) == "error"


# Real messages the old "unsupported|not implemented|not supported|is not registered" list misfiled.
MISFILED = [
    ("TypeError", "unsupported operand type(s) for +: 'NoneType' and 'int'"),
    ("TypeError", "array type float16 is unsupported in linalg"),  # numpy, seen building an LSTM in float16
    ("RuntimeError", "\"addmm_impl_cpu_\" not implemented for 'Half'"),  # torch
    ("KeyError", "'Relu6' is not registered"),
    ("IndexError", "index 3 is not supported for axis of size 2"),
    ("AssertionError", "layout not supported"),
    ("AttributeError", "No conversion function registered for op type Foo yet."),
    ("ValueError", "Unsupported shape: the op is not supported on this input"),
]


@pytest.mark.parametrize("name", ALL_SPECS)
@pytest.mark.parametrize("exc_type,message", MISFILED)
def test_bugs_with_refusal_words_are_errors_for_every_backend(name: str, exc_type: str, message: str) -> None:
    assert classify(_exception(exc_type, message), load_spec(name).unsupported_patterns) == "error"


def test_not_implemented_error_is_the_default_refusal() -> None:
    assert classify(NotImplementedError("Operator Resize not implemented."), ()) == "unsupported"

    class LibraryRefusal(NotImplementedError):
        pass

    assert classify(LibraryRefusal("Converter is not implemented"), ()) == "unsupported"


def test_type_is_checked_before_any_phrase_on_the_whole_hierarchy() -> None:
    class LibraryKeyError(KeyError):
        pass

    anything = [UnsupportedPhrase(r".")]
    assert classify(LibraryKeyError("x"), anything) == "error"
    assert set(NEVER_UNSUPPORTED) == {"TypeError", "KeyError", "IndexError", "AssertionError", "AttributeError"}
    assert classify(ValueError("x"), [r"^x$"]) == "unsupported"  # a plain regular expression: any other type


def test_converter_problems_handler_exception_is_an_error_missing_handler_unsupported() -> None:
    crash = ConversionProblem("error", "Failed to convert node 'pool' (op MaxPool): ValueError: bad", "ValueError",
                              feature="MaxPool")
    gap = ConversionProblem("unsupported", "tf2onnx has no handler for op ScaleAndTranslate (node 'r')",
                            "UnconvertedOps", feature="ScaleAndTranslate")
    record = _problem_record([gap, crash])
    assert (record["status"], record["exc_type"]) == ("error", "ValueError")
    # the crash alone is the message (it identifies the bug); what else the run noticed goes with the traceback
    assert record["message"] == "Failed to convert node 'pool' (op MaxPool): ValueError: bad"
    assert "ScaleAndTranslate" in record["traceback"]
    record = _problem_record([gap, "node 'n' has op ai.onnx.contrib::Foo, not an ONNX op (opset 1)"])
    assert (record["status"], record["exc_type"]) == ("unsupported", "UnconvertedOps")
    assert "ScaleAndTranslate" in record["message"]


def _record(msg: str, args: tuple, exc: BaseException | None = None) -> logging.LogRecord:
    exc_info = (type(exc), exc, None) if exc is not None else None
    return logging.LogRecord("tf2onnx.tfonnx", logging.ERROR, __file__, 1, msg, args, exc_info)


def test_tf2onnx_log_records_are_read_exactly() -> None:
    from memo.backends.tf2onnx_converter import logged_problems  # imports no library at module level

    summary = "OP=MaxPool\nName=pool\nInputs:\n"
    records = [_record("Tensorflow op [%s: %s] is not supported", ("resize", "ScaleAndTranslate")),
               _record("Unsupported ops: %s", ("Counter({'ScaleAndTranslate': 1})",)),
               _record("Failed to convert node %r (fct=%r)\n%r", ("pool", "<handler>", summary),
                       ValueError("kernel size must be positive")),
               _record("Failed to convert node %r (fct=%r)\n%r", ("sum", "<handler>", "OP=ReduceSum\n"),
                       ValueError("make_sure failure: negative reduce axis is not supported in onnx for now")),
               _record("rewriter %s: exception %s", ("<function rewrite_gemm>", KeyError("MatMul:0"))),
               _record("Reshape on node %s does not have a const shape", ("r",))]
    problems, nodes = logged_problems(records)
    assert [(p.status, p.exc_type, p.feature) for p in problems] == [
        ("unsupported", "UnconvertedOps", "ScaleAndTranslate"), ("error", "ValueError", "MaxPool"),
        ("error", "ValueError", "ReduceSum"), ("error", "KeyError", "<function rewrite_gemm>")]
    assert nodes == {"resize", "pool", "sum"}
    assert "op MaxPool" in problems[1].message and "kernel size must be positive" in problems[1].message


def test_stage_failure_carries_the_stage_and_the_cause() -> None:
    cause = ValueError("Negative dimension size caused by subtracting 3 from 2")
    failure = StageFailure("trace", cause)
    assert failure.stage == "trace" and failure.cause is cause


def test_classification_imports_no_dl_library() -> None:
    import subprocess

    code = ("import sys, memo.backends.worker, memo.kinds; heavy = {'tensorflow', 'torch', 'jax', 'keras', 'onnx'};"
            "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
