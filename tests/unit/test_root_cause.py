"""One entry per root cause (issue 30): findings of one library whose reduced models differ only in the layer
class within one family (or a shared operator), with the same message pattern once Keras's "Exception encountered
when calling X.call()" wrapper and the layer's names are masked, are one bug; different operators, messages and
libraries stay apart. Messages are in the forms the libraries print them (tests/corpus/, the libraries' source)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memo.backends.result import ExecutionResult
from memo.model.ir import Layer, ModelIR
from memo.oracle import Verdict
from memo.bug_files import Reduction
from memo.store.triage import merge_primaries
from memo.triage import dedup
from memo.triage.rekey import own_stack_parts
from memo.triage.signature import culprit_classes, digest, reduced_key, reduced_keys, signature_parts
from tests.unit.triage_store import add_finding, crash_result, make_campaign

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
SITE = "/work/main/.venv/lib/python3.11/site-packages"
PREPROCESSING = f"{SITE}/keras/src/layers/preprocessing/image_preprocessing"


def _snake(class_name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(class_name))


def reduced(class_name: str, config: dict[str, Any] | None = None, shape: list[Any] | None = None) -> ModelIR:
    """A reduced model: one input and the culprit layer, named as Keras names it."""
    layers = [Layer("input_layer", "InputLayer", {"batch_shape": shape or [None, 8, 8, 3], "dtype": "float32"}),
              Layer(_snake(class_name), class_name, config or {}, ["input_layer"])]
    return ModelIR(layers, [layers[-1].name], "reduced")


def crash_parts(backend: str, stage: str, exc_type: str, message: str, traceback: str = "",
                signal: int | None = None) -> dict[str, Any]:
    """The provisional signature parts of a crash, through the real signature code."""
    verdict = Verdict(kind="crash", backend=backend, stage=stage, message=f"{exc_type}: {message}")
    result = ExecutionResult.from_json({"artifact_dir": "gone", "reference": "keras-tensorflow", "backends": {
        backend: {"name": backend, "consumes": "onnx", "stages": [
            {"stage": stage, "status": "crash" if signal else "error", "exc_type": exc_type, "message": message,
             "traceback": traceback, "signal": signal}]}}})
    return signature_parts(verdict, result, None)


def numeric_parts(backend: str, reference: str, ir: ModelIR) -> dict[str, Any]:
    verdict = Verdict(kind="inconsistency", backend=backend, stage="execute", message="max |diff| 0.07")
    return signature_parts(verdict, _judged_against(reference), ir, divergent_layer=ir.outputs[0])


def _judged_against(reference: str) -> ExecutionResult:
    """An execution whose reference is ``reference`` (the signature reads nothing else of it)."""
    return ExecutionResult.from_json({"artifact_dir": "gone", "reference": reference, "backends": {}})


def one_bug(*findings: tuple[dict[str, Any], ModelIR]) -> bool:
    """Whether the findings merge into one entry, as the store merges their keys."""
    keys = {str(i): (float(i), reduced_key(parts, ir).split()) for i, (parts, ir) in enumerate(findings)}
    return set(merge_primaries(keys).values()) == {"0"}


def keras_wrapped(class_name: str, error: str, arguments: str = "inputs") -> str:
    """Keras's wrapper around a layer's error (keras/src/utils/traceback_utils.py)."""
    return (f"Exception encountered when calling {class_name}.call().\n\n\x1b[1m{error}\x1b[0m\n\n"
            f"Arguments received by {class_name}.call():\n  • {arguments}=array(shape=(None, 71, 71, 3), "
            f"dtype=float32)\n  • training=False")


# ---------------------------------------------------------------------------- the duplicates, merged
RANDOM_UNIFORM_CLASSES = ("RandomHue", "RandomGrayscale", "RandomSaturation", "RandomColorDegeneration",
                          "RandomSharpness")


def _openvino_random_uniform(class_name: str) -> dict[str, Any]:
    """Keras-OpenVINO's random.uniform draws with numpy at the symbolic (dynamic) batch size."""
    module = _snake(class_name)
    traceback = (
        'Traceback (most recent call last):\n'
        '  File "/work/main/memo/backends/keras_common.py", line 88, in run\n    outputs = model(inputs)\n'
        f'  File "{SITE}/keras/src/utils/traceback_utils.py", line 122, in error_handler\n'
        '    raise e.with_traceback(filtered_tb) from None\n'
        f'  File "{PREPROCESSING}/base_image_preprocessing_layer.py", line 110, in call\n'
        '    transformation = self.get_random_transformation(data, training=training)\n'
        f'  File "{PREPROCESSING}/{module}.py", line 82, in get_random_transformation\n'
        '    factor = self.backend.random.uniform((batch_size,), seed=seed)\n'
        f'  File "{SITE}/keras/src/backend/openvino/random.py", line 92, in uniform\n'
        '    random_values = rng.uniform(minval, maxval, size=shape).astype(dtype)\n'
        '  File "numpy/random/_generator.pyx", line 1137, in numpy.random._generator.Generator.uniform\n'
        "TypeError: 'OpenVINOKerasTensor' object cannot be interpreted as an integer\n")
    message = keras_wrapped(class_name, "'OpenVINOKerasTensor' object cannot be interpreted as an integer", "data")
    return crash_parts("keras-openvino", "execute", "TypeError", message, traceback)


