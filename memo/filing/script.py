"""The minimal script of a bug: a dozen lines in the blamed library's own idiom, for that library alone.

For a Keras-side bug the reduced model is built in code with ``keras.layers``; for an ONNX engine's bug its graph
is built with ``onnx.helper``. Weights and inputs come from a seeded generator where the bug does not depend on
them (a crash), else from small attached ``.npz`` files; a numeric bug's expected outputs (the reference library's)
are attached. The script raises (so exits 1) when the bug shows: the library's own exception for a crash, an
``AssertionError`` printing expected against actual for a numeric bug. :mod:`memo.filing.check` runs each
candidate in a fresh process and keeps the first that reproduces. A crash inside torch.onnx first gets scripts
calling torch alone (:mod:`memo.filing.torch_onnx_code`), the Keras script remaining where none reproduces.
"""
from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memo.backends import REFERENCE, find_spec
from memo.backends.onnx_validity import ATTRIBUTE_BOUNDS, negative_pads
from memo.backends.spec import KERAS_FRONT_END
from memo.filing.folder import EXPECTED_FILE, INPUTS_FILE, KERAS_FILE, ONNX_FILE, BugFolder
from memo.filing.hang import watchdog_lines
from memo.backends.idioms import KERAS, Idiom
from memo.filing.script_env import env_lines, has_optional_env
from memo.backends.training_optimizers import recorded_optimizer
from memo.filing.keras_code import keras_model_code
from memo.filing.onnx_code import WEIGHTS_FILE, GraphNotWritable, onnx_file_inputs, onnx_graph_code
from memo.filing.pycode import literal, used_imports
from memo.backends.failure_cause import unfiltered_lines
from memo.filing.torch_onnx_code import SOURCE as TORCH_ONLY, torch_only_scripts
from memo.filing.training_idiom import (NoTrainingIdiom, check_lines, remat_control, remat_control_lines, remat_lines,
                                       training_lines, update_schedule)
from memo.kinds import TRAINING_KINDS
from memo.npz_arrays import portable
from memo.triage.onnx_reference import EVALUATED, ONNX_REFERENCE_ARRAYS, SHAPE_ORIGIN_KEY

SCRIPT_FILE = "bug_repro.py"
# Where a candidate's weights and inputs come from: a seeded generator, attached arrays, or the attached model file
# itself (the last resort: a graph helper code cannot rebuild, a Keras model whose bug needs its saved state).
SEEDED, ATTACHED, ONNX_ATTACHED, KERAS_ATTACHED = "seeded", "attached", "onnx-file", "keras-file"
# The longest script an issue shows: a longer candidate (a graph or a model built in code) gives way to one reading
# the model from its attached file.
MAX_SCRIPT_LINES = 40

# What a numeric bug's check prints before it asserts, by bug kind (``got``, ``want``: one output).
NUMERIC_PRINTS: dict[str, str] = {
    "nan": 'print("NaN/Inf: actual", np.count_nonzero(~np.isfinite(got)), "expected", '
           'np.count_nonzero(~np.isfinite(want)), "of", want.size)',
    "inconsistency": 'print("max |actual - expected|:", np.abs(got - want).max(), "expected magnitude:", '
                     'np.abs(want).mean())',
    "shape": 'print("shape: actual", got.shape, "expected", want.shape)',
}


@dataclass
class Candidate:
    """A script not yet checked: its text, the files it reads (name -> bytes), the interpreter that runs it."""

    text: str
    files: dict[str, bytes] = field(default_factory=dict)
    python: str = ""
    source: str = SEEDED
    symptom: str = ""  # what its error output must hold besides the exception's name ("": nothing more)

    @property
    def lines(self) -> int:
        return len(self.text.rstrip().splitlines())


class NoMinimalScript(Exception):
    """Why a bug gets no minimal script (no idiom for its library, a model helper code cannot state)."""


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **{name: portable(np.asarray(array)) for name, array in arrays.items()})
    return buffer.getvalue()


def _read_npz(path: Path | None) -> dict[str, np.ndarray]:
    if path is None:
        return {}
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def idiom_for(library: str) -> Idiom | None:
    """The idiom memo's backend ``library`` declares (None: memo writes no minimal script for it)."""
    return spec.idiom if (spec := find_spec(library)) is not None else None


