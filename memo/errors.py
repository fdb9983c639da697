"""The error types memo raises on purpose. Each carries a one-line message meant for the user
(:func:`one_line` makes one from any exception)."""


class MemoError(Exception):
    """Base class: the CLI prints ``str(error)`` on one line and exits with status 2."""


class ModelLoadError(MemoError):
    """A model file is missing, corrupt, or uses something memo cannot represent."""


class UnsupportedLayerError(ModelLoadError):
    """A model uses a layer outside the catalogue (a custom or Lambda layer, for instance)."""


class InvalidModelError(MemoError):
    """A model graph is inconsistent, or Keras rejects it at build time (shape inference)."""


class MutationFailed(MemoError):
    """Retryable: a mutation operator found no applicable site in this model (the campaign tries another seed)."""


class UsageError(MemoError):
    """A bad flag, an unknown backend, operator or seed name."""


def one_line(exc: BaseException) -> str:
    """An exception as one short line, ``Type: message``, for errors shown to the user."""
    text = " ".join(str(exc).split())
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