def test_keras_openvinos_static_shape_random_uniform_is_one_bug_through_five_layers() -> None:
    findings = [(_openvino_random_uniform(name), reduced(name)) for name in RANDOM_UNIFORM_CLASSES]
    # what the issue measured: five provisional bugs and five exact keys (each class's module is a frame)
    assert len({digest(parts) for parts, _ir in findings}) == 5
    assert len({reduced_keys(parts, ir)[0] for parts, ir in findings}) == 5
    assert one_bug(*findings)


ADAPTIVE = tuple(f"Adaptive{op}Pooling{d}D" for op in ("Average", "Max") for d in (1, 2, 3))


def _adaptive_traced(class_name: str) -> dict[str, Any]:
    """The tf.function trace of tests/corpus/native_crash.json (AdaptiveMaxPooling2D's window of 5 over 4),
    as each adaptive pooling prints it."""
    data = json.loads((CORPUS / "native_crash.json").read_text())
    stage = next(s for s in data["result"]["backends"]["tf2onnx"]["stages"] if s["status"] == "error")
    op = ("AvgPool" if "Average" in class_name else "MaxPool") + ("3D" if class_name.endswith("3D") else "")
    message = stage["message"].replace("= MaxPool[", f"= {op}[").replace("AdaptiveMaxPooling2D", class_name)
    return crash_parts("tf2onnx", "trace", "ValueError", message)


def test_keras_tensorflows_adaptive_pooling_window_is_one_bug_for_all_six_poolings() -> None:
    traced = [(_adaptive_traced(name), reduced(name, {"output_size": 1})) for name in ADAPTIVE]
    assert len({reduced_keys(parts, ir)[0] for parts, ir in traced}) == 6
    assert one_bug(*traced)
    # eagerly the same window kills the worker (SIGFPE): a shared operator merges even a signal
    died = [(crash_parts("keras-tensorflow", "execute", "WorkerDied", "worker process killed by signal 8 (SIGFPE)",
                         signal=8), reduced(name, {"output_size": 1})) for name in ADAPTIVE]
    assert one_bug(*died)
    assert not one_bug(traced[0], died[0]), "a trace error and a native crash are two symptoms"


def _spectral(inner: str, frame: str) -> tuple[dict[str, Any], ModelIR]:
    """Keras's torch-based ONNX export of SpectralNormalization: torch.jit meets the wrapped layer's kernel."""
    message = keras_wrapped(inner, "Cannot insert a Tensor that requires grad as a constant. Consider making it a "
                            "parameter or input, or detaching the gradient\nTensor:\n-0.7719\n 0.7127\n"
                            "[ torch.FloatTensor{4,1} ]")
    traceback = ('Traceback (most recent call last):\n'
                 f'  File "{SITE}/keras/src/layers/{frame}", line 150, in call\n    x = self.op(x)\n'
                 f'  File "{SITE}/torch/jit/_trace.py", line 1276, in _trace_impl\n    raise\n'
                 f"RuntimeError: {message}\n")
    config = {"layer": {"module": "keras.layers", "class_name": inner, "config": {}}, "power_iterations": 1}
    return crash_parts("keras-export", "convert", "RuntimeError", message, traceback), \
        reduced("SpectralNormalization", config)


