"""The ONNX reference as a third opinion on a numeric finding on a converted file.

ONNX's reference evaluator (:mod:`memo.backends.onnx_reference`) runs the very file the engine read, on the same
inputs. Against the reference library's outputs (Keras on TensorFlow) and the engine's:

* the file evaluated by the reference agrees with Keras, the engine does not: the **engine**'s bug (it differs
  from the specification on a valid file); where the evaluator and Keras keep NaN and the engine returns finite
  numbers, the NaN was not propagated, whatever the float64 truth says about NaN inside the model;
* the evaluated file differs from Keras as the engine does: the **converter**'s bug (tf2onnx writing a fixed-size
  Resize as float scales whose floor gives another size: the engines following the specification are right);
* both differ from each other and from Keras: the file and the engine are both off (no single blame); several
  engines differing alike on a file the evaluator computes right (a converter's finding): no single blame either;
* all agree, or the evaluator cannot run the file (an operator it lacks, too large, too slow): no opinion.

The opinion is kept in ``bug.json`` (:data:`ONNX_REFERENCE_KEY`), decides the library an entry is filed against
(:func:`blamed_library`) and settles a float64 truth that only special values left open (:func:`settle`).

An engine's crash on a converted file gets an opinion too (:func:`opine_on_crash`): where the evaluator fails on
that file as well (for a reason other than an operator it lacks), or returns outputs of other shapes than Keras's,
the file is wrong and the **converter** is blamed (tf2onnx's fixed-size Resize as float scales: the engine following
the specification gets a size Keras does not, and a later node fails); where it runs the file to Keras's shapes, the
**engine** is.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from memo.artifact import Artifact
from memo.artifact_files import ARTIFACT_FILES
from memo.bug_files import INPUTS_FILE, read_bug_file, write_bug_file
from memo.backends import CONVERTERS, find_spec, produced_by, producer_of
from memo.backends.node_shapes import PER_NODE_MODULES, node_shapes
from memo.backends.onnx_reference import reference_outputs, shapes_at
from memo.triage.failing_node import SUBGRAPH_HOLDERS, culprit_operator, file_operators, named_operators
from memo.json_types import JsonObject
from memo.oracle import Thresholds
from memo.oracle.criterion import agree, mismatch, nan_problem
from memo.truth import CONFIRMED, ILL_CONDITIONED, Truth
from memo.newest import next_python

ONNX_REFERENCE_KEY = "onnx_reference"
SHAPE_ORIGIN_KEY = "shape_origin"  # the first node whose output shape an engine gets wrong (bug.json)
ONNX_REFERENCE_ARRAYS = "onnx_reference.npz"  # the evaluator's outputs, in the bug folder
EVALUATED = "onnx-reference"  # their name there and in a precision corpus case
EVALUATOR = "onnx.reference.ReferenceEvaluator"
ENGINE, CONVERTER, BOTH, AGREES, UNAVAILABLE = "engine", "converter", "file and engine", "agrees", "unavailable"
ENGINES = "engines"  # a converter's finding whose engines all differ from the evaluator on a valid file
ONNX_KINDS = frozenset(kind for kind, name in ARTIFACT_FILES.items() if name.endswith(".onnx"))


@dataclass
class Opinion:
    """What ONNX's reference evaluator says of a finding on a converted file, as ``bug.json`` keeps it."""

    decision: str = UNAVAILABLE
    reason: str = ""
    file: str = ""  # the artifact kind evaluated ("onnx", "keras-onnx", ...)
    converter: str | None = None  # who wrote that file
    blamed: str | None = None  # the library the opinion blames (None: none)
    figures: dict[str, str] = field(default_factory=dict)  # engine -> how it differs from the evaluator
    nan_not_propagated: int = 0  # positions where the evaluator and the reference keep NaN, the engine does not

    def to_json(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_json(cls, data: JsonObject) -> "Opinion":
        return cls(**{key: value for key, value in data.items() if key in cls.__dataclass_fields__})


def onnx_file_of(backend: str) -> str | None:
    """The ONNX file kind ``backend`` reads (an engine) or writes (a converter); None for any other backend."""
    spec = find_spec(backend)
    if spec is None:
        return None
    kind = produced_by(backend) if backend in CONVERTERS else spec.consumes
    return kind if kind in ONNX_KINDS else None


def _figures(outputs: list[np.ndarray], evaluated: list[np.ndarray], thresholds: Thresholds) -> str:
    if len(outputs) != len(evaluated):
        return f"{len(outputs)} outputs, the evaluator's {len(evaluated)}"
    parts = []
    for index, (y, o) in enumerate(zip(outputs, evaluated)):
        if np.shape(y) != np.shape(o):
            parts.append(f"output {index}: shape {tuple(np.shape(y))}, the evaluator's {tuple(np.shape(o))}")
            continue
        special = nan_problem(np.asarray(y), np.asarray(o))
        bad, largest, _ = mismatch(np.asarray(y), np.asarray(o), thresholds)
        if special or bad:
            said = [special] if special else []
            said += [f"{bad}/{np.size(o)} elements outside the tolerance, max |diff| {largest:.3g}"] if bad else []
            parts.append(f"output {index}: " + "; ".join(said))
    return "; ".join(parts) or "agrees"


def _dropped_nan(outputs: list[np.ndarray], evaluated: list[np.ndarray], reference: list[np.ndarray]) -> int:
    """Positions where the evaluator and the reference library keep NaN and the engine gives a finite number."""
    count = 0
    for y, o, r in zip(outputs, evaluated, reference):
        if np.shape(y) == np.shape(o) == np.shape(r):
            count += int(np.count_nonzero(np.isnan(np.asarray(o, dtype=np.float64))
                                          & np.isnan(np.asarray(r, dtype=np.float64))
                                          & np.isfinite(np.asarray(y, dtype=np.float64))))
    return count


def judge_opinion(engines: dict[str, list[np.ndarray]], evaluated: list[np.ndarray] | str,
                  reference: list[np.ndarray], reference_name: str, file: str, converter: str | None,
                  thresholds: Thresholds = Thresholds()) -> Opinion:
    """The opinion on the accused ``engines``' outputs (engine -> outputs, on the file of kind ``file``), given the
    evaluator's outputs on that file (or why there are none) and the reference library's."""
    opinion = Opinion(file=file, converter=converter)
    if isinstance(evaluated, str):
        opinion.reason = f"no opinion: {evaluated}"
        return opinion
    opinion.figures = {name: _figures(outs, evaluated, thresholds) for name, outs in engines.items()}
    file_right = agree(evaluated, reference, thresholds)
    wrong = [name for name, outs in engines.items() if not agree(outs, evaluated, thresholds)]
    on_file = f"{converter or 'the converter'}'s file"
    if file_right and len(wrong) > 1:  # several engines wrong alike on a valid file: no one tracker to file at
        opinion.decision = ENGINES
        opinion.reason = (f"{EVALUATOR} on {on_file} agrees with {reference_name}; {', '.join(wrong)} all differ "
                          f"from it on that file")
    elif file_right and wrong:
        opinion.decision, opinion.blamed = ENGINE, wrong[0]
        opinion.nan_not_propagated = _dropped_nan(engines[wrong[0]], evaluated, reference)
        opinion.reason = (f"{EVALUATOR} on {on_file} agrees with {reference_name}; {', '.join(wrong)} differs from it "
                          f"on that file: the engine's bug")
        if opinion.nan_not_propagated:
            opinion.reason += (f" (NaN not propagated: {opinion.nan_not_propagated} positions where the evaluator "
                               f"keeps NaN hold finite numbers)")
    elif not file_right and not wrong:
        opinion.decision, opinion.blamed = CONVERTER, converter
        opinion.reason = (f"{EVALUATOR} on {on_file} differs from {reference_name} as {', '.join(engines)} does: "
                          f"the file computes another result, the converter's bug")
    elif not file_right:
        opinion.decision = BOTH
        opinion.reason = (f"{EVALUATOR} on {on_file} differs from {reference_name}, and {', '.join(wrong)} differs "
                          f"from both: the file and the engine are both off")
    else:
        opinion.decision = AGREES
        opinion.reason = f"{EVALUATOR} on {on_file} agrees with {reference_name} and with {', '.join(engines)}"
    return opinion


def accused_engines(backend: str, outputs: dict[str, list[np.ndarray]], file: str) -> list[str]:
    """The engines whose outputs on the file of kind ``file`` a finding of ``backend`` accuses: itself (an engine),
    or every engine that read a converter's file."""
    if backend not in CONVERTERS:
        return [backend] if backend in outputs else []
    readers = [name for name in outputs if (spec := find_spec(name)) is not None and spec.consumes == file]
    return readers


def ask_reference(backend: str, artifact: Artifact, inputs: dict[str, np.ndarray],
                  outputs: dict[str, list[np.ndarray]], reference: str, scratch: Path,
                  save: Path | None = None) -> Opinion | None:
    """The third opinion on a numeric finding of ``backend`` on the run of ``artifact`` (None: the backend reads
    and writes no ONNX file, or nothing to compare); ``save``: where to keep the evaluator's outputs
    (``onnx-reference__I``: the precision corpus judges them again without any library)."""
    file = onnx_file_of(backend)
    if file is None or reference not in outputs:
        return None
    engines = {name: outputs[name] for name in accused_engines(backend, outputs, file)}
    path = artifact.path_for(file)
    if not engines or not path.exists():
        return None
    converter = backend if backend in CONVERTERS else producer_of(file)
    evaluated = reference_outputs(path, inputs, scratch)
    if save is not None and not isinstance(evaluated, str):
        np.savez_compressed(save, **{f"{EVALUATED}__{i}": np.asarray(array) for i, array in enumerate(evaluated)})
    return judge_opinion(engines, evaluated, outputs[reference], reference, file, converter)


def blamed_library(data: JsonObject) -> str | None:
    """The library a bug's ONNX reference opinion (its ``bug.json`` as ``data``) files it against (None: none)."""
    opinion = data.get(ONNX_REFERENCE_KEY) or {}
    return opinion.get("blamed") if opinion.get("decision") in (ENGINE, CONVERTER) else None


NAN_NOT_PROPAGATED = "NaN not propagated"  # the head of a truth's reason that settle decided by dropped NaN
SPECIAL_VALUES = "special values against the operator's contract"  # ... by NaN or Inf made and removed inside


def settle(truth: Truth, opinion: Opinion | None) -> Truth:
    """The float64 truth once the operator's contract is heard: a finding float64 left as ill-conditioned only
    because special values arise (NaN made inside the model) is the engine's bug when the evaluator, which follows
    the specification, agrees with the reference library on the same file and the engine does not."""
    if opinion is None or opinion.decision != ENGINE or truth.decision != ILL_CONDITIONED or not truth.special_values:
        return truth
    truth.decision, truth.blamed = CONFIRMED, opinion.blamed
    # ONNX's operator documents never say what NaN or Inf gives (Min, Max, Clip, the reductions, MaxPool): its
    # reference propagates NaN as numpy does, but an engine returning the other operand follows IEEE 754-2008's
    # minNum, and the readers of s50, t50 and t51 called OpenVINO's Min/Max on AutoContrast's 0/0 unspecified (whether
    # the NaN reaches the output or a later operator turns it into a number), not a defect to file: the reason's
    # head (NAN_NOT_PROPAGATED, SPECIAL_VALUES) is what the report's "NaN the specification leaves open" reads
    what = NAN_NOT_PROPAGATED if opinion.nan_not_propagated else SPECIAL_VALUES
    truth.reason = f"{what}: {opinion.reason} (float64 alone: {truth.reason})"
    return truth


# What the evaluator says when the file is beyond it, not wrong: an operator it lacks, a graph too large, too slow.
_NO_OPINION = re.compile(r"NotImplemented|not implemented|No implementation|not supported|Unsupported|over the limit|"
                         r"did not finish|ModuleNotFoundError|ImportError|exit -?\d+$", re.IGNORECASE)
CRASH_FILE = "model.onnx"  # the converted file in a bug folder (memo.triage.bugdir.converted_file)
# The rules a crash's opinion was decided by (bug.json keeps it as ``rules``): one stored as unavailable under fewer is
# asked again, and so is one that blamed the converter. 2: the engine's operator among those a nested message names;
# an empty node by the spec. 3: the newest onnx's evaluator asked where the released one fails or gives other shapes.
CRASH_RULES = 3


_EVALUATOR_OPERATOR = re.compile(r"\[in op_(?P<module>\w+)\]|operator '(?P<op>\w+)'")


def _canon(name: str) -> str:
    return name.replace("_", "").lower()


def _failing_operator(said: str) -> str | None:
    """The operator the evaluator failed in, from its message (``binary operator 'Add'``) or the module it raised
    in (``[in op_conv_transpose]``)."""
    found = [match.group("op") or match.group("module") for match in _EVALUATOR_OPERATOR.finditer(said)]
    return found[0] if found else None


def _same_operator(failed_in: str, engine_op: str) -> bool:
    """Whether the evaluator failed in the engine's operator: its own module, or a module its kind shares
    (``op_pool_common`` runs AveragePool, MaxPool and LpPool; t69: ONNX Runtime and the evaluator both refused an
    AveragePool's negative SAME_UPPER pad, and the engine was blamed for want of an opinion)."""
    shared = failed_in.removesuffix("_common")
    return _canon(failed_in) == _canon(engine_op) or (shared != failed_in and _canon(shared) in _canon(engine_op))


def _shapes(shapes: list[tuple[int, ...]]) -> str:
    return ", ".join("(" + ", ".join(str(d) for d in shape) + ")" for shape in shapes)


def judge_crash(evaluated: list[np.ndarray] | str, keras_shapes: list[tuple[int, ...]], reference_name: str,
                file: str, converter: str | None, engine: str, subgraphs: bool = False,
                engine_op: str | None = None, at: JsonObject | None = None, keras_empty: bool = False) -> Opinion:
    """The opinion on ``engine``'s crash on ``converter``'s file (of kind ``file``), given the evaluator's outputs
    on it (or why there are none) and the shapes of the reference library's outputs on the Keras model. Other
    shapes from a file with ``subgraphs`` (a Loop, a Scan, an If) decide nothing: the evaluator's control flow is
    likelier wrong there than the file (tf2onnx's ConvLSTM1D Loop: (4, 8) where Keras and ONNX Runtime give
    (2, 4, 8)). The evaluator failing counts only where it fails in the operator the engine fails in
    (``engine_op``; unknown: any), as the evaluator's message or its operator's module names it; where it fails
    later, ``at`` (:func:`memo.backends.onnx_reference.shapes_at` on the engine's operator) decides: a node whose
    output the specification sizes otherwise than ONNX Runtime, which runs the whole file, is the file's defect
    (tf2onnx's Resize scales whose floor gives 0 columns by the spec, which the engine then refuses); where ONNX
    Runtime cannot size that node alone (its bicubic Resize on that layout), an empty output by the specification
    is the file's defect unless the reference library makes an empty tensor too (``keras_empty``)."""
    opinion = Opinion(file=file, converter=converter)
    on_file = f"{converter or 'the converter'}'s file"
    if isinstance(evaluated, str):
        failed_in = _failing_operator(evaluated)
        spec, at_runtime = (at or {}).get("spec"), (at or {}).get("onnxruntime")
        runtime_says = f"ONNX Runtime, which runs the whole file, gives {_shapes([tuple(at_runtime)])}" \
            if isinstance(at_runtime, list) else f"{reference_name} makes no empty tensor (ONNX Runtime cannot size it)"
        if failed_in and engine_op and not _same_operator(failed_in, engine_op) and isinstance(spec, list) and (
                spec != at_runtime if isinstance(at_runtime, list) else 0 in spec and not keras_empty):
            opinion.decision, opinion.blamed = CONVERTER, converter
            opinion.reason = (f"by the ONNX specification the file's {engine_op} ({(at or {}).get('node')}) gives "
                              f"shape {_shapes([tuple(spec)])} where {runtime_says}; {engine} follows the "
                              f"specification and fails there, "
                              f"{EVALUATOR} fails after it ({evaluated.rpartition('this file: ')[2]}): the file is "
                              "wrong, the converter's bug")
            return opinion
        if _NO_OPINION.search(evaluated) or (failed_in and engine_op and not _same_operator(failed_in, engine_op)):
            # beyond the evaluator, or failing elsewhere than the engine: not the same failure
            opinion.reason = f"no opinion: {evaluated}" + (f" (the engine fails in {engine_op})" if engine_op else "")
            return opinion
        opinion.decision, opinion.blamed = CONVERTER, converter
        opinion.reason = (f"{EVALUATOR} fails on {on_file} too ({evaluated.rpartition('this file: ')[2]}), while "
                          f"{reference_name} runs the Keras model: the file is wrong, the converter's bug")
        return opinion
    shapes = [tuple(int(d) for d in np.shape(array)) for array in evaluated]
    if keras_shapes and shapes != keras_shapes and subgraphs:
        opinion.reason = (f"no opinion: {EVALUATOR} on {on_file} returns shape {_shapes(shapes)} where "
                          f"{reference_name} returns {_shapes(keras_shapes)}, in a file with control flow")
        return opinion
    if keras_shapes and shapes != keras_shapes:
        opinion.decision, opinion.blamed = CONVERTER, converter
        opinion.reason = (f"{EVALUATOR} on {on_file} returns shape {_shapes(shapes)} where {reference_name} returns "
                          f"{_shapes(keras_shapes)}: the file computes another shape, the converter's bug")
        return opinion
    opinion.decision, opinion.blamed = ENGINE, engine
    opinion.reason = (f"{EVALUATOR} runs {on_file} and returns output{'s' if len(shapes) > 1 else ''} of shape "
                      f"{_shapes(shapes)}" + (f", as {reference_name} does" if keras_shapes else "")
                      + f": the file is valid, {engine}'s bug")
    return opinion


def keras_output_shapes(info: JsonObject) -> list[tuple[int, ...]]:
    """The shapes of the reference library's outputs on the reduced model (``bug.json``'s ``io``)."""
    reference = str(info.get("reference") or "")
    rows = (info.get("io") or {}).get("outputs") or []
    shapes = [row.get(f"{reference} shape") for row in rows if isinstance(row, dict)]
    return [tuple(int(d) for d in shape) for shape in shapes if isinstance(shape, list)
            and all(isinstance(d, int) for d in shape)]


def _keras_makes_empty(info: JsonObject) -> bool:
    """Whether a layer of the reduced model has an empty output by Keras's shapes (``bug.json``'s ``shapes``)."""
    shapes = info.get("shapes") if isinstance(info.get("shapes"), dict) else {}
    return any(isinstance(shape, list) and 0 in shape for shape in shapes.values())


def evaluate_newest_first_wrong(path: Path, inputs: dict[str, np.ndarray], scratch: Path, timeout_s: float,
                                keras_shapes: list[tuple[int, ...]]) -> tuple[list[np.ndarray] | str, str]:
    """The evaluator's outputs on a converted file, and what the newest onnx's evaluator said where it decided
    instead (else ""). Where the released evaluator fails or gives other shapes than Keras's, the newest onnx's
    (the newest-code environment, :func:`memo.newest.next_python`) is asked too: where it runs the file and gives
    Keras's shapes, the released evaluator's was its own defect, not the file's (s50: onnx 1.23's GlobalMaxPool on a
    5-D input reduced two axes only, so a correct tf2onnx file looked wrong; fixed in onnx's newest code)."""
    evaluated = reference_outputs(path, inputs, scratch, timeout_s=timeout_s)
    wrong = isinstance(evaluated, str) or (bool(keras_shapes) and _shape_list(evaluated) != keras_shapes)
    python = next_python() if wrong else None
    if python is None:
        return evaluated, ""
    newest = reference_outputs(path, inputs, scratch / "newest", timeout_s=timeout_s, python=python)
    if isinstance(newest, str) or _shape_list(newest) != keras_shapes:
        return evaluated, ""
    released = evaluated if isinstance(evaluated, str) else f"shapes {_shapes(_shape_list(evaluated))}"
    return newest, f"the newest onnx's evaluator; the released one's answer, {released}, is its own defect"


def _shape_list(arrays: list[np.ndarray]) -> list[tuple[int, ...]]:
    return [tuple(int(d) for d in np.shape(array)) for array in arrays]


def opine_on_crash(folder: Path, scratch: Path, timeout_s: float = 60.0) -> Opinion | None:
    """The third opinion on the crash kept in the bug folder ``folder`` of an engine reading a converted file, asked
    once and kept in its ``bug.json`` (None: not such a crash, or no file or inputs to run)."""
    info = read_bug_file(folder)
    library = str(info.get("library") or "")
    file = onnx_file_of(library)
    if info.get("kind") != "crash" or file is None or library in CONVERTERS:
        return None
    stored = info.get(ONNX_REFERENCE_KEY)
    if isinstance(stored, dict) and not (stored.get("decision") in (UNAVAILABLE, CONVERTER)
                                         and int(stored.get("rules") or 0) < CRASH_RULES):
        return Opinion.from_json(stored)  # asked once; "no opinion" or "the converter" asked again when the rules grew
    path, inputs_path = folder / CRASH_FILE, folder / INPUTS_FILE
    if not path.is_file() or not inputs_path.is_file():
        return None
    with np.load(inputs_path, allow_pickle=False) as data:
        inputs = {name: data[name] for name in data.files}
    evaluated, newest_said = evaluate_newest_first_wrong(path, inputs, scratch, timeout_s, keras_output_shapes(info))
    signature = info.get("signature") if isinstance(info.get("signature"), dict) else {}
    message = str(info.get("error_message") or "")
    engine_op = culprit_operator(message, list(signature.get("frames") or []), path)
    op = engine_op.split(" ")[0] if engine_op else None
    failed_in = _failing_operator(evaluated) if isinstance(evaluated, str) else None
    # a nested message names the Loop and the node inside it that failed: the evaluator failing in either fails
    # where the engine does (ONNX Runtime's and the evaluator's Gather out of range in tf2onnx's LSTM Loop)
    op = next((named for named in named_operators(message) if failed_in and _canon(named) == _canon(failed_in)), op)
    at = shapes_at(path, inputs, op, scratch, timeout_s) if op and failed_in and _canon(failed_in) != _canon(op) \
        else None  # the evaluator fails after the engine's operator: what that operator gives by the spec
    opinion = judge_crash(evaluated, keras_output_shapes(info), str(info.get("reference") or "Keras"), file,
                          producer_of(file), library, bool(set(file_operators(path)) & SUBGRAPH_HOLDERS), op,
                          at if isinstance(at, dict) else None, _keras_makes_empty(info))
    if newest_said:
        opinion.reason = f"{opinion.reason} ({newest_said})"
    write_bug_file(folder, {**info, ONNX_REFERENCE_KEY: {**opinion.to_json(), "rules": CRASH_RULES}})
    return opinion


def first_wrong_shape(shapes: dict[str, object], order: list[tuple[str, str, list[str]]]) -> JsonObject:
    """The first node of the file (``order``: its nodes' names, op types and output names, in the file's order) whose
    first output's shape the engine gets otherwise than the reference (``shapes``:
    :func:`memo.backends.node_shapes.node_shapes`), as ``{"node", "op", "engine", "reference", "by"}``; empty when
    every node both ran agrees (or a side did not run). An engine's module is a node's where it is named after the
    node or after its first output (onnx2pytorch's ``Resize_model/resize:0``)."""
    engine, reference = shapes.get("engine"), shapes.get("reference")
    if not isinstance(engine, dict) or not isinstance(reference, dict):
        return {}
    for name, op, outputs in order:
        ran = engine.get(name) or next((value for key, value in engine.items()
                                        if outputs and outputs[0] and key.endswith(outputs[0])), None)
        expected = reference.get(name)
        if ran and expected and ran[0] != expected[0]:
            return {"node": name, "op": op, "engine": ran[:1], "reference": expected[:1],
                    "by": str(shapes.get("by") or "")}
    return {}


def trace_shape_origin(folder: Path, scratch: Path, timeout_s: float = 60.0) -> JsonObject | None:
    """For an engine's crash while running a converted file (stage ``execute``; an engine of per-node torch modules,
    :data:`memo.backends.node_shapes.PER_NODE_MODULES`), the first node whose output shape
    it gets otherwise than ONNX Runtime on the same file (:func:`first_wrong_shape`), found once and kept in the
    folder's ``bug.json``; None when not such a crash or there is no file or inputs to run."""
    info = read_bug_file(folder)
    library = str(info.get("library") or "")
    if info.get("kind") != "crash" or info.get("stage") != "execute" or library not in PER_NODE_MODULES:
        return None
    if SHAPE_ORIGIN_KEY in info:
        return info[SHAPE_ORIGIN_KEY]
    path, inputs_path = folder / CRASH_FILE, folder / INPUTS_FILE
    if not path.is_file() or not inputs_path.is_file():
        return None
    import onnx

    order = [(node.name, node.op_type, list(node.output))
             for node in onnx.load(str(path), load_external_data=False).graph.node]
    with np.load(inputs_path, allow_pickle=False) as data:
        inputs = {name: data[name] for name in data.files}
    found = first_wrong_shape(dict(node_shapes(library, path, inputs, scratch, timeout_s)), order)
    write_bug_file(folder, {**info, SHAPE_ORIGIN_KEY: found})
    return found
