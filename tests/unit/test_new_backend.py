"""Adding a backend for a library memo has never seen changes nothing outside memo/backends/.

The backend module is docs/backends.md's example, run as written; the library it tests is ``tinynp``, a small
pure-numpy "library" written here, with its own exceptions, a run-specific detail in its messages and a
deliberate refusal. The test adds the module where memo/backends/ would hold it and registers it in
``BACKENDS`` (the two edits a new backend makes), then shows that the worker's unsupported classification, bug
signatures and known outcomes use what the spec declares, and nothing else is needed.
"""
from __future__ import annotations

import importlib.util
import io
import json
import re
import sys
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from memo.backends import BACKENDS, load_spec
from memo.backends.result import ExecutionResult
from memo.backends.worker import Worker
from memo.campaign.known import KNOWN_PREFIX, KnownOutcomes, declined_nodes, rechecked
from memo.model.ir import Layer, ModelIR
from memo.oracle import Verdict
from memo.triage.masks import library_modules, normalize_message
from memo.triage.signature import signature, signature_parts

DOCS = Path(__file__).resolve().parents[2] / "docs" / "backends.md"
MODULE = "tinynp_backend"

# The library under test: compiles a JSON list of (class, layer name), refuses what it cannot run, and fails on
# non-finite inputs naming a buffer that differs on every run.
TINYNP = '''
import json
import random

import numpy as np

SUPPORTED = {"InputLayer", "Dense"}


class TinyRefusal(RuntimeError):
    pass


class TinyError(RuntimeError):
    pass


def compile(path):
    layers = json.loads(open(path).read())
    for class_name, name in layers:
        if class_name not in SUPPORTED:
            raise TinyRefusal(f"tinynp declines op {class_name} (node 'model_1/{name}_1/{class_name}')")
    return layers


def run(graph, array):
    if not np.isfinite(array).all():
        buffer = "".join(random.choice("abcdefghij") for _ in range(6))
        raise TinyError(f"tinynp lost <buffer:{buffer}> reading {array.shape}")
    return array * 2
'''


def _documented_module() -> str:
    """docs/backends.md's example backend module."""
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.DOTALL)
    return next(block for block in blocks if 'name="tinynp"' in block)


@pytest.fixture
def tinynp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """tinynp installed and its backend module registered (as ``"tinynp": "memo.backends.tinynp_backend"``)."""
    (tmp_path / "tinynp").mkdir()
    (tmp_path / "tinynp" / "__init__.py").write_text(TINYNP)
    (tmp_path / f"{MODULE}.py").write_text(_documented_module())
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(BACKENDS, "tinynp", MODULE)
    yield tmp_path
    for name in ("tinynp", MODULE):
        sys.modules.pop(name, None)


def _run(folder: Path, layers: list[tuple[str, str]], x: np.ndarray) -> ExecutionResult:
    """One model through the worker's code, in this process, as the executor would record it."""
    model, inputs, out = folder / "model.keras", folder / "inputs.npz", folder / "outputs" / "tinynp.npz"
    model.write_text(json.dumps(layers))
    np.savez(inputs, x=x)
    channel = io.StringIO()
    Worker({"tinynp": load_spec("tinynp")}, channel).handle(
        {"id": 1, "op": "run", "backend": "tinynp", "model": str(model), "inputs": str(inputs),
         "input_names": ["x"], "out": str(out)})
    done = json.loads(channel.getvalue().splitlines()[-1])
    return ExecutionResult.from_json({"artifact_dir": str(folder), "reference": "keras-tensorflow", "backends": {
        "tinynp": {"name": "tinynp", "consumes": "keras", "stages": done["stages"]}}})


def _verdict(kind: str, result: ExecutionResult) -> Verdict:
    failure = result.backends["tinynp"].failure
    assert failure is not None
    return Verdict(kind=kind, backend="tinynp", stage=failure.stage, message=failure.message)