def test_spectral_normalizations_export_failure_is_one_bug_whatever_layer_it_wraps() -> None:
    findings = [_spectral("Dense", "core/dense.py"), _spectral("Conv1D", "convolutional/base_conv.py"),
                _spectral("Conv2D", "convolutional/base_conv.py"), _spectral("Conv3D", "convolutional/base_conv.py"),
                _spectral("Conv2DTranspose", "convolutional/base_conv_transpose.py")]
    assert len({reduced_keys(parts, ir)[0] for parts, ir in findings}) == 3  # frames: three modules
    assert one_bug(*findings)
    assert [culprit_classes(ir) for _parts, ir in findings[:2]] == [["SpectralNormalization(Dense)"],
                                                                     ["SpectralNormalization(Conv1D)"]]


def test_tf2onnx_at_both_opsets_is_one_tf2onnx_bug() -> None:
    message = ("make_sure failure: output dims need to be known")
    traceback = ('Traceback (most recent call last):\n'
                 f'  File "{SITE}/tf2onnx/onnx_opset/nn.py", line 470, in version_1\n'
                 '    utils.make_sure(new_output_shape.count(-1) <= 0, "output dims need to be known")\n'
                 f'  File "{SITE}/tf2onnx/utils.py", line 306, in make_sure\n'
                 '    raise ValueError("make_sure failure: " + error_msg % args)\n'
                 f"ValueError: {message}\n")
    ir = reduced("Conv2DTranspose", {"filters": 2, "kernel_size": 3})
    both = [(crash_parts(name, "convert", "ValueError", message, traceback), ir)
            for name in ("tf2onnx", "tf2onnx-opset11")]
    assert both[0][0]["library"] != both[1][0]["library"]
    assert reduced_keys(*both[0]) == reduced_keys(*both[1])
    assert one_bug(*both)


def _onnx2pytorch_conv(class_name: str) -> tuple[dict[str, Any], ModelIR]:
    """onnx2pytorch reads a Conv's weight from the initializers only: tf2onnx's ConvLSTM computes it."""
    traceback = ('Traceback (most recent call last):\n'
                 f'  File "{SITE}/onnx2pytorch/convert/operations.py", line 189, in convert_operations\n'
                 '    op = convert_layer(node, "Conv", params)\n'
                 f'  File "{SITE}/onnx2pytorch/convert/layer.py", line 72, in convert_layer\n'
                 '    weight, bias = extract_params(params)\n'
                 f'  File "{SITE}/onnx2pytorch/convert/layer.py", line 39, in extract_params\n'
                 '    raise ValueError("Unexpected number of parameters: {}".format(param_length))\n'
                 "ValueError: Unexpected number of parameters: 0\n")
    parts = crash_parts("onnx2pytorch", "convert", "ValueError", "Unexpected number of parameters: 0", traceback)
    return parts, reduced(class_name, {"filters": 2, "kernel_size": 2})


def test_onnx2pytorchs_non_initializer_weights_are_one_bug_for_the_three_conv_lstms() -> None:
    findings = [_onnx2pytorch_conv(name) for name in ("ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D")]
    assert len({reduced_keys(parts, ir)[0] for parts, ir in findings}) == 3
    assert one_bug(*findings)


def test_onnx2pytorchs_conv_built_without_channels_is_one_bug_whatever_rank_it_picks() -> None:
    # p30's campaign: ConvLSTM1D builds a Conv2d, ConvLSTM3D a Conv3d, both without channels (one root cause)
    findings = []
    for class_name, conv in (("ConvLSTM1D", "Conv2d"), ("ConvLSTM3D", "Conv3d")):
        message = f"{conv}.__init__() missing 2 required positional arguments: 'in_channels' and 'out_channels'"
        traceback = ('Traceback (most recent call last):\n'
                     f'  File "{SITE}/onnx2pytorch/convert/layer.py", line 60, in convert_layer\n'
                     f'    layer = conv_class(**kwargs)\nTypeError: {message}\n')
        findings.append((crash_parts("onnx2pytorch", "convert", "TypeError", message, traceback),
                         reduced(class_name, {"filters": 2, "kernel_size": 2})))
    assert reduced_keys(*findings[0])[0] != reduced_keys(*findings[1])[0]
    assert one_bug(*findings)


