"""The training check's ``prepare`` stage (:mod:`memo.backends.training`): the layers random in training made
deterministic, or the model left out. Stdlib only at module level (the model's layers are Keras's, in the worker)."""
from __future__ import annotations

import inspect
from typing import Any, Callable

# Layer classes random in training, and the settings that turn their randomness off (set to 0 in the worker).
NEUTRALIZED: dict[str, tuple[str, ...]] = {
    **{name: ("rate",) for name in ("Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D",
                                    "GaussianDropout", "AlphaDropout")},
    "GaussianNoise": ("stddev",),
    "Attention": ("dropout",), "AdditiveAttention": ("dropout",),  # MultiHeadAttention's is a Dropout sublayer
    **{name: ("dropout", "recurrent_dropout") for name in ("SimpleRNNCell", "LSTMCell", "GRUCell", "ConvLSTMCell")},
}

class RandomInTraining(NotImplementedError):
    """The model has a layer random in training mode that neither a setting nor inference mode makes deterministic,
    or nothing to differentiate: the check leaves the model out (status ``unsupported`` at stage ``prepare``)."""


def _in_inference_mode(call: Callable[..., Any]) -> Callable[..., Any]:
    """``call`` with ``training=False`` whatever its caller passes."""
    def call_in_inference_mode(*args: Any, **kwargs: Any) -> Any:
        kwargs["training"] = False
        return call(*args, **kwargs)
    return call_in_inference_mode


def neutralize(model: Any) -> list[str]:
    """Set every setting of :data:`NEUTRALIZED` to 0 in ``model``'s layers (nested ones included); any other layer
    that draws random numbers (a random augmentation layer: RandomFlip, RandomContrast, ...) runs as in inference,
    where Keras's augmentation layers are deterministic (the identity, or RandomCrop's central crop), so that the rest
    of the model is checked; what was changed, as notes. Raises :class:`RandomInTraining` for a random layer whose
    ``call`` takes no ``training`` argument."""
    notes: list[str] = []
    random_left: list[str] = []
    for layer in model._flatten_layers(include_self=False, recursive=True):  # an RNN's cell is one of them
        settings = NEUTRALIZED.get(type(layer).__name__)
        for attribute in settings or ():
            value = getattr(layer, attribute, 0)
            if value:
                setattr(layer, attribute, 0.0)
                notes.append(f"{layer.name}: {type(layer).__name__}.{attribute} {value:g} -> 0")
        if settings is None and getattr(layer, "_seed_generators", None):
            if "training" in inspect.signature(layer.call).parameters:
                layer.call = _in_inference_mode(layer.call)
                notes.append(f"{layer.name}: {type(layer).__name__} runs as in inference")
            else:
                random_left.append(f"{layer.name} ({type(layer).__name__})")
    if random_left:
        raise RandomInTraining(f"left out of the training check: {', '.join(random_left)} random in training mode, "
                               f"with no setting that makes it deterministic")
    return notes


__all__ = ["NEUTRALIZED", "RandomInTraining", "neutralize"]
