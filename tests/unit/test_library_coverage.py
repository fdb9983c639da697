"""Library code coverage's pure parts on a small package written for the test: which files are measured, the
statements counted as coverage.py counts them (and cached), the tracer around a call, merging models' lines."""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

from memo.library_coverage.measured import MeasuredCode, is_test_module, keras_code, measured_files, package_root
from memo.library_coverage.merge import LibraryCoverage, count_lines, percent
from memo.library_coverage.statements import StatementIndex, library_total, parse_file
from memo.library_coverage.tracer import LibraryTracer

PACKAGE = "memo_libcov_probe"
CONVERT = textwrap.dedent('''\
    """A converter."""


    def convert(x):
        if x > 0:
            y = (x +
                 1)
            return y
        return -x  # never reached by convert(1)


    def unused():
        return 0
    ''')


@pytest.fixture
def package(tmp_path: Path) -> Iterator[Path]:
    """A package ``memo_libcov_probe`` with a measured folder ``front``, an excluded ``front/other`` and a test
    module, importable for the test only."""
    root = tmp_path / "site"
    front = root / PACKAGE / "front"
    (front / "other").mkdir(parents=True)
    (root / PACKAGE / "__init__.py").write_text("")
    (front / "__init__.py").write_text("")
    (front / "convert.py").write_text(CONVERT)
    (front / "other" / "__init__.py").write_text("def other():\n    return 1\n")
    (front / "convert_test.py").write_text("def test():\n    assert True\n")
    sys.path.insert(0, str(root))
    try:
        yield root
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n.startswith(PACKAGE)]:
            del sys.modules[name]


CODE = MeasuredCode("probe", (f"{PACKAGE}/front",), (f"{PACKAGE}/front/other",))


def test_keras_on_one_backend_is_measured_without_the_others_folders_nor_tests() -> None:
    code = keras_code("torch")
    assert code.library == "keras-torch"
    assert code.includes("keras/src/backend/torch/nn.py") and code.includes("keras/src/layers/core/dense.py")
    assert not code.includes("keras/src/backend/jax/nn.py") and not code.includes("keras/src/backend/tensorflow/nn.py")
    assert not code.includes("keras/src/layers/core/dense_test.py") and not code.includes("tf2onnx/convert.py")
    assert is_test_module("a/tests/x.py") and is_test_module("a/test_x.py") and not is_test_module("a/contest.py")


def test_measured_files_are_the_included_ones_relative_to_the_package_root(package: Path) -> None:
    assert package_root(CODE) == package
    assert [relative for relative, _ in measured_files(CODE, package)] == [
        f"{PACKAGE}/front/__init__.py", f"{PACKAGE}/front/convert.py"]


def test_statements_count_a_multiline_statement_once_at_its_first_line(package: Path) -> None:
    parsed = parse_file(package / PACKAGE / "front" / "convert.py")
    assert parsed.statements == {4, 5, 6, 8, 9, 12, 13}, "a docstring is no statement"
    assert parsed.executed([5, 6, 7, 8, 2, 3]) == {5, 6, 8}, "line 7 is line 6's statement; 2-3 are blank"


