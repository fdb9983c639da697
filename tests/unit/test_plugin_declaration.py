"""A plugin declares its spec as memo's backend modules do (``SPEC``)."""
from __future__ import annotations

from pathlib import Path

import pytest

from memo.backends.plugins import read_plugin
from memo.backends.worker import load_plugin
from memo.errors import UsageError

HEADER = "from memo.backends import BackendSpec\n\n\ndef run(handle, inputs):\n    return list(inputs.values())\n\n\n"


def _plugin(tmp_path: Path, declaration: str) -> Path:
    path = tmp_path / "my_plugin.py"
    path.write_text(HEADER + declaration)
    return path


def test_spec_declares_the_plugin(tmp_path: Path) -> None:
    path = _plugin(tmp_path, "SPEC = BackendSpec(name='echo', consumes='keras', load=str, run=run)\n")
    info = read_plugin(path)
    assert (info.name, info.consumes) == ("echo", "keras")
    assert load_plugin(path).name == "echo"


def test_the_old_name_declares_nothing(tmp_path: Path) -> None:
    path = _plugin(tmp_path, "BACKEND = BackendSpec(name='old', consumes='keras', load=str, run=run)\n")
    with pytest.raises(UsageError, match="defines no `SPEC = BackendSpec"):
        read_plugin(path)


def test_a_file_without_a_declaration_is_refused(tmp_path: Path) -> None:
    path = _plugin(tmp_path, "OTHER = BackendSpec(name='x', consumes='keras', load=str, run=run)\n")
    with pytest.raises(UsageError, match="defines no `SPEC = BackendSpec"):
        read_plugin(path)
    with pytest.raises(TypeError, match="defines no SPEC"):
        load_plugin(path)