def _input_lines(arrays: list[np.ndarray], names: list[str], idiom: Idiom, source: str) -> list[str]:
    """Lines setting ``x`` (Keras: an array or a list) or ``feed`` (ONNX: ``{name: array}``)."""
    if source == SEEDED:
        lines = ["rng = np.random.default_rng(0)"]
        values = [f"rng.uniform(-1, 1, {literal(tuple(a.shape))}).astype(np.{a.dtype.name})" for a in arrays]
    else:
        lines = [f"inputs = np.load({INPUTS_FILE!r})"]
        values = [f"inputs[{name!r}]" for name in names]
    if idiom.builds == KERAS:
        return lines + [f"x = {values[0]}" if len(values) == 1 else f"x = [{', '.join(values)}]"]
    return lines + [f"feed = {{{', '.join(f'{n!r}: {v}' for n, v in zip(names, values))}}}"]


def converter_file_lines(folder: BugFolder, converter: str) -> list[str]:
    """A converter's bug (its file is wrong: the engine reading it only shows it): after the conversion, what the
    operator docs forbid and onnx.checker does not test (:func:`spec_bound_lines`); then, where
    :func:`memo.triage.onnx_reference.trace_shape_origin` found the node whose output shape the engine and ONNX
    Runtime part on, that node alone (:func:`node_shape_lines`: its output by the spec against the Keras layer it
    converts); then the whole file run by ONNX's reference implementation against the Keras model: the same output
    shapes (and, for a numeric bug, values), else it raises ``AssertionError``."""
    origin = folder.info.get(SHAPE_ORIGIN_KEY) or {}
    lines = [*spec_bound_lines(folder),
             "feed = dict(zip([i.name for i in onnx_model.graph.input], x if isinstance(x, list) else [x]))"]
    if isinstance(origin, dict) and origin.get("op"):
        lines += node_shape_lines(folder, converter, str(origin["op"]), str(origin.get("node") or ""))
    # convert_to_numpy: a torch output that requires grad (Keras on torch, keras-export) refuses np.asarray
    lines += ["expected = [keras.ops.convert_to_numpy(out) for out in keras.tree.flatten(model(x))]",
              "try:  # the specification's semantics, on the file as written",
              "    got = ReferenceEvaluator(onnx_model).run(None, feed)",
              "except Exception as exc:",
              f'    raise AssertionError(f"ONNX\'s reference implementation fails on {converter}\'s file: {{exc}}")',
              'print("output shapes: Keras", [e.shape for e in expected], "file", [g.shape for g in got])',
              f'assert [g.shape for g in got] == [e.shape for e in expected], "{converter}\'s file: other shapes"']
    if folder.numeric:
        lines += ["for want, got in zip(expected, got):",
                  f"    {NUMERIC_PRINTS.get(folder.kind, NUMERIC_PRINTS['inconsistency'])}",
                  "    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * max(1, np.abs(want).mean()))"]
    return lines


def _broken_bounds(folder: BugFolder) -> set[str]:
    """The operators of :data:`ATTRIBUTE_BOUNDS` whose bound the converter broke: in the folder's file where it keeps
    one, else those the recorded message names (the converter's own failure: it wrote no file the folder keeps)."""
    path = folder.file(ONNX_FILE)
    if path is not None:
        return {problem.op for problem in negative_pads(_onnx_load(path)) if problem.op}
    said = str(folder.info.get("error_message") or folder.info.get("message") or "")
    return {op for op in ATTRIBUTE_BOUNDS if re.search(rf"\b{op}\b", said)}


def _onnx_load(path: Path) -> Any:
    import onnx

    return onnx.load(str(path))


def spec_bound_lines(folder: BugFolder) -> list[str]:
    """Lines raising ``onnx.checker.ValidationError`` on a node of ``onnx_model`` whose attribute breaks a bound of
    the operator docs (:data:`memo.backends.onnx_validity.ATTRIBUTE_BOUNDS`: negative ``pads``, which onnx 1.14's
    checker lets pass), for the operators whose bound the converter broke (:func:`_broken_bounds`)."""
    bounds = {op: ATTRIBUTE_BOUNDS[op][:2] for op in sorted(_broken_bounds(folder))}
    if not bounds:
        return []
    return [f"bounds = {literal(bounds)}  # the ONNX operator docs: each entry >= this (older checkers let it pass)",
            "for node in onnx_model.graph.node:",
            '    name, least = bounds.get(node.op_type, ("", 0))',
            "    values = [list(a.ints) for a in node.attribute if a.name == name]",
            "    if values and min(values[0], default=least) < least:",
            '        raise onnx.checker.ValidationError(f"{node.op_type} has {name} {values[0]}, an entry below '
            '{least} (the ONNX spec: {name} >= {least}; node {node.name!r})")']


