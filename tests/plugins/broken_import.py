"""Test plugin whose library is missing: the worker cannot start, which is recorded at stage "start"."""
import memo_no_such_library  # noqa: F401

from memo.backends import BackendSpec

SPEC = BackendSpec(name="broken-import", consumes="keras", load=print, run=print)
