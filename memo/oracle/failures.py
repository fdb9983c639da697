"""Verdicts on failures: crashes, hangs and refusals, one finding per shared cause, and ``invalid`` when
nothing reached the model.

When every Keras backend (they all consume the same ``.keras`` file) raises at load/execute on a model that
Keras' symbolic build accepted (every model memo executes was), the shared front end is at fault: ONE crash
against backend ``keras`` at stage ``execute``, listing each backend's exception; a backend whose exception
type differs from the others' keeps its own crash. A converter failing at stage ``trace`` (memo's Keras load
and ``tf.function`` trace before tf2onnx's freeze: TensorFlow's graph mode) is ONE finding against
keras-tensorflow at stage ``tf-function``, however many conversions reported it.
"""
from __future__ import annotations

from collections import defaultdict
from memo.backends import REFERENCE, find_spec
from memo.backends.result import FAILURES, TRACE_STAGE, BackendResult, ExecutionResult, StageResult
from memo.backends.spec import KERAS_FRONT_END
from memo.devices import cpu_twin, same_on_both_devices
from memo.kinds import StageStatus, VerdictKind
from memo.oracle.verdict import Failure, FrontEnd, Verdict

TF_FUNCTION_STAGE = "tf-function"
KIND_OF_STATUS = {StageStatus.ERROR.value: VerdictKind.CRASH.value, StageStatus.CRASH.value: VerdictKind.CRASH.value,
                   StageStatus.HANG.value: VerdictKind.HANG.value,
                   StageStatus.UNSUPPORTED.value: VerdictKind.UNSUPPORTED.value}


def _detail(stage: StageResult) -> str:
    detail = f"{stage.exc_type}: {stage.message}" if stage.exc_type else stage.message
    return " ".join(detail.split())[:500]


def _failure(backend: BackendResult, *, described: bool = False) -> Failure:
    """The failed stage of ``backend``; ``described``: with its stage and message (a front end's entries)."""
    stage = backend.failure
    assert stage is not None
    return Failure(str(stage.status), stage.exc_type, round(stage.seconds, 3), stage.signal, stage.exit_code,
                   stage=backend.stage_reached if described else None, message=_detail(stage) if described else None)


def _own_verdict(backend: BackendResult) -> Verdict:
    stage = backend.failure
    assert stage is not None
    return Verdict(KIND_OF_STATUS[str(stage.status)], backend.name, stage.stage, _detail(stage),
                   failure=_failure(backend))


def _keras_front_end(result: ExecutionResult) -> tuple[Verdict | None, set[str], str | None]:
    """The one Keras finding when every Keras backend raised at load/execute, the backends it covers, and
    their (most common) exception type."""
    keras = [b for b in result.results("backend") if b.consumes == "keras"]
    if len(keras) < 2 or not all(b.status in FAILURES and b.stage_reached in ("load", "execute") for b in keras):
        return None, set(), None
    raised = [b for b in keras if b.status == StageStatus.ERROR.value]
    if len(raised) < 2:
        return None, set(), None
    types = [b.failure.exc_type for b in raised if b.failure]
    common = max(dict.fromkeys(types), key=types.count)
    covered = [b for b in raised if b.failure and b.failure.exc_type == common]
    if len(covered) < 2:
        return None, set(), None
    first = covered[0].failure
    assert first is not None
    message = ("symbolic build accepted the model, every Keras backend failed at run time: " + _detail(first))[:500]
    front_end = FrontEnd({b.name: _failure(b, described=True) for b in keras if b.failure}, common)
    verdict = Verdict(VerdictKind.CRASH.value, KERAS_FRONT_END, "execute", message, front_end=front_end)
    return verdict, {b.name for b in covered}, common


def failure_verdicts(result: ExecutionResult) -> list[Verdict]:
    """The verdicts on what failed in ``result`` (``[invalid]`` alone when nothing reached the model)."""
    backends = result.results("backend")
    if not backends or all(b.status == StageStatus.SKIPPED.value or b.stage_reached == "start" for b in backends):
        # nothing reached the model: memo's setup (a backend that cannot start, none selected), not a library
        summary = "; ".join(f"{b.name}: {_detail(b.failure) if b.failure else 'no stage'}" for b in backends)
        return [Verdict(VerdictKind.INVALID.value, "*", "-",
                        f"no backend ran the model: memo produced no result ({summary or 'no backends'})"[:500],
                        not_run=[b.name for b in backends])]
    verdicts: list[Verdict] = []
    front_end, covered, front_type = _keras_front_end(result)
    if front_end is not None:
        verdicts.append(front_end)
    reference = result.backends.get(result.reference)
    eager_type = (reference.failure.exc_type if reference is not None and reference.failure is not None
                  and reference.status in FAILURES else None)
    also: dict[str, list[str]] = defaultdict(list)
    traced: list[BackendResult] = []
    keras_failures = {(b.failure.exc_type, b.failure.message): b.name for b in result.results("backend")
                      if b.consumes == "keras" and b.status in FAILURES and b.failure is not None}
    for backend in result.results():
        if backend.status not in FAILURES or backend.name in covered:
            continue
        stage = backend.failure
        assert stage is not None
        if backend.role == "converter" and stage.stage == TRACE_STAGE:
            traced.append(backend)
        elif backend.role == "converter" and backend.consumes == "keras" \
                and (stage.exc_type, stage.message) in keras_failures:
            # a converter that runs Keras itself (Keras's ONNX export calls the model on torch) failing as a Keras
            # backend does: the same failure, not a second finding
            also[keras_failures[(stage.exc_type, stage.message)]].append(backend.name)
        elif _same_failure(result, base := _builds_on(backend.name), stage):
            # the exception of the backend whose code this one runs first (torch.compile converts with
            # onnx2torch): one finding, that backend's
            also[base].append(backend.name)
        elif _same_failure(result, twin := cpu_twin(backend.name), stage):
            also[twin].append(backend.name)  # the library fails alike on the CPU: the CPU backend's finding
        else:
            verdicts.append(_own_verdict(backend))
    for verdict in verdicts:
        names = [*also.get(verdict.backend, []), *(n for name in verdict.involved() for n in also.get(name, []))]
        if names:
            verdict.also_in = names
    if traced:
        stage = traced[0].failure
        assert stage is not None
        names = [b.name for b in traced]
        if front_end is not None and stage.exc_type == front_type:
            front_end.also_in_tf_function = names  # the same failure, traced: not a second finding
        elif eager_type is not None and stage.exc_type == eager_type and any(
                v.backend == result.reference for v in verdicts):
            eager = next(v for v in verdicts if v.backend == result.reference)
            eager.also_in_tf_function = names  # TensorFlow fails eagerly already: one finding
        else:
            verdicts.append(Verdict(KIND_OF_STATUS[str(stage.status)], REFERENCE, TF_FUNCTION_STAGE,
                                    _detail(stage), failure=_failure(traced[0]), converters=names))
    return verdicts


def _builds_on(name: str) -> str | None:
    """The backend whose code ``name`` runs first (its spec's ``builds_on``; None for a plugin)."""
    spec = find_spec(name)
    return spec.builds_on if spec is not None else None


def _same_failure(result: ExecutionResult, other: str | None, stage: StageResult) -> bool:
    """Whether backend ``other`` failed in ``result`` at the same stage with the same exception as ``stage``."""
    entry = result.backends.get(other) if other else None
    failure = entry.failure if entry is not None and entry.status in FAILURES else None
    return failure is not None and (failure.stage, failure.exc_type) == (stage.stage, stage.exc_type) and (
        same_on_both_devices(stage.message, failure.message))