# A converter names the nodes it writes for a Keras layer after the layer's TensorFlow scope ("model_1/resizing_1/
# strided_slice"): the layer's name, with the suffix Keras 3 adds to a called layer's scope.
_SCOPE_SUFFIX = re.compile(r"_\d+$")


def keras_layer_of(node: Any, layers: list[str]) -> str | None:
    """The Keras layer (of ``layers``) the ONNX ``node`` converts: the layer its own name's scope names, else the one
    its inputs' scopes name (a node a converter made up, "Resize__19533", reads the tensors its layer computed); None
    where no scope names one."""
    for name in (node.name, *node.input):
        tokens = re.split(r"[/:]", name)
        for token in tokens:
            if token in layers:
                return token
        for token in tokens:
            if _SCOPE_SUFFIX.sub("", token) in layers:
                return _SCOPE_SUFFIX.sub("", token)
    return None


def node_shape_lines(folder: BugFolder, converter: str, op: str, node_name: str) -> list[str]:
    """The node of ``op`` where shapes part, alone: the lines print its constant inputs (by their names in the
    operator's schema) and integer attributes, compute its output by the spec (``onnx.reference`` on the file cut
    after it), and raise ``AssertionError`` naming both sizes where the Keras layer it converts has other dimensions
    (layouts aside: NCHW against NHWC), before a later node can fail on it. Only the printing where the file or the
    layer is unknown."""
    import onnx

    path = folder.file(ONNX_FILE)
    ir = folder.ir()
    model = _onnx_load(path) if path is not None else None
    nodes = [node for node in model.graph.node if node.op_type == op] if model is not None else []
    named = [node.name for node in nodes]
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0) if model else 0
    formal = [i.name for i in onnx.defs.get_schema(op, opset).inputs] if opset else []
    layer = keras_layer_of(nodes[named.index(node_name)], [layer.name for layer in ir.body]) \
        if node_name in named and ir is not None else None
    lines = [f"node = [n for n in onnx_model.graph.node if n.op_type == {op!r}][{named.index(node_name)}]  "
             f"# where shapes part" if node_name in named else
             f"node = next(n for n in onnx_model.graph.node if n.op_type == {op!r})  # where shapes part",
             "consts = {t.name: onnx.numpy_helper.to_array(t) for t in onnx_model.graph.initializer}",
             f"given = {{f: consts[i] for f, i in zip({literal(formal)}, node.input) if i in consts and consts[i].size}}"
             if formal else "given = {i: consts[i] for i in node.input if i in consts and consts[i].size}",
             "given.update({a.name: np.array(a.ints) for a in node.attribute if a.ints})",
             'print(node.op_type, shown := ", ".join(f"{k} [{\', \'.join(v.astype(str).ravel())}]" for k, v in '
             'given.items()))']
    if layer is None:
        return lines
    kind = next(item.class_name for item in ir.body if item.name == layer)
    return lines + [
        "part = onnx.load_from_string(onnx_model.SerializeToString())  # the file up to that node, its output the graph's",
        "del part.graph.node[[n.name for n in part.graph.node].index(node.name) + 1:], part.graph.output[:]",
        "part.graph.output.append(onnx.ValueInfoProto(name=node.output[0]))",
        "spec = ReferenceEvaluator(part).run(None, feed)[0].shape  # its output by the ONNX spec",
        f"want = tuple(keras.Model(model.inputs, model.get_layer({layer!r}).output)(x).shape)  # the layer it converts",
        "if sorted(spec) != sorted(want):  # layouts aside (NCHW against NHWC)",
        "    ours, theirs = [d for d in spec if d not in want], [d for d in want if d not in spec]",
        f'    raise AssertionError(f"{{shown}} give {{\', \'.join(map(str, ours))}} by the ONNX spec where Keras computes '
        f'{{\', \'.join(map(str, theirs))}} ({converter}\'s {{node.op_type}}: output shape {{spec}}; Keras\'s {kind}: '
        f'{{want}})")']