def _openvino_loop(class_name: str, canonical: int, carried: int, node: int) -> tuple[dict[str, Any], ModelIR]:
    """OpenVINO's ONNX Loop translator (tests/integration/test_backend_openvino_tvm.py's message)."""
    message = ("Check 'false' failed at src/frontends/common/src/frontend.cpp:54:\nFrontEnd API failed with "
               "GeneralFailure:\nModel wasn't fully converted. Failed operations detailed log:\n-- Loop-"
               f"{node} with a message:\nCheck 'canonical inputs size ({canonical}), does not match the sum of loop "
               f"carried dependencies and two mandatory inputs ({carried})' failed\nSummary:\n-- Conversion is "
               f"failed for: Loop-{node}\n")
    traceback = ('Traceback (most recent call last):\n'
                 f'  File "{SITE}/openvino/tools/ovc/convert_impl.py", line 412, in driver\n'
                 '    graph = moc_emit_ir(...)\n'
                 f"RuntimeError: {message}")
    return crash_parts("openvino", "convert", "RuntimeError", message, traceback), \
        reduced(class_name, {"units": 4} if "Conv" not in class_name else {"filters": 2, "kernel_size": 2})


def test_an_openvino_loop_conversion_failure_is_one_bug_from_lstm_gru_and_convlstm1d() -> None:
    findings = [_openvino_loop("LSTM", 10, 7, 12), _openvino_loop("GRU", 9, 6, 873),
                _openvino_loop("ConvLSTM1D", 12, 9, 40)]
    assert len({reduced_keys(parts, ir)[0] for parts, ir in findings}) == 3
    assert one_bug(*findings)


def test_a_bicubic_resize_difference_is_one_bug_in_resizing_and_upsampling2d() -> None:
    resizing = reduced("Resizing", {"height": 9, "width": 9, "interpolation": "bicubic"}, [None, 6, 6, 3])
    upsampling = reduced("UpSampling2D", {"size": [2, 2], "interpolation": "bicubic"}, [None, 6, 6, 3])
    findings = [(numeric_parts("openvino", "keras-tensorflow", ir), ir) for ir in (resizing, upsampling)]
    assert findings[0][0]["layer"] == "Resizing" and findings[1][0]["layer"] == "UpSampling2D"
    assert one_bug(*findings)


# ---------------------------------------------------------------------------- different bugs stay apart
def test_a_different_interpolation_or_an_unshared_layer_is_a_different_numeric_bug() -> None:
    bicubic = reduced("Resizing", {"interpolation": "bicubic"})
    nearest = reduced("UpSampling2D", {})  # Keras's default: nearest
    assert not one_bug(*[(numeric_parts("openvino", "keras-tensorflow", ir), ir) for ir in (bicubic, nearest)])
    hue, saturation = reduced("RandomHue"), reduced("RandomSaturation")  # one family, no shared operator
    assert not one_bug(*[(numeric_parts("openvino", "keras-tensorflow", ir), ir) for ir in (hue, saturation)])
    assert not one_bug((numeric_parts("openvino", "keras-tensorflow", bicubic), bicubic),
                       (numeric_parts("onnxruntime", "keras-tensorflow", bicubic), bicubic))


def test_a_different_failing_operator_message_or_library_is_a_different_bug() -> None:
    loop, _ = _openvino_loop("LSTM", 10, 7, 12)
    scan_parts, _ = _openvino_loop("GRU", 9, 6, 873)
    scan_parts = {**scan_parts, "message": scan_parts["message"].replace("Loop", "Scan")}
    assert not one_bug((loop, reduced("LSTM")), (scan_parts, reduced("GRU"))), "another ONNX operator failed"
    hue = _openvino_random_uniform("RandomHue")
    other = {**_openvino_random_uniform("RandomGrayscale"),
             "message": "'OpenVINOKerasTensor' object has no attribute 'numpy'"}
    assert not one_bug((hue, reduced("RandomHue")), (other, reduced("RandomGrayscale"))), "another message"
    on_jax = {**hue, "library": "keras-jax"}
    assert not one_bug((hue, reduced("RandomHue")), (on_jax, reduced("RandomGrayscale"))), "another library"
    as_value_error = {**hue, "exception": "ValueError"}
    assert not one_bug((hue, reduced("RandomHue")), (as_value_error, reduced("RandomSaturation")))
    # the same words in layers of two families are two code paths
    conv = _onnx2pytorch_conv("ConvLSTM1D")
    assert not one_bug(conv, (conv[0], reduced("Conv1D", {"filters": 2, "kernel_size": 2})))


