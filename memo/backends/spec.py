"""What a backend is: the declaration every backend module (and every user plugin) provides.

Stdlib only: this module is imported by worker processes in every environment (including the MXNet
one, which has no rich, no keras), and by plugin files a user writes.

A backend runs in its own worker process. Its callables import their library lazily, so that the
orchestrator can read a declaration without loading any library under test.
"""
from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:  # annotations only: this module stays standard-library only
    import numpy as np

    from memo.model.ir import LayerConfig

from memo.artifact_files import ARTIFACT_KINDS  # stdlib only, like this module
from memo.backends.idioms import Idiom  # stdlib only, like this module
from memo.backends.trackers import GENERIC, TrackerForm  # stdlib only, like this module
from memo.library_coverage.measured import MeasuredCode  # stdlib only, like this module

# Exception types that are never a deliberate refusal, whatever their message says (checked on the whole
# class hierarchy): "unsupported operand type(s)", "... is not registered" in a KeyError are bugs.
NEVER_UNSUPPORTED: tuple[str, ...] = ("TypeError", "KeyError", "IndexError", "AssertionError", "AttributeError")

KERAS_FRONT_END = "keras"  # the backend name of a finding against Keras itself (its shared front end)


@dataclass(frozen=True)
class UnsupportedPhrase:
    """An exact message with which one library declines a feature on purpose.

    ``pattern`` is a regular expression searched (case-sensitively) in ``str(exception)``; ``exc_types``
    restricts it to exceptions whose class (or a base class) has one of these names (empty: any type but
    :data:`NEVER_UNSUPPORTED`). ``example`` is a real message it matches (tests check every declared one).
    """

    pattern: str
    exc_types: tuple[str, ...] = ()
    example: str = ""


UnsupportedPatterns = Sequence["UnsupportedPhrase | str"]

Outputs = Any  # a list/tuple of arrays, a dict of arrays, or a single array
ModelInputs = dict[str, "np.ndarray"]  # input name -> array, as the worker reads inputs.npz

# Dtype policies outside what a float32-only document allows (Keras layer configs name the policy).
LOW_PRECISION_POLICIES: tuple[str, ...] = ("float16", "bfloat16", "mixed_float16", "mixed_bfloat16")


@dataclass(frozen=True)
class DifferenceExample:
    """A finding a :class:`DocumentedDifference` covers, for its test: the verdict ``kind``, the reduced model's
    layers as ``(class_name, config)`` pairs (a chain, first fed by the input), the localized layer's index in
    ``layers`` (None: not localized) and the verdict's message."""

    kind: str
    layers: tuple[tuple[str, LayerConfig], ...] = ()
    layer: int | None = None
    message: str = ""


@dataclass(frozen=True)
class DocumentedDifference:
    """A behaviour of one library that differs from the reference on purpose, with the document that allows it.

    Declared only where an operator spec or the library's documentation leaves the choice open (or states the
    configuration unsupported); where a spec fixes the behaviour (an ONNX attribute an engine ignores) the
    finding stays a bug. It covers a finding of one of ``kinds`` whose model has a layer of one of
    ``layer_classes`` (empty: any class) whose config holds, for each ``attributes`` pair ``(name, values)``,
    one of ``values`` (``"dtype"`` compares the dtype policy's name); with ``at_layer`` that layer must be the
    localized one when the finding is localized. ``message``: a regular expression searched in the verdict's
    message (empty: any). ``source`` is the document (a URL, or a spec and its section) and ``quote`` its words.
    """

    behaviour: str
    source: str
    quote: str
    kinds: tuple[str, ...]
    example: DifferenceExample
    layer_classes: tuple[str, ...] = ()
    attributes: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    message: str = ""
    at_layer: bool = True


# When a library's message mask applies among memo's own masks of a bug signature's message
# (:func:`memo.triage.masks.normalize_message`): on the message as written (blanks collapsed, colour codes
# removed, printed sets sorted); once addresses, paths, graph names, quoted names and shapes read ADDR, PATH,
# NAME and SHAPE; once generated names and numbers read NAME and N too.
MASK_STAGES: tuple[str, ...] = ("written", "shapes", "numbers")


@dataclass(frozen=True)
class MessageMask:
    """A detail a library writes into its messages that differs between two occurrences of one bug.

    Every bug signature's message, whichever library wrote it, has ``pattern`` (a regular expression) replaced
    by ``replacement`` (a :func:`re.sub` template) at ``stage`` (one of :data:`MASK_STAGES`). ``example``: a
    message as the mask sees it at that stage, which it changes (tests check every declared one).
    """

    pattern: str
    replacement: str
    stage: str = "written"
    example: str = ""

    def __post_init__(self) -> None:
        if self.stage not in MASK_STAGES:
            raise ValueError(f"mask stage must be one of {MASK_STAGES}, not {self.stage!r}")