def _check_lines(folder: BugFolder, idiom: Idiom) -> list[str]:
    if folder.converter_blamed:
        return converter_file_lines(folder, folder.converter_blamed)
    if not folder.numeric:  # a converter's own failure: its file breaks what the checker does not test, too
        return [*(spec_bound_lines(folder) if not idiom.numeric else ()), 'print("no error: the bug does not reproduce")']
    reference = ("ONNX's reference implementation (onnx.reference)" if folder.against_evaluator
                 else folder.reference or "the reference")
    return [f"expected = np.load({EXPECTED_FILE!r})  # what {reference} computes",
            "for i, got in enumerate(actual):",
            '    want = expected[f"out_{i}"]',
            f"    {NUMERIC_PRINTS.get(folder.kind, NUMERIC_PRINTS['inconsistency'])}",
            "    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * max(1, np.abs(want).mean()))"]


def _expected_outputs(folder: BugFolder, outputs: int) -> dict[str, np.ndarray]:
    """The reference's outputs for the model's ``outputs``, as ``out_0``, ``out_1``...: ``expected.npz`` holds them
    so, or holds every layer's output (the localization's probe, in the layers' order)."""
    if folder.against_evaluator:  # the evaluator's outputs on the same file, as memo.triage.onnx_reference kept them
        evaluated = _read_npz(folder.file(ONNX_REFERENCE_ARRAYS))
        expected = {f"out_{i}": evaluated[f"{EVALUATED}__{i}"] for i in range(len(evaluated))
                    if f"{EVALUATED}__{i}" in evaluated}
    else:
        expected = _read_npz(folder.file(EXPECTED_FILE))
    ordered = [expected[f"out_{i}"] for i in range(len(expected)) if f"out_{i}" in expected]
    ir = folder.ir()
    if len(ordered) != outputs and ir is not None and len(ordered) == len(ir.body) and len(ir.outputs) == outputs:
        body = [layer.name for layer in ir.body]
        ordered = [ordered[body.index(name)] for name in ir.outputs]
    if len(ordered) != outputs:
        raise NoMinimalScript(f"expected.npz holds {len(ordered)} outputs, the model {outputs}")
    return {f"out_{i}": array for i, array in enumerate(ordered)}


def _keras_weights(folder: BugFolder) -> dict[str, np.ndarray]:
    from memo.model.files import load_model_file

    path = folder.file(KERAS_FILE)
    try:
        weights = load_model_file(path).weights if path else None
    except Exception as exc:  # a model memo's loader refuses (a layer taking tensors as keyword arguments)
        raise NoMinimalScript(f"its weights could not be read: {exc}") from exc
    return {f"{layer}/{i}": array for layer, arrays in (weights or {}).items() for i, array in enumerate(arrays)}


@dataclass
class ModelPart:
    """The lines building ``model`` (and setting its weights), the files they read, the model's input names (in
    the order the inputs are fed) and its number of outputs."""

    lines: list[str]
    files: dict[str, bytes]
    inputs: list[str]
    outputs: int


def _keras_part(folder: BugFolder, source: str) -> ModelPart:
    ir = folder.ir()
    if ir is None:
        raise NoMinimalScript("the folder has no readable ir.json")
    names, outputs = [layer.name for layer in ir.input_layers], len(ir.outputs)
    if source == KERAS_ATTACHED:
        path = folder.file(KERAS_FILE)
        if path is None:
            raise NoMinimalScript("the folder has no model.keras")
        from memo.model.files import saved_outputs

        lines = [f"model = keras.saving.load_model({KERAS_FILE!r})"]
        if saved_outputs(path) != ir.outputs and len(set(ir.outputs)) == len(ir.outputs):
            # the reduced model as localization probed it (every layer an output): its own outputs again
            lines.append(f"model = keras.Model(model.inputs, [model.get_layer(n).output for n in {ir.outputs!r}])")
        return ModelPart(lines, {KERAS_FILE: path.read_bytes()}, names, outputs)
    if source == SEEDED:
        return ModelPart(["keras.utils.set_random_seed(0)", *keras_model_code(ir).lines], {}, names, outputs)
    weights = _keras_weights(folder)
    code = keras_model_code(ir, frozenset(name.rpartition("/")[0] for name in weights), folder.kind in TRAINING_KINDS)
    lines = [*code.lines, f"w = np.load({WEIGHTS_FILE!r})",
             "for layer in model.layers:",
             '    layer.set_weights([w[f"{layer.name}/{i}"] for i in range(len(layer.weights))])']
    return ModelPart(lines, {WEIGHTS_FILE: _npz(weights)}, names, outputs)


