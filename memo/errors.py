"""The error types memo raises on purpose. Each carries a one-line message meant for the user."""


class MemoError(Exception):
    """Base class: the CLI prints ``str(error)`` on one line and exits with status 2."""


class ModelLoadError(MemoError):
    """A model file is missing, corrupt, or uses something memo cannot represent."""


class UnsupportedLayerError(ModelLoadError):
    """A model uses a layer outside the catalogue (a custom or Lambda layer, for instance)."""


class InvalidModelError(MemoError):
    """A model graph is inconsistent, or Keras rejects it at build time (shape inference)."""


class UsageError(MemoError):
    """A bad flag, an unknown backend, operator or seed name."""