@dataclass(frozen=True)
class MessageRules:
    """How a library's failures read, for what memo makes of them in the orchestrator.

    ``masks``: details its messages vary in (:class:`MessageMask`). ``declined_nodes``: regular expressions
    with groups ``op`` and ``node``, for a message naming the graph node it declined or failed on;
    ``failing_classes``: with group ``cls`` (a Keras layer class) or ``file`` (a Keras layer's source file,
    ``random_flip.py`` for RandomFlip), for a message naming the layer it failed in (both read by
    :mod:`memo.campaign.known`, in every library's messages). ``declined_features``: regular expressions whose
    first group is the feature (an operator) a refusal names, the signature of an "unsupported" finding, tried
    before memo's generic ones. ``frame_modules``: the top-level Python packages whose traceback frames are the
    library's code, in its bugs' signatures (empty: its distributions' names, "-" read as "_").
    """

    masks: tuple[MessageMask, ...] = ()
    declined_nodes: tuple[str, ...] = ()
    failing_classes: tuple[str, ...] = ()
    declined_features: tuple[str, ...] = ()
    frame_modules: tuple[str, ...] = ()
    # How a crash names the node of the converted file it failed in (groups ``op``, and ``node`` where it says):
    # the root cause of an engine's crash is that operator, not the Keras layer around it (memo.triage.failing_node).
    # Unlike ``declined_nodes``, never read by the known outcomes.
    failing_nodes: tuple[str, ...] = ()


UPSTREAM_STATUSES: tuple[str, ...] = ("active", "maintenance", "legacy", "retired")
UNLIKELY_FIXED: tuple[str, ...] = ("legacy", "retired")  # a report keeps their ready bugs apart


@dataclass(frozen=True)
class Upstream:
    """Whether a library's maintainers still release it: ``status`` is "active" (regular releases),
    "maintenance" (rare releases, few fixes), "legacy" (released, but the code memo reaches is superseded by a
    new path its maintainers fix instead) or "retired" (no more releases; bugs there are not fixed);
    ``tracker`` is where its bugs are filed (empty: unknown), ``reason`` one line of evidence, ``form`` the
    tracker's issue form (:mod:`memo.backends.trackers`; the generic one where memo knows none)."""

    status: str = "active"
    tracker: str = ""
    reason: str = ""
    form: TrackerForm = GENERIC
    where: str = ""  # why this tracker, where a maintainer would look for another one (said beside "File at")

    def __post_init__(self) -> None:
        if self.status not in UPSTREAM_STATUSES:
            raise ValueError(f"upstream status must be one of {UPSTREAM_STATUSES}, not {self.status!r}")

    @property
    def record_only(self) -> bool:
        """Whether its bugs are recorded but not filed: a retired library has no one to fix them (its ``tracker``,
        if any, stays as where its old issues are)."""
        return self.status == "retired"

    @property
    def filing(self) -> str:
        """What an issue text says in place of the tracker's form ("" where the bug is filed at ``tracker``)."""
        return "record only: upstream retired, not filed" if self.record_only else ""


# What memo assumes of a library whose spec says nothing (a user's plugin): maintained, tracker unknown.
UNKNOWN_UPSTREAM = Upstream("active", "", "not declared by its spec")


@dataclass(frozen=True)
class ReproRecipe:
    """How a bug's standalone ``repro.py`` runs this library: with the worker's own code.

    The script inlines the spec's callables (``convert``/``load``/``run``, or a converter's
    ``load``/``export``) with ``inspect.getsource``, plus every module-level function, class, constant
    and import they reference, transitively (:mod:`memo.triage.inline` finds them, so no list here can
    drift from the code). It sets the spec's ``env`` and ``env`` below, and reads the artifact file the
    spec ``consumes`` (``model.keras``, or ``model.onnx`` in the bug folder). That code must be
    standalone: memo imports at module level only (they are inlined), none inside a function body.

    ``requirements``: what ``pip install`` needs for the script (empty: the spec's ``distributions``
    and numpy).
    """

    requirements: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


# The name under which a backend module (memo's own, or a user's plugin file) declares its spec.
SPEC_NAME = "SPEC"