def _onnx_part(folder: BugFolder, source: str) -> ModelPart:
    onnx_path = folder.file(ONNX_FILE)
    if onnx_path is None:
        raise NoMinimalScript("the folder has no model.onnx")
    if source == ONNX_ATTACHED:
        names, outputs = onnx_file_inputs(onnx_path)
        return ModelPart([f"model = onnx.load({ONNX_FILE!r})"], {ONNX_FILE: onnx_path.read_bytes()}, names, outputs)
    try:
        graph = onnx_graph_code(onnx_path)
    except GraphNotWritable as exc:
        raise NoMinimalScript(f"the graph has {exc}") from exc
    files = {WEIGHTS_FILE: _npz(graph.attached)} if graph.attached else {}
    return ModelPart(graph.lines, files, graph.inputs, graph.outputs)


def _sources(folder: BugFolder, idiom: Idiom, floats: bool) -> list[str]:
    """Where weights, inputs and the model come from, in the order tried: seeded (a crash on float inputs), then
    attached arrays, then the model file itself."""
    sources = [ATTACHED] if folder.numeric or not floats else [SEEDED, ATTACHED]
    return sources + [ONNX_ATTACHED if idiom.builds != KERAS else KERAS_ATTACHED]


def candidates(folder: BugFolder, deadline: float | None = None) -> list[Candidate]:
    """The scripts to try for ``folder``, shortest first (``deadline``, monotonic clock: what writing them may run
    ends by then)."""
    out = written_candidates(folder)
    if folder.kind in TRAINING_KINDS:
        return out
    short = [candidate for candidate in out if candidate.lines <= MAX_SCRIPT_LINES] or out
    return _torch_only(folder, short[0], deadline) + short


def written_candidates(folder: BugFolder) -> list[Candidate]:
    """Every script memo can write for ``folder``, in the order of their sources, however long."""
    if folder.kind in TRAINING_KINDS:
        return [_training_candidate(folder)]
    library = script_library(folder)
    idiom = idiom_for(library)
    if idiom is None:
        raise NoMinimalScript(f"memo writes no minimal script for {library!r}")
    if folder.numeric and not idiom.numeric and not folder.converter_blamed:
        raise NoMinimalScript(f"a numeric bug of converter {folder.library!r} needs an engine to show")
    if folder.numeric and folder.file(EXPECTED_FILE) is None and not folder.converter_blamed:
        raise NoMinimalScript("the folder has no expected.npz")
    inputs = _read_npz(folder.file(INPUTS_FILE))
    if not inputs:
        raise NoMinimalScript("the folder has no inputs.npz")
    spec = find_spec(library)
    out: list[Candidate] = []
    why = ""
    python = (spec.python if spec else None) or ""
    for source in _sources(folder, idiom, all(array.dtype.kind == "f" for array in inputs.values())):
        try:
            if has_optional_env(library):  # the form a user would write first
                out.append(_candidate(folder, idiom, source, inputs, python, plain=True))
            out.append(_candidate(folder, idiom, source, inputs, python))
        except NoMinimalScript as exc:
            why = str(exc)
    if not out:
        raise NoMinimalScript(why)
    return out


def _torch_only(folder: BugFolder, keras: Candidate, deadline: float | None) -> list[Candidate]:
    """Scripts calling torch alone for a crash inside torch.onnx (:mod:`memo.filing.torch_onnx_code`), tried before
    ``keras``'s, from the torch calls that Keras script makes; none for another bug."""
    return [Candidate(found.text, {}, keras.python, TORCH_ONLY, found.symptom)
            for found in torch_only_scripts(folder, keras.text, keras.files, keras.python, deadline)]