def test_a_library_total_is_counted_once_then_read_from_the_cache(package: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert library_total(CODE, package, cache=cache) == 7  # convert.py's 7, the empty __init__.py's none
    entry = next(cache.iterdir())
    document = json.loads(entry.read_text())
    document["files"][f"{PACKAGE}/front/convert.py"][0] = list(range(1, 1235))
    entry.write_text(json.dumps(document))
    index = StatementIndex()
    assert library_total(CODE, package, index, cache=cache) == 1234, "same files, same sizes: the cached statements"
    assert len(index.of(package / PACKAGE / "front" / "convert.py").statements) == 1234, "no parse on a model's time"
    (package / PACKAGE / "front" / "more.py").write_text("a = 1\nb = 2\n")
    assert library_total(CODE, package, cache=cache) == 9, "another version of the library is counted again"


def test_the_tracer_reports_the_lines_one_call_reached_and_starts_empty_each_time(
        package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    tracer = LibraryTracer([CODE, MeasuredCode("absent", ("no_such_package_here",))])
    assert tracer.libraries == ["probe"], "a library not installed is left out"
    assert tracer.totals() == {"probe": 7}
    from memo_libcov_probe.front import convert  # noqa: E402  (imported untraced, as a worker's setup does)
    from memo_libcov_probe.front.other import other

    tracer.start()
    assert convert.convert(1) == 2 and other() == 1
    reached = tracer.stop()
    assert reached == {"probe": {f"{PACKAGE}/front/convert.py": [5, 6, 8]}}, "the excluded folder is not measured"
    tracer.start()
    reached = tracer.stop()
    assert reached == {"probe": {}}


def test_merging_keeps_each_line_once_and_returns_only_what_is_new() -> None:
    merged = LibraryCoverage()
    first = merged.add([("tf2onnx", 100, {"a.py": [1, 2, 3]}), ("onnx2torch", 50, {"b.py": [7]})])
    assert first == {"tf2onnx": {"a.py": [1, 2, 3]}, "onnx2torch": {"b.py": [7]}}
    again = merged.add([("tf2onnx", 100, {"a.py": [3, 4], "c.py": [1]}), ("onnx2torch", 50, {"b.py": [7]})])
    assert again == {"tf2onnx": {"a.py": [4], "c.py": [1]}}
    assert count_lines(again["tf2onnx"]) == 2
    assert merged.figures() == {"onnx2torch": {"covered": 1, "total": 50}, "tf2onnx": {"covered": 5, "total": 100}}
    assert percent(merged.figures()["tf2onnx"]) == 5.0 and percent({"covered": 0, "total": 0}) == 0.0
    resumed = LibraryCoverage()
    resumed.restore({"tf2onnx": 100}, [("tf2onnx", "a.py", 1)])
    assert resumed.add([("tf2onnx", 100, {"a.py": [1, 2]})]) == {"tf2onnx": {"a.py": [2]}}


def test_two_tracers_of_one_worker_take_turns(package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker serving two specs with different code (tf2onnx and the TFLite converter) holds two tracers."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    front = LibraryTracer([MeasuredCode("front", (f"{PACKAGE}/front",), (f"{PACKAGE}/front/other",))])
    other = LibraryTracer([MeasuredCode("other", (f"{PACKAGE}/front/other",))])
    from memo_libcov_probe.front import convert  # noqa: E402
    from memo_libcov_probe.front.other import other as call_other

    for _ in range(2):
        front.start()
        convert.convert(1), call_other()
        assert front.stop() == {"front": {f"{PACKAGE}/front/convert.py": [5, 6, 8]}}
        other.start()
        convert.convert(1), call_other()
        assert other.stop() == {"other": {f"{PACKAGE}/front/other/__init__.py": [2]}}


def test_a_worker_measures_only_the_specs_that_declare_code(package: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from memo.backends.coverage_probe import CoverageProbes
    from memo.backends.spec import BackendSpec

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    measured = BackendSpec("probe", "keras", load=str, run=lambda handle, inputs: [], library_code=(CODE,))
    plain = BackendSpec("plain", "keras", load=str, run=lambda handle, inputs: [])
    probes = CoverageProbes()
    probes.prepare([measured, plain])
    from memo_libcov_probe.front import convert  # noqa: E402

    with probes.measuring(measured) as library:
        convert.convert(2)
    assert library == {"probe": {"total": 7, "files": {f"{PACKAGE}/front/convert.py": [5, 6, 8]}}}
    with probes.measuring(plain) as library:
        convert.convert(2)
    assert library == {}
    with probes.measuring(None) as library:  # a model the campaign does not trace (its sampled share)
        convert.convert(-1)
        assert sys.gettrace() is None, "no tracer runs on an untraced model"
    assert library == {}
    with probes.measuring(measured) as library:
        convert.convert(2)
    assert library["probe"]["files"], "the tracer still works on the next traced model"
