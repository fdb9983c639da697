"""A repro script's message comparison: the same answer wherever the script runs from."""
from __future__ import annotations

from memo.triage.pathmask import comparable_message

TF_TRACE = ('in user code:\n\n    File "{path}", line {line}, in None  *\n        lambda *args: model(list(args))\n'
            "    ValueError: Negative dimension size caused by subtracting 13 from 12 with input shapes: [?,12,8,8,2].")


def test_a_frame_file_is_masked_however_python_spells_it() -> None:
    spellings = ["/work/main/memo/backends/tf2onnx_converter.py", "repro.py", "bugs/crash-tf//repro.py",
                 "/tmp/my bugs/crash-tf/repro.py", "C:\\bugs\\crash-tf\\repro.py"]
    masked = {comparable_message(TF_TRACE.format(path=path, line=index)) for index, path in enumerate(spellings)}
    assert len(masked) == 1, masked
    assert 'File "PATH", line N, in None' in masked.pop()


def test_the_script_folder_is_masked_even_with_spaces() -> None:
    campaign = "cannot read /work/c/triage-work/artifact-3/model.onnx: truncated"
    here = "/tmp/copied bugs/crash-x"
    run = f"cannot read {here}/model.onnx: truncated"
    assert comparable_message(run, [here]) == comparable_message(campaign) != comparable_message(run)


def test_a_relative_folder_is_not_replaced_in_words() -> None:
    message = "bugs in the graph: node . failed"
    assert comparable_message(message, ["bugs", ".", "/"]) == comparable_message(message)
    assert "bugs in the graph" in comparable_message(message, ["bugs"])