def test_native_crashes_of_one_family_stay_apart_without_a_shared_operator() -> None:
    died = crash_parts("openvino", "execute", "WorkerDied", "worker process killed by signal 11 (SIGSEGV)", signal=11)
    assert not one_bug((died, reduced("Conv1D", {"filters": 2, "kernel_size": 2})),
                       (died, reduced("Conv2DTranspose", {"filters": 2, "kernel_size": 2})))
    assert one_bug((died, reduced("Conv1D", {"filters": 2, "kernel_size": 3})),
                   (died, reduced("Conv1D", {"filters": 5, "kernel_size": 2}))), "attributes alone do not split"


# ---------------------------------------------------------------------------- the store and the report's data
def test_merge_groups_are_transitive_and_the_earliest_bug_is_the_entry() -> None:
    primary = merge_primaries({"b": (2.0, ["k1"]), "a": (1.0, ["k2"]), "c": (3.0, ["k1", "k2"]),
                               "d": (0.5, ["k3"])})
    assert primary == {"a": "a", "b": "a", "c": "a", "d": "d"}


def test_merged_bugs_keep_their_ids_and_the_entry_lists_its_variants(tmp_path: Path) -> None:
    with make_campaign(tmp_path / "c") as store:
        before = set(dedup.update_bugs(store).all)
        for i, name in enumerate(RANDOM_UNIFORM_CLASSES[:3]):
            message = keras_wrapped(name, "'OpenVINOKerasTensor' object cannot be interpreted as an integer", "data")
            add_finding(store, 10 + i, reduced(name), crash_result(message, "TypeError"),
                        [("crash", "onnxruntime", "execute", f"TypeError: {message}")])
        update = dedup.update_bugs(store)
        assert set(update.all) >= before and not update.stale  # earlier bugs keep their ids
        new = sorted((bug for bug in store.triage.load_bugs() if bug.id in update.new),
                     key=lambda bug: (bug.first_seen, bug.id))
        assert len(new) == 3
        for bug, name in zip(new, RANDOM_UNIFORM_CLASSES):
            folder = tmp_path / "bugs" / bug.id
            folder.mkdir(parents=True)
            (folder / "ir.json").write_text(reduced(name).dumps())
            store.triage.update_bug(bug.id, bug_dir=str(folder))
            store.triage.merge_bug(bug.id, reduced_key(bug.parts, reduced(name)))
        rows = {bug.id: bug for bug in store.triage.load_bugs()}
        assert [rows[bug.id].merged_into for bug in new] == [None, new[0].id, new[0].id]
        assert all(rows[bug_id].merged_into is None for bug_id in before)  # nothing else merged
        entry_variants = dedup.variants([rows[bug.id] for bug in new])
        assert [(v["library"], v["layer_classes"], v["findings"]) for v in entry_variants] == [
            ("onnxruntime", [name], 1) for name in RANDOM_UNIFORM_CLASSES[:3]]
        assert entry_variants[1]["bugs"] == [new[1].id]


def test_a_bug_reduced_once_more_leaves_its_group_when_its_key_changes(tmp_path: Path) -> None:
    with make_campaign(tmp_path / "c") as store:
        dedup.update_bugs(store)
        first, second = sorted(store.triage.load_bugs(), key=lambda bug: (bug.first_seen, bug.id))[:2]
        store.triage.merge_bug(first.id, "k-shared")
        assert store.triage.merge_bug(second.id, "k-other k-shared") == first.id
        assert store.triage.merge_bug(second.id, "k-other") is None
        assert store.triage.load_bug(second.id).merged_into is None



