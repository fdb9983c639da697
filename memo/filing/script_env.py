"""The environment a bug's minimal script sets: its worker's settings that are part of the bug (TensorFlow's oneDNN
kernels, tf2onnx's raised optimizer errors), with a comment saying why, but not those that only pin memo's own
throughput; XLA's -O0, which a user's program does not set, only where the bug needs it."""
from __future__ import annotations

from memo.backends import find_spec
from memo.backends.keras_common import ENV_REASONS
from memo.filing.pycode import literal

# Worker settings that only pin memo's own throughput (one thread per worker): not part of a bug.
THREAD_VARIABLES = frozenset({"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TVM_NUM_THREADS"})
# Worker settings a user's program does not set: a script without them is tried first, and keeps them only when it
# needs them (t64's reader: a JAX NaN reproduced without XLA's -O0, which its issue then had to explain; p47's JAX
# NaN gradient showed only under it).
OPTIONAL_ENV = frozenset({"XLA_FLAGS"})


def _script_env(library: str, plain: bool = False) -> dict[str, str]:
    """The environment a script of ``library`` sets: its worker's, but the thread pins (and, ``plain``, the
    :data:`OPTIONAL_ENV`)."""
    spec = find_spec(library)
    dropped = THREAD_VARIABLES | (OPTIONAL_ENV if plain else frozenset())
    return {k: v for k, v in (spec.env if spec else {}).items() if k not in dropped}


def has_optional_env(library: str) -> bool:
    """Whether ``library``'s scripts come in two forms, without and with an :data:`OPTIONAL_ENV` setting."""
    return _script_env(library) != _script_env(library, plain=True)


def env_lines(library: str, plain: bool = False) -> list[str]:
    """The lines setting :func:`_script_env`, with a comment saying why each setting is there."""
    env = _script_env(library, plain)
    reasons = [ENV_REASONS[key] for key in env if key in ENV_REASONS]
    return ["import os", *([f"# {'; '.join(reasons)}"] if reasons else []), f"os.environ.update({literal(env)})"] \
        if env else []


__all__ = ["OPTIONAL_ENV", "THREAD_VARIABLES", "env_lines", "has_optional_env"]
