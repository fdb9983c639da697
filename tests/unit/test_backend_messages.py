"""What each backend declares about its messages (BackendSpec.messages) is well-formed and does what it says."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memo.backends import BACKENDS, CONVERTERS, STAND_IN_PRODUCERS, declared_messages, load_spec, producers
from memo.backends.spec import MessageMask, MessageRules

RULES = declared_messages()
MASKS = list(dict.fromkeys(mask for rule in RULES for mask in rule.masks))


def test_the_registered_backends_declare_masks_and_naming_patterns() -> None:
    assert MASKS and all(any(getattr(rule, name) for rule in RULES)
                         for name in ("declined_nodes", "failing_classes", "declined_features"))


@pytest.mark.parametrize("mask", MASKS, ids=lambda mask: mask.pattern[:40])
def test_each_declared_mask_changes_its_example(mask: MessageMask) -> None:
    assert mask.example, "a mask needs an example message"
    assert re.sub(mask.pattern, mask.replacement, mask.example) != mask.example


@pytest.mark.parametrize("pattern", [p for rule in RULES for p in rule.declined_nodes])
def test_declined_node_patterns_name_an_op_and_a_node(pattern: str) -> None:
    assert {"op", "node"} <= set(re.compile(pattern).groupindex)


@pytest.mark.parametrize("pattern", [p for rule in RULES for p in rule.failing_classes])
def test_failing_class_patterns_name_a_class_or_a_file(pattern: str) -> None:
    assert set(re.compile(pattern).groupindex) & {"cls", "file"}


@pytest.mark.parametrize("pattern", [p for rule in RULES for p in rule.declined_features])
def test_declined_feature_patterns_capture_the_feature(pattern: str) -> None:
    assert re.compile(pattern).groups >= 1


def test_a_mask_stage_must_be_known() -> None:
    with pytest.raises(ValueError, match="mask stage"):
        MessageMask("x", "y", stage="later")


def test_every_spec_has_message_rules() -> None:
    for name in [*BACKENDS, *CONVERTERS]:
        assert isinstance(load_spec(name).messages, MessageRules), name


def test_producers_are_the_converters_declarations() -> None:
    found = producers()
    stand_ins = {name for names in STAND_IN_PRODUCERS.values() for name in names}
    assert found == {load_spec(name).produces: name for name in CONVERTERS if name not in stand_ins}
    assert found["onnx"] == "tf2onnx" and found["tflite"] == "tflite-converter" and "keras" not in found


def test_a_bugs_script_masks_messages_as_memo_does_without_memo(tmp_path: Path) -> None:
    """The crash check of a bug's script holds the backends' masks as data (memo's registry is not there)."""
    from memo.triage.pathmask import comparable_message
    from memo.triage.repro import render_script

    text, _ = render_script(bug_id="b", kind="crash", library="onnxruntime", faulty="onnxruntime", symptom="s",
                            input_names=["x"], reference="keras-tensorflow", expected_exception="Fail",
                            expected_message="m", expected_stage="execute")
    script = tmp_path / "repro.py"
    script.write_text(text)
    messages = [mask.example for mask in MASKS]
    code = ("import json, runpy, sys\nsys.modules['memo'] = None\n"
            "found = runpy.run_path(sys.argv[1], run_name='repro')['comparable_message']\n"
            "print(json.dumps([found(message) for message in json.loads(sys.argv[2])]))\n")
    done = subprocess.run([sys.executable, "-c", code, str(script), json.dumps(messages)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [comparable_message(message) for message in messages]


def test_only_literals_are_frozen_into_a_script() -> None:
    from memo.triage.inline import Bundle, InlineError

    bundle = Bundle()
    bundle.freeze("memo.backends", "declared_masks")
    with pytest.raises(InlineError, match="not a literal"):
        bundle.freeze("memo.backends", "declared_messages")  # spec objects, not data