def test_a_reduced_bug_is_the_entry_over_an_earlier_unreduced_one_of_its_group(tmp_path: Path) -> None:
    # t62: `memo report` keyed an older bug's unreduced folder (written from its kept artifact) and the reduced,
    # ready onnx2pytorch entry merged into it
    with make_campaign(tmp_path / "c") as store:
        dedup.update_bugs(store)
        older, newer = sorted(store.triage.load_bugs(), key=lambda bug: (bug.first_seen, bug.id))[:2]
        store.triage.update_bug(newer.id, reduction={"status": Reduction.DONE})
        store.triage.update_bug(older.id, reduction={"status": Reduction.NOT_REDUCED})
        store.triage.merge_bug(newer.id, "k-shared")
        assert store.triage.merge_bug(older.id, "k-shared") == newer.id
        assert store.triage.load_bug(newer.id).merged_into is None
        store.triage.update_bug(older.id, reduction={"status": Reduction.KNOWN.saying("M-0001, adopted")})
        assert store.triage.merge_bug(older.id, "k-shared") is None  # both standing: the earliest again
        assert store.triage.load_bug(newer.id).merged_into == older.id

def test_a_numeric_bug_is_its_first_misbehaving_layer_whatever_follows_it() -> None:
    # p30: TensorFlow's MelSpectrogram alone, and followed by UnitNormalization (the reduced model's output)
    alone = reduced("MelSpectrogram", {"sequence_length": 5}, [None, 350])
    followed = ModelIR([*alone.layers, Layer("unit_normalization", "UnitNormalization", {}, ["mel_spectrogram"])],
                       ["unit_normalization"], "reduced")
    first = numeric_parts("keras-tensorflow", "keras-jax", alone)
    second = signature_parts(Verdict(kind="inconsistency", backend="keras-tensorflow", stage="execute",
                                     message="max |diff| 3"),
                             _judged_against("keras-jax"), followed, divergent_layer="mel_spectrogram")
    assert reduced_keys(first, alone)[0] != reduced_keys(second, followed)[0]
    assert one_bug((first, alone), (second, followed))
    # the same first layer in another library is another bug
    assert not one_bug((first, alone), (numeric_parts("keras-openvino", "keras-tensorflow", alone), alone))


def test_average_pooling_of_every_rank_with_one_padding_is_one_numeric_bug() -> None:
    one = reduced("AveragePooling1D", {"pool_size": 3, "padding": "same"}, [None, 9, 3])
    three = reduced("AveragePooling3D", {"pool_size": [4, 2, 2], "padding": "same"}, [None, 6, 6, 6, 2])
    valid = reduced("AveragePooling3D", {"pool_size": [4, 2, 2]}, [None, 6, 6, 6, 2])
    findings = [(numeric_parts("keras-torch", "keras-tensorflow", ir), ir) for ir in (one, three, valid)]
    assert one_bug(findings[0], findings[1])
    assert not one_bug(findings[0], findings[2])  # another padding rule: another code path


def test_a_wrapper_failing_in_the_code_of_the_layer_it_wraps_is_that_layers_bug() -> None:
    message = "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3, 5]"
    plain = reduced("LayerNormalization", {"axis": -1})
    wrapped = reduced("TimeDistributed", {"layer": {"class_name": "LayerNormalization", "config": {"axis": -1}}})
    findings = [(crash_parts("keras-torch", "execute", "RuntimeError", keras_wrapped(cls, message)), ir)
                for cls, ir in (("LayerNormalization", plain), ("TimeDistributed", wrapped))]
    assert one_bug(*findings)


def test_a_numeric_bug_computed_by_another_backends_kernels_is_that_backends() -> None:
    # p30: ONNX Runtime on Keras's export ran what torch.onnx traced from Keras on torch's "same" average pooling;
    # Keras on OpenVINO and the openvino backend shared one OpenVINO Interpolate defect
    pool = reduced("AveragePooling3D", {"pool_size": [4, 2, 2], "padding": "same"}, [None, 6, 6, 6, 2])
    assert one_bug((numeric_parts("keras-torch", "keras-tensorflow", pool), pool),
                   (numeric_parts("onnxruntime-keras-export", "keras-tensorflow", pool), pool))
    up = reduced("UpSampling2D", {"size": [2, 2], "interpolation": "bicubic"}, [None, 6, 6, 3])
    assert one_bug((numeric_parts("openvino", "keras-tensorflow", up), up),
                   (numeric_parts("keras-openvino", "keras-tensorflow", up), up))
    # ONNX Runtime on tf2onnx's file runs its own kernels: not keras-torch's bug
    assert not one_bug((numeric_parts("keras-torch", "keras-tensorflow", pool), pool),
                       (numeric_parts("onnxruntime", "keras-tensorflow", pool), pool))


