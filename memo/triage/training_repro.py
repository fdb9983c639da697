"""The standalone ``repro.py`` of a training bug (docs/training.md, "Triage"), built from the code the workers run.

The script loads ``model.keras`` and ``inputs.npz`` as a Keras worker does (:func:`memo.backends.keras_common._load`),
prepares the training step with the worker's own :func:`memo.backends.training.training_stages` (the same loss, the
same fixed optimizer gradients), runs the blamed stage on the blamed backend (``KERAS_BACKEND``), and compares its
arrays with the reference's, saved in ``expected.npz``, by the training check's own
:func:`memo.training.judge.compare_stage`: exit 0 when the same verdict comes back (kind, stage, array), 1 when not
(:mod:`memo.script_exit`). A ``training-crash`` reproduces when the stage raises the same exception type. All of
memo's code is inlined verbatim (:mod:`memo.triage.inline`): the script needs Keras, its backend and numpy only.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from memo import __version__
from memo.backends import load_spec
from memo.backends.training_optimizers import recorded_optimizer
from memo.backends.training_remat import recorded_remat
from memo.json_types import JsonObject
from memo.kinds import VerdictKind
from memo.oracle.criterion import Thresholds
from memo.triage.inline import Bundle
from memo.triage.repro import script_python

# memo code the script inlines: (module, name), beside the blamed spec's own convert, load and train (a Keras
# backend's: keras_common._load, training.training_stages; a converted module's: its _convert, eval_module,
# torch_common.train_module)
_CODE: tuple[tuple[str, str], ...] = (
    ("memo.backends.worker", "_read_inputs"),
    ("memo.backends.failure_cause", "primary_failure"),
    ("memo.training.judge", "COMPUTED_BY"),
    ("memo.training.judge", "compare_stage"),
    ("memo.training.judge", "compare_array"),
    ("memo.training.judge", "nonfinite_update"),
    ("memo.oracle.criterion", "Thresholds"),
)
# Imports the frame makes itself.
_FRAME_IMPORTS = frozenset({"import os", "import sys", "import traceback", "from pathlib import Path",
                            "import numpy as np"})

# What the script prints where the bug's own array agrees and another of its stage differs: changed, not fixed (the
# newest-code check reads it: memo.filing.issue.newest_lines)
CHANGED = "agrees on"
_MAIN = '''
HERE = Path(__file__).resolve().parent
BACKEND, KIND, STAGE, ARRAY = {backend!r}, {kind!r}, {stage!r}, {array!r}
OPTIMIZER = {optimizer!r}  # the optimizer stage's catalogue entry (memo.backends.training_optimizers)
REMAT = {remat!r}  # the keras.RematScope mode the layers are built with (memo.backends.training_remat)
EXCEPTION = {exception!r}
INPUT_NAMES = {input_names!r}
THRESHOLDS = Thresholds({thresholds})


def main() -> int:
    model = {load}
    inputs = _read_inputs(HERE / "inputs.npz", INPUT_NAMES)
    record = {{}}
    try:
        stages, names = {train}(model, inputs, {{"stages": [COMPUTED_BY.get(STAGE, STAGE)], "optimizer": OPTIMIZER,
                                                  "remat": REMAT}})
        record.update(names)
        wanted = COMPUTED_BY.get(STAGE, STAGE)
        for name, action in stages:
            if name == wanted:
                record.update(action())
    except Exception as exc:  # noqa: BLE001
        traceback.print_exc()
        exc = primary_failure(exc)  # the error the library raised, as memo's worker records it
        if KIND == "training-crash":
            same = type(exc).__name__ == EXCEPTION or not EXCEPTION
            print(f"{{BACKEND}} failed at {{STAGE}}: {{type(exc).__name__}}: {{exc}}")
            return 0 if same else 1
        print(f"{{BACKEND}} failed ({{type(exc).__name__}}), the bug is a {{KIND}}: not reproduced")
        return 1
    if KIND == "training-crash":
        print(f"{{BACKEND}} finished {{STAGE}}: not reproduced")
        return 1
    with np.load(HERE / "expected.npz", allow_pickle=False) as data:
        expected = {{key: data[key] for key in data.files}}
    verdict = (compare_array(BACKEND, STAGE, record, expected, ARRAY, THRESHOLDS)
               if ARRAY in record and ARRAY in expected else compare_stage(BACKEND, STAGE, record, expected, THRESHOLDS))
    if verdict is None:  # a NaN the expected arrays hold too (the reference's own): an update of a finite weight
        verdict = nonfinite_update(BACKEND, STAGE, record)
    other = compare_stage(BACKEND, STAGE, record, expected, THRESHOLDS) if verdict is None else None
    if other is not None:  # the recorded array agrees, another of the stage does not: the bug changed, not fixed
        print(f"{{BACKEND}} {CHANGED} {{ARRAY}}, but {{other.kind}} at {{STAGE}}: {{other.message}}")
        return 1
    if verdict is None:
        print(f"{{BACKEND}} agrees with the expected {{STAGE}} arrays: not reproduced")
        return 1
    print(f"{{verdict.kind}} {{BACKEND}} at {{STAGE}}: {{verdict.message}}")
    return 0 if verdict.kind == KIND and (not ARRAY or verdict.array == ARRAY) else 1


if __name__ == "__main__":
    sys.exit(main())
'''


def model_file_of(consumes: str) -> str:
    """The file a bug folder keeps for a trainer consuming ``consumes``: ``model.keras``, a converted module's
    ``model.onnx``."""
    return f"model.{consumes}"


def render_training_script(bug: JsonObject, input_names: list[str], thresholds: Thresholds = Thresholds()) -> str:
    """The script's text for ``bug`` (its bug.json data: ``id``, ``kind``, ``library``, ``stage``, ``training``:
    the array and weight the verdict names, ``exception`` for a crash)."""
    library, kind = str(bug["library"]), str(bug["kind"])
    spec = load_spec(library)
    bundle = Bundle()
    for module, name in _CODE:
        bundle.add(module, name)
    convert, load, train = (bundle.add_object(function) if function is not None else None
                            for function in (spec.convert, spec.load, spec.train))
    model_file = f"HERE / {model_file_of(spec.consumes)!r}"
    code = bundle.take()
    training = bug.get("training") or {}
    environment = "\n".join(f"os.environ[{key!r}] = {value!r}" for key, value in spec.env.items())
    imports = "\n".join(line for line in bundle.import_lines() if line not in _FRAME_IMPORTS)
    backend = spec.env.get("KERAS_BACKEND", "")
    header = (f'"""memo {__version__}: training bug {bug["id"]}\n\n'
              f'{kind} on {library} at training stage {bug.get("stage")}'
              f'{": " + str(training.get("name")) if training.get("name") else ""}.\n'
              f'Runs the stage as memo\'s worker does and compares it with the reference\'s arrays '
              f'(expected.npz, {bug.get("reference") or "the reference"}).\n\n'
              f'    KERAS_BACKEND={backend} python repro.py    # needs {", ".join(spec.distributions)}, numpy\n\n'
              f'Exit status: 0 reproduces, 1 does not.\n"""\n')
    frame = ("from __future__ import annotations\n\nimport os\n\n" + environment + "\n\nimport sys\nimport traceback\n"
             "from pathlib import Path\n\nimport numpy as np\n" + imports + "\n\n\n"
             "# ---- memo's own code, inlined verbatim (memo.backends.worker, memo.backends.keras_common, "
             "memo.backends.training, memo.training.judge, memo.oracle.criterion)\n" + code + "\n")
    main = _MAIN.format(CHANGED=CHANGED,
                        load=f"{load}({convert}({model_file}))" if convert else f"{load}({model_file})", train=train,
                        backend=library, kind=kind, stage=str(bug.get("stage") or ""),
                        array=str(training.get("array") or "") if kind != VerdictKind.TRAINING_CRASH.value else "",
                        exception=str(bug.get("exception") or ""), input_names=list(input_names),
                        optimizer=recorded_optimizer(training), remat=recorded_remat(training),
                        thresholds=", ".join(f"{k}={v!r}" for k, v in dataclasses.asdict(thresholds).items()))
    return header + frame + main


def write_training_script(folder: Path, data: JsonObject, input_names: list[str]) -> None:
    """``folder``'s ``repro.py`` for the training bug ``data`` (its bug.json facts, updated with how to run it): by
    triage when it writes the folder, and when a bug adopted from the bug database gets the current code's script."""
    (folder / "repro.py").write_text(render_training_script(data, input_names))
    data.update(repro_command=f"python {folder / 'repro.py'}", python=script_python(str(data["library"])))