def _ir(*layers: Layer) -> ModelIR:
    return ModelIR([Layer("x", "InputLayer", {"batch_shape": [None, 8, 8, 3], "dtype": "float32"}), *layers],
                   [layers[-1].name], "model")


def test_the_documented_example_is_a_backend_module_of_its_own() -> None:
    """What the new backend needs memo to know is all in its module: nothing in memo names it."""
    source = _documented_module()
    assert 'SPEC = BackendSpec(\n    name="tinynp"' in source
    memo = Path(__file__).resolve().parents[2] / "memo"
    assert not [path for path in memo.rglob("*.py") if "tinynp" in path.read_text()]


def test_its_refusal_is_unsupported_and_its_crash_an_error(tinynp: Path) -> None:
    ok = _run(tinynp, [["InputLayer", "x"], ["Dense", "dense"]], np.ones((2, 3), np.float32))
    assert ok.backends["tinynp"].status == "ok"
    declined = _run(tinynp, [["InputLayer", "x"], ["Conv2D", "conv"]], np.ones((2, 3), np.float32))
    assert declined.backends["tinynp"].failure.status == "unsupported"
    assert declined.backends["tinynp"].failure.stage == "load"
    broken = _run(tinynp, [["InputLayer", "x"], ["Dense", "dense"]], np.full((2, 3), np.nan, np.float32))
    failure = broken.backends["tinynp"].failure
    assert (failure.status, failure.exc_type, failure.stage) == ("error", "TinyError", "execute")


def test_its_mask_and_frames_make_two_occurrences_one_bug(tinynp: Path) -> None:
    nan = np.full((2, 3), np.nan, np.float32)
    (tinynp / "a").mkdir()
    (tinynp / "b").mkdir()
    first = _run(tinynp / "a", [["InputLayer", "x"], ["Dense", "dense"]], nan)
    second = _run(tinynp / "b", [["InputLayer", "x"], ["Dense", "dense"]], nan)
    messages = [result.backends["tinynp"].failure.message for result in (first, second)]
    assert messages[0] != messages[1]  # the buffer differs from run to run
    parts = signature_parts(_verdict("crash", first), first, None)
    assert parts["message"] == "tinynp lost <buffer> reading SHAPE"
    assert parts["frames"] == ["tinynp/__init__.py:run"]
    assert library_modules("tinynp") == ("tinynp",)
    assert signature(_verdict("crash", first), first, None) == signature(_verdict("crash", second), second, None)


def test_what_memo_reads_comes_from_its_spec(tinynp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lost = "tinynp lost <buffer:abcdef> reading (2, 3)"
    declined = "tinynp declines op Conv2D (node 'model_1/conv_1/Conv2D')"
    assert normalize_message(lost) == "tinynp lost <buffer> reading SHAPE"
    assert declined_nodes(declined) == [("Conv2D", "model_1/conv_1/Conv2D")]
    monkeypatch.delitem(BACKENDS, "tinynp")
    assert normalize_message(lost) == "tinynp lost <buffer:abcdef> reading SHAPE"
    assert declined_nodes(declined) == []


def test_its_refusals_become_known_and_skip_it(tinynp: Path) -> None:
    known = KnownOutcomes()
    ir = _ir(Layer("conv", "Conv2D", {"filters": 4, "kernel_size": [3, 3], "padding": "same"}, ["x"]))
    declined = _run(tinynp, [["InputLayer", "x"], ["Conv2D", "conv"]], np.ones((2, 3), np.float32))
    parts = signature_parts(_verdict("unsupported", declined), declined, ir)
    assert parts["feature"] == "Conv2D"
    models = [name for name in (f"m{index}" for index in range(50)) if not rechecked(name)]
    for _ in range(3):
        known.learn(ir, declined)
    skips = known.skips(ir, models[0])
    assert list(skips) == ["tinynp"] and skips["tinynp"].startswith(f"{KNOWN_PREFIX}: tinynp declined Conv2D")


def test_nothing_of_it_outlives_its_registration() -> None:
    assert "tinynp" not in BACKENDS and importlib.util.find_spec(MODULE) is None