def test_numeric_findings_float64_judges_differently_stay_apart() -> None:
    # p30: Keras on OpenVINO's clip of NaN (a confirmed Keras defect) and OpenVINO's ONNX Clip of NaN (left open
    # by the ONNX spec) must not become one entry filed in either section
    auto = reduced("AutoContrast", {"value_range": [0, 255]}, [None, 1, 1, 3])
    confirmed = {**numeric_parts("keras-openvino", "keras-tensorflow", auto), "truth": "confirmed"}
    special = {**numeric_parts("openvino", "keras-tensorflow", auto), "truth": "ill-conditioned"}
    assert not one_bug((confirmed, auto), (special, auto))
    assert one_bug((confirmed, auto), ({**special, "truth": "confirmed"}, auto))


def test_an_engine_that_differs_from_the_onnx_reference_is_never_one_bug_with_another_stack() -> None:
    # p40: OpenVINO's ONNX Resize(cubic) ignores exclude_outside (onnx.reference on tf2onnx's file blames the engine)
    # while Keras's OpenVINO lowering of bicubic UpSampling2D is Keras's code: two trackers, two entries
    up = reduced("UpSampling2D", {"size": [2, 2], "interpolation": "bicubic"}, [None, 6, 6, 3])
    blames_engine = {"onnx_reference": {"decision": "engine", "blamed": "openvino"}}
    engine = own_stack_parts(numeric_parts("openvino", "keras-tensorflow", up), blames_engine)
    keras_openvino = numeric_parts("keras-openvino", "keras-tensorflow", up)
    assert not one_bug((engine, up), (keras_openvino, up))
    assert one_bug((numeric_parts("openvino", "keras-tensorflow", up), up), (keras_openvino, up))  # no opinion
    assert one_bug((engine, up), (engine, reduced("Resizing", {"interpolation": "bicubic"}))), "one OpenVINO bug"
    agrees = own_stack_parts(numeric_parts("openvino", "keras-tensorflow", up), {"onnx_reference": {
        "decision": "agrees"}})
    assert one_bug((agrees, up), (keras_openvino, up))
    # no other stack computes with MXNet: its findings merge whatever their opinion (p40's crash-mxnet pair)
    mxnet = crash_parts("mxnet", "convert", "MXNetError", "Cannot find argument 'axes' in Reshape")
    assert one_bug((own_stack_parts(mxnet, blames_engine), reduced("Reshape")), (mxnet, reduced("Reshape")))


# long150: Masking then Softmax(axis=-1), "The `mask` must be broadcastable to `inputs`", raised in Keras's own
# keras/src/layers/activations/softmax.py: every backend failing (Keras's front-end finding) and keras-tensorflow alone
# failing on another model are one Keras defect; SimpleRNN with a mask failing under torch.nn on keras-torch is not
SOFTMAX_MASK = ("Exception encountered when calling Softmax.call(). The `mask` must be broadcastable to `inputs`. Each "
                "mask dimension must be N or match the corresponding input dimension. Received: inputs.shape=SHAPE, "
                "mask.shape=SHAPE")
KERAS_CORE = ["keras/src/layers/activations/softmax.py:call", "keras/src/utils/traceback_utils.py:error_handler"]


def _crash(library: str, message: str, frames: list[str], exception: str = "ValueError") -> dict[str, Any]:
    return {"kind": "crash", "library": library, "stage": "execute", "exception": exception, "message": message,
            "frames": frames}


