"""The sentence an issue text adds for a crash of Keras's ONNX export that comes from the input the export traces
the model on: not the user's, but ones of the input signature's shape (``convert_spec_to_tensor`` in
``keras/src/export/export_utils.py``, keras 3.15.1). An integer lookup of a size-1 table then reads index 1, out of
range (t54: ``Embedding(input_dim=1)``, IndexError "index out of range in self"; its reader found the cause missing
from the text). Pure: reads a bug's folder only."""
from __future__ import annotations

from memo.coverage_realizable import AUGMENTATION_LAYERS
from memo.filing.folder import BugFolder

EXPORT_LIBRARY = "keras-export"
OUT_OF_RANGE = "index out of range"
TABLE_SIZES = ("input_dim", "num_tokens", "max_tokens")  # a lookup layer's table size, by the settings holding it


def traced_ones_note(bug: BugFolder) -> str:
    """The cause of an export's out-of-range lookup where the reduced model holds a table of one entry (a sentence
    opening with a space; "" otherwise)."""
    message = str(bug.info.get("error_message") or bug.info.get("message") or "")
    ir = bug.ir()
    if bug.library != EXPORT_LIBRARY or OUT_OF_RANGE not in message or ir is None:
        return ""
    small = [(layer.class_name, key) for layer in ir.body for key in TABLE_SIZES
             if isinstance(layer.config.get(key), int) and layer.config[key] <= 1]
    if not small:
        return ""
    class_name, key = small[0]
    return (f" Keras's export traces the model on a tensor of ones built from the input signature "
            f"(`convert_spec_to_tensor` in `keras/src/export/export_utils.py`), not on the inputs the script gives: "
            f"the {class_name}'s lookup then reads index 1 of a table of {key}=1.")


def torchscript_note(bug: BugFolder) -> str:
    """Which exporter Keras's ONNX export ran for a crash filed at Keras (a sentence opening with a space; "" for
    another bug, and for one arising inside torch.onnx, whose text says it already): keras 3.15.1's
    ``keras/src/export/onnx.py`` uses torch.onnx's TorchScript exporter (``dynamo=False``) whenever an input has a
    dynamic axis, as the batch axis of every model's input signature is, and tries the torch.export-based exporter
    only for static shapes. t56's reader, on four such Keras entries: the text should say that Keras picks the
    TorchScript path, which the torch error asks to report at PyTorch."""
    if bug.library != EXPORT_LIBRARY or bug.kind != "crash" or bug.inside:
        return ""
    return (" Keras exports this model through torch.onnx's TorchScript exporter (`torch.onnx.export(..., "
            "dynamo=False)`): `keras/src/export/onnx.py` takes that path whenever an input has a dynamic axis, as "
            "the batch axis is here, and tries the torch.export-based exporter (`dynamo=True`) only for static "
            "shapes. The failure arises in what Keras gives that exporter to trace.")


def training_mode_note(bug: BugFolder) -> str:
    """Why Keras's export on torch traces a random augmentation layer at all (a sentence opening with a space; ""
    where the reduced model holds none): keras 3.15.1's ``keras/src/export/onnx.py`` calls ``model.eval()`` and then
    traces the model without ``training=False`` (its JAX path passes it), while the augmentation layers' ``call``
    defaults to ``training=True`` (``base_image_preprocessing_layer.py``), which torch's ``eval()`` does not reach:
    the trace runs the random transformation, the identity at inference. t60's reader found it the cause of
    RandomTranslation's "Unsupported prim::Constant kind" (the torch.Generator traced as a constant)."""
    ir = bug.ir()
    if bug.library != EXPORT_LIBRARY or ir is None:
        return ""
    random = [layer.class_name for layer in ir.body if layer.class_name in AUGMENTATION_LAYERS]
    if not random:
        return ""
    return (f" Keras traces the model for export in training mode: on torch, `keras/src/export/onnx.py` calls "
            f"`model.eval()` and then the model without `training=False` (its JAX path passes it), and "
            f"{random[0]}'s `call` defaults to `training=True`, which `eval()` does not change: the trace runs its "
            f"random transformation, where inference is the identity.")


OPTIMIZER_FRAMES = "tf2onnx/optimizer/"


def caught_optimizer_note(bug: BugFolder) -> str:
    """What tf2onnx does by default with a crash of one of its graph optimizers (a sentence opening with a space;
    "" for another bug): ``TF2ONNX_CATCH_ERRORS`` unset, tf2onnx catches the optimizer's exception, logs it and goes on
    with the graph that optimizer did not finish; memo (and the script) set it to FALSE, so the exception surfaces.
    t61's reader found a transpose-optimizer crash that converts by default, which the text did not say."""
    if bug.library not in ("tf2onnx", "tf2onnx-opset11") or bug.kind != "crash" \
            or not any(frame.startswith(OPTIMIZER_FRAMES) for frame in bug.frames):
        return ""
    return (" The exception is raised in one of tf2onnx's graph optimizers: by default tf2onnx catches it, logs it "
            "and writes the model without that optimization; the script sets `TF2ONNX_CATCH_ERRORS=FALSE` (as memo "
            "runs tf2onnx) so that the optimizer's own error shows.")


__all__ = ["caught_optimizer_note", "torchscript_note", "traced_ones_note", "training_mode_note"]
