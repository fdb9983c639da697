"""Which findings are documented behaviour, and which libraries are still maintained (pure: no library imported).

Each backend or converter spec declares its by-design differences (:class:`DocumentedDifference`, with the
document that allows each) and its upstream status (:class:`Upstream`). Triage asks
:func:`documented_difference` whether a reduced finding is one of them (then it is listed under "documented
differences", never as a bug) and :func:`upstream_of` where the library's bugs go and whether anyone fixes them.
"""
from __future__ import annotations

import re
from typing import Any

from memo.backends import REFERENCE, find_spec
from memo.backends.inner_libraries import LIBRARIES
from memo.backends.spec import KERAS_FRONT_END, NEVER_UNSUPPORTED, UNKNOWN_UPSTREAM, BackendSpec, DocumentedDifference, UnsupportedPhrase, Upstream
from memo.model.ir import Layer, ModelIR

# Keys under which a wrapper layer (Bidirectional, TimeDistributed) keeps the layer it wraps.
_WRAPPED_KEYS = ("layer", "forward_layer")


def documented_difference(library: str, kind: str, ir: ModelIR | None, layer: str | None,
                          message: str) -> DocumentedDifference | None:
    """The declaration of ``library`` (a registered backend or converter name) that covers a finding, or None.

    ``kind`` is the verdict kind ("crash", "inconsistency", ...), ``ir`` the reduced model (None when there is
    none: then only declarations without a layer condition can match), ``layer`` the name of the layer the
    finding was localized to (None: not localized), ``message`` the verdict's message. An unregistered name
    (a plugin) declares nothing.
    """
    spec = find_spec(library)
    if spec is None:
        return None
    for declared in spec.documented_differences:
        if covers(declared, kind, ir, layer, message):
            return declared
    return None


def upstream_of(name: str) -> Upstream:
    """The upstream status a registered backend or converter declares; for any other name (a plugin) "active"
    with no tracker (:data:`memo.backends.spec.UNKNOWN_UPSTREAM`). Keras's shared front end (a bug every Keras
    backend shows, or Keras's optimizer code, blamed as ``keras``) is filed where its backends' bugs are."""
    if name == KERAS_FRONT_END:
        name = REFERENCE  # Keras on TensorFlow: its upstream is Keras's
    spec = find_spec(name)
    if spec is None and name in LIBRARIES:  # a library inside a backend's stack (torch.onnx under Keras's export)
        return LIBRARIES[name].upstream
    return spec.upstream if spec is not None else UNKNOWN_UPSTREAM


def covers(declared: DocumentedDifference, kind: str, ir: ModelIR | None, layer: str | None, message: str) -> bool:
    """Whether one declaration covers the finding (see :func:`documented_difference` for the arguments)."""
    if kind not in declared.kinds:
        return False
    if declared.message and not re.search(declared.message, message or ""):
        return False
    if not declared.layer_classes and not declared.attributes:
        return True
    if ir is None:
        return False
    candidates = ir.body
    if declared.at_layer and layer is not None:
        candidates = [node for node in candidates if node.name == layer]
    return any(_layer_matches(declared, node) for node in candidates)


def _layer_matches(declared: DocumentedDifference, node: Layer) -> bool:
    configs = [node.config, *_wrapped_configs(node.config)]
    classes = {node.class_name, *(_wrapped_classes(node.config))}
    if declared.layer_classes and not classes & set(declared.layer_classes):
        return False
    return all(any(_attribute(config, name) in values for config in configs) for name, values in declared.attributes)


def _wrapped_configs(config: dict[str, Any]) -> list[dict[str, Any]]:
    return [config[key].get("config", {}) for key in _WRAPPED_KEYS if isinstance(config.get(key), dict)]


def _wrapped_classes(config: dict[str, Any]) -> list[str]:
    return [str(config[key].get("class_name")) for key in _WRAPPED_KEYS if isinstance(config.get(key), dict)]


def _attribute(config: dict[str, Any], name: str) -> Any:
    """A config value, the dtype policy by its name (Keras writes ``{"class_name": "DTypePolicy", "config":
    {"name": "float16"}}`` or a plain string)."""
    value = config.get(name)
    if name == "dtype" and isinstance(value, dict):
        return value.get("config", {}).get("name")
    if isinstance(value, list):  # JSON has no tuples; declarations may compare against tuples
        return tuple(value)
    return value



__all__ = ["covers", "declared_refusal", "delegated_library", "documented_difference", "upstream_of"]


def declared_refusal(library: str, exc_type: str | None, message: str) -> str | None:
    """The pattern of ``library``'s declared refusals (its spec's unsupported phrases) that a stored failure
    matches, or None: a failure recorded before memo knew the phrase is judged by what memo knows now. Only the
    exception's own class name is known here (not its bases), so a phrase restricted to types matches by name."""
    spec = find_spec(library)
    if spec is None or not exc_type or exc_type in NEVER_UNSUPPORTED:
        return None
    for phrase in spec.unsupported_patterns:
        if isinstance(phrase, str):
            phrase = UnsupportedPhrase(phrase)
        if phrase.exc_types and exc_type not in phrase.exc_types:
            continue
        if re.search(phrase.pattern, message):
            return phrase.pattern
    return None


def delegated_library(library: str, message: str) -> str | None:
    """The library a failure reported by ``library`` belongs to (its spec's ``delegates``), or None."""
    spec = find_spec(library)
    delegates = spec.delegates if isinstance(spec, BackendSpec) else ()
    return next((other for pattern, other in delegates if re.search(pattern, message)), None)