@dataclass(frozen=True)
class LibrarySpec:
    """What every library memo runs declares, a backend (:class:`BackendSpec`) or a converter
    (:class:`ConverterSpec`): its ``name``, the artifact kind it ``consumes`` and ``load(path)``, which turns that
    file into a handle; everything else by keyword.

    ``setup()`` imports the library once per worker and returns ``{distribution: version}``; ``python`` is the
    worker's interpreter (None: the orchestrator's own); specs with the same ``group`` share one worker process.
    """

    name: str
    consumes: str
    _: KW_ONLY
    load: Callable[[Any], Any]
    setup: Callable[[], dict[str, str]] | None = None
    distributions: Sequence[str] = ()
    env: dict[str, str] = field(default_factory=dict)
    python: str | None = None  # interpreter for the worker; None = the orchestrator's own
    group: str | None = None  # specs with the same group share one worker process
    # A backend declares its own phrases; by default only NotImplementedError means "unsupported".
    unsupported_patterns: UnsupportedPatterns = ()
    repro: ReproRecipe | None = None  # None: memo writes no repro.py for this library's bugs
    # Per-model time limit for this library when longer than the executor's (a compiler that needs longer says so).
    timeout_s: float | None = None
    # Behaviour that differs from the reference by design, each with its document (memo.backends.documented).
    documented_differences: tuple[DocumentedDifference, ...] = ()
    upstream: Upstream = UNKNOWN_UPSTREAM  # whether the library is still released, where bugs go, in which form
    messages: MessageRules = MessageRules()  # how its failures read (masks, named nodes and classes, frames)
    # Another library whose code this one runs first (torch.compile compiles onnx2torch's module; tf2onnx at opset 11
    # is tf2onnx): a failure identical to that one's (stage, type, message) on the same model is its finding.
    builds_on: str | None = None
    # The library whose code decides this one's numbers and failures, when another's: Keras on OpenVINO builds an
    # OpenVINO graph (openvino); ONNX Runtime on Keras's export and Keras's export itself run what torch.onnx traced
    # from Keras on torch (keras-torch). A bug here with the same first misbehaving code as a bug there is that bug.
    computes_with: str | None = None
    # The Python code of the library under test that ``--library-coverage`` measures (memo.library_coverage): its
    # package folders, relative to the package root, and the library name each measured set is counted under.
    library_code: tuple[MeasuredCode, ...] = ()
    # Where its kernels run: "cpu", or "cuda" (an NVIDIA GPU; such a backend is available only where the driver
    # shows one, memo.backends.cuda). ``cpu_twin``: the same library on the CPU, against which a GPU backend is
    # also judged (a result the CUDA path alone gets wrong is that path's bug).
    device: str = "cpu"
    cpu_twin: str | None = None
    # Run on one model in ``sample_every`` of a campaign (chosen by the artifact's name, so deterministic);
    # the others record stage "sample" as skipped. A run that names the backend explicitly (triage) always
    # runs it. For engines too costly to run on every model (torch.compile's inductor).
    sample_every: int = 1
    # How a bug's minimal script calls the library in its own idiom (memo.filing writes it); None: no such script.
    idiom: Idiom | None = None
    # The training check (memo.backends.training): ``train(handle, inputs, options)`` prepares the loaded model and
    # returns its stages (name, callable returning arrays) and the check's names; None: the library does not train.
    train: Callable[[Any, ModelInputs, dict[str, Any]], tuple[list[Any], dict[str, Any]]] | None = None

    def __post_init__(self) -> None:
        if self.consumes not in ARTIFACT_KINDS:
            raise ValueError(f"backend {self.name!r}: consumes must be one of {ARTIFACT_KINDS}, not {self.consumes!r}")

    @property
    def worker_group(self) -> str:
        return self.group or self.name

    @property
    def engine_name(self) -> str:
        """The library that executes the model (a converter executes none: its own name)."""
        return self.name


@dataclass(frozen=True)
class BackendSpec(LibrarySpec):
    """A library under test.

    ``run(handle, inputs)`` executes the loaded handle on the model inputs (a dict from input name to array, in
    model-input order) and returns the outputs in model-output order. ``convert(path)`` is an optional first stage
    (a converter shipped with the library, e.g. onnx2torch); when given, ``load`` receives its result instead of
    the path.
    """

    _: KW_ONLY
    run: Callable[[Any, ModelInputs], Outputs]
    convert: Callable[[Path], Any] | None = None
    # The library that executes the model, when two backends run one engine on different converters' files
    # (ONNX Runtime on tf2onnx's file and on Keras's export): None means the backend's own name. The oracle
    # blames a conversion when the same engine agrees with the reference on another converter's file.
    engine: str | None = None
    # Failures that are another library's though this backend reported them (a regular expression searched in
    # the message -> that library): Keras on OpenVINO hands its graph to OpenVINO's device plugins.
    delegates: tuple[tuple[str, str], ...] = ()

    @property
    def engine_name(self) -> str:
        return self.engine or self.name


@dataclass(frozen=True)
class ConverterSpec(LibrarySpec):
    """A converter between artifacts (tf2onnx): its failures are findings against the converter itself.

    ``export(handle, inputs, out_path)`` writes the converted file (of kind ``produces``) and returns the list of
    problems it noticed without raising: a string is an op left unconverted ("unsupported"); a
    :class:`memo.backends.result.ConversionProblem` says its own status ("error" for an exception the
    converter logged and swallowed). Any problem fails the stage and the dependent backends are skipped.
    """

    _: KW_ONLY
    produces: str
    export: Callable[[Any, ModelInputs, Path], list[str]]


AnySpec = BackendSpec | ConverterSpec