def script_library(folder: BugFolder) -> str:
    """The library a bug's minimal script runs: the converter whose file is wrong (it shows what is wrong in that
    file), the reference backend for a bug of Keras's shared front end (every backend shows it), else the bug's."""
    return folder.converter_blamed or (REFERENCE if folder.library == KERAS_FRONT_END else folder.library)


def _candidate(folder: BugFolder, idiom: Idiom, source: str, inputs: dict[str, np.ndarray],
               python: str, plain: bool = False) -> Candidate:
    part = _keras_part(folder, source) if idiom.builds == KERAS else _onnx_part(folder, source)
    arrays = [inputs.get(name) for name in part.inputs] if idiom.builds == KERAS else list(inputs.values())
    arrays = arrays[:len(part.inputs)]
    if len(arrays) != len(part.inputs) or any(array is None for array in arrays):
        raise NoMinimalScript("inputs.npz does not hold the model's inputs")
    files = dict(part.files)
    if source != SEEDED:
        files[INPUTS_FILE] = _npz(dict(zip(part.inputs, arrays)))
    converter = folder.converter_blamed
    if folder.numeric and not converter:
        files[EXPECTED_FILE] = _npz(_expected_outputs(folder, part.outputs))
    stage = "" if converter else str(folder.info.get("stage", ""))  # the engine's stage is not the converter's
    body = [*part.lines, *_input_lines(arrays, part.inputs, idiom, source),
            f"print({idiom.versions})", *watchdog_lines(folder), *idiom.call_for(stage),
            *(idiom.collect if folder.numeric and not converter else ()), *_check_lines(folder, idiom)]
    library = script_library(folder)
    imports = (*idiom.imports, "from onnx.reference import ReferenceEvaluator") if converter else idiom.imports
    lines = [f"# {library}: memo bug {folder.id}; exits 1 (an exception) when the bug shows",
             *env_lines(library, plain), *used_imports(imports, body), *unfiltered_lines(folder.exception), "",
             *body]
    return Candidate("\n".join(lines) + "\n", files, python, source)


def _training_candidate(folder: BugFolder) -> Candidate:
    """A training bug's script (:mod:`memo.filing.training_idiom`): the reduced model as ``keras.layers`` code with
    its weights attached, its inputs, the blamed stage in the backend's idiom, the check against expected.npz."""
    stage = str(folder.info.get("stage", ""))
    try:
        imports, call, prefix = training_lines(folder.library, stage, folder.kind,
                                               recorded_optimizer(folder.info.get("training")))
    except NoTrainingIdiom as exc:
        raise NoMinimalScript(str(exc)) from exc
    inputs = _read_npz(folder.file(INPUTS_FILE))
    expected = _read_npz(folder.file(EXPECTED_FILE))
    if not inputs or (folder.kind != "training-crash" and not expected):
        raise NoMinimalScript("the folder has no inputs.npz or expected.npz")
    part = _keras_part(folder, ATTACHED)
    idiom = idiom_for(folder.library)
    if idiom is None or any(name not in inputs for name in part.inputs):
        raise NoMinimalScript("inputs.npz does not hold the model's inputs")
    arrays = [inputs[name] for name in part.inputs]
    mode = remat_control(folder.kind, stage, folder.info.get("training"))
    checked = check_lines(folder.kind, prefix, folder.reference, computed=mode is not None,
                          update=update_schedule(stage, recorded_optimizer(folder.info.get("training"))))
    built = remat_lines(part.lines, folder.info.get("training"))
    if mode:  # the same backend without RematScope is the expectation
        built, call = remat_control_lines(part.lines, call, mode, folder.library)
    files = {**part.files, INPUTS_FILE: _npz(dict(zip(part.inputs, arrays))),
             **({EXPECTED_FILE: _npz(expected)} if expected and any(EXPECTED_FILE in line for line in checked)
                else {})}
    spec = find_spec(folder.library)
    lines = [f"# {folder.library}: memo bug {folder.id} (training, stage {stage}); exits 1 (an exception) when the "
             "bug shows", *env_lines(folder.library), *idiom.imports,
             *(line for line in imports if line not in idiom.imports), *unfiltered_lines(folder.exception), "",
             *built, *_input_lines(arrays, part.inputs, idiom, ATTACHED),
             f"print({idiom.versions})", *call, *checked]
    return Candidate("\n".join(lines) + "\n", files, (spec.python if spec else None) or "", ATTACHED)