def test_a_crash_in_keras_core_on_one_backend_is_one_bug_with_keras_and_other_backends() -> None:
    masked = ModelIR([Layer("input", "InputLayer", {"batch_shape": [None, 30, 5], "dtype": "float32"}),
                      Layer("masking", "Masking", {}, ["input"]), Layer("softmax", "Softmax", {}, ["masking"])],
                     ["softmax"], "reduced")
    front_end = _crash("keras", SOFTMAX_MASK, KERAS_CORE)
    assert one_bug((_crash("keras-tensorflow", SOFTMAX_MASK, KERAS_CORE), masked), (front_end, masked))
    assert one_bug((_crash("keras-tensorflow", SOFTMAX_MASK, KERAS_CORE), masked),
                   (_crash("keras-jax", SOFTMAX_MASK, KERAS_CORE), masked))
    # a backend's own code (keras/src/backend/torch/) or the library under it stays that backend's
    rnn = "Exception encountered when calling SimpleRNN.call(). 'tuple' object has no attribute 'shape'"
    torch_frames = ["torch/nn/modules/module.py:_call_impl", "torch/nn/modules/module.py:_wrapped_call_impl"]
    backend_frames = ["keras/src/backend/torch/rnn.py:rnn", "keras/src/utils/traceback_utils.py:error_handler"]
    for frames in (torch_frames, backend_frames):
        assert not one_bug((_crash("keras-torch", rnn, frames, "AttributeError"), masked),
                           (_crash("keras", rnn, frames, "AttributeError"), masked))
        assert not one_bug((_crash("keras-torch", rnn, frames, "AttributeError"), masked),
                           (_crash("keras-jax", rnn, frames, "AttributeError"), masked))


def test_an_engine_wrong_only_through_nan_is_one_bug_with_another_stack_on_that_library() -> None:
    # long150: AutoContrast on a 1x1 image (max == min: 255/0 inside, NaN replaced by the input): OpenVINO's Minimum
    # and Maximum return the operand that is not NaN, through its ONNX frontend (255) and Keras's OpenVINO clip (0)
    auto = reduced("AutoContrast", {"value_range": [0, 255]}, [None, 1, 1, 1])
    confirmed = {"decision": "confirmed", "special_values": True}
    engine = {"onnx_reference": {"decision": "engine", "blamed": "openvino", "nan_not_propagated": 0},
              "truth": confirmed}
    onnx_side = {**own_stack_parts(numeric_parts("openvino", "keras-tensorflow", auto), engine), "truth": "confirmed"}
    keras_side = {**numeric_parts("keras-openvino", "keras-tensorflow", auto), "truth": "confirmed"}
    assert one_bug((onnx_side, auto), (keras_side, auto))
    finite = {**engine, "truth": {"decision": "confirmed", "special_values": False}}
    kept = {**own_stack_parts(numeric_parts("openvino", "keras-tensorflow", auto), finite), "truth": "confirmed"}
    assert not one_bug((kept, auto), (keras_side, auto)), "a finite difference stays its stack's own (p40)"


def test_one_native_check_failing_is_one_bug_through_both_openvino_stacks() -> None:
    from memo.triage.signature import NATIVE_SITE, native_site

    # s50: OpenVINO's CPU snippets check failing alike for Keras on OpenVINO (an LSTM, EinsumDense and
    # SpectralNormalization model) and for OpenVINO's ONNX frontend (a SimpleRNN model): one check at one line
    def layout(check: str, line: int) -> str:
        return (f"Exception from src/inference/src/cpp/core.cpp:117:\nException from src/inference/src/dev/plugin.cpp:"
                f"54:\nException from src/common/snippets/src/utils/utils.cpp:{line}:\n{check}\n")
    message = layout("Layout rank can't be larger than tensor rank", 71)
    assert native_site(message) == "src/common/snippets/src/utils/utils.cpp:71"
    assert native_site("ValueError: the mask must be broadcastable") is None

    def sited(backend: str, stage: str, text: str) -> dict[str, Any]:
        parts = crash_parts(backend, stage, "RuntimeError", text)
        return {**parts, NATIVE_SITE: native_site(text)}
    through_keras = sited("keras-openvino", "execute", message)
    through_onnx = sited("openvino", "load", message)
    assert one_bug((through_keras, reduced("EinsumDense", {"equation": "abc,cd->abd"}, [None, 4, 3])),
                   (through_onnx, reduced("SimpleRNN", shape=[None, 4, 3])))
    # another check, or the same check line with another failure: two bugs
    other = sited("openvino", "load", layout("Layout rank can't be larger than tensor rank", 88))
    assert not one_bug((through_keras, reduced("EinsumDense", {"equation": "abc,cd->abd"}, [None, 4, 3])),
                       (other, reduced("SimpleRNN", shape=[None, 4, 3])))
