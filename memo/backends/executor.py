"""Differential execution of one artifact on every selected backend, with warm, supervised workers.

Scheduling per model: the Keras backends start at once; the tf2onnx worker converts the model (default
opset first, then opset 11) and each ONNX backend starts as soon as the conversion it consumes exists.
Every backend has its own worker process (TensorFlow and torch never share one), so they run side by
side; workers stay alive between models, and are restarted after a crash or hang. A caller may name members
not to run on a model (``skip``: the campaign's known outcomes, :mod:`memo.campaign.known`).

``run`` may be called from several threads at once (the campaign's pipelines, a background triage):
each worker serves one request at a time, so the models interleave worker by worker, and a model's
conversions hold their worker from the first to the last, so that its frozen graph is built only once.
A worker group may have several replicas (``replicas``): a ``run`` takes whichever is idle.
"""
from __future__ import annotations

import contextlib
import hashlib
import queue
import shutil
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Collection, Iterator, Mapping, Protocol, Sequence

from memo.artifact import Artifact
from memo.backends import BACKENDS, REFERENCE, STAND_IN_PRODUCERS, default_backends, load_spec, producers
from memo.backends.cuda import DEVICE_CPU, PRECISION_VARIABLE, STRICT, gpu_unavailable
from memo.backends.keras_common import UNSAFE_VARIABLE
from memo.backends.plugins import PluginInfo, read_plugin
from memo.backends.spec import ConverterSpec
from memo.backends.result import BackendResult, ExecutionResult, StageResult
from memo.backends.supervisor import WorkerCommand, WorkerProcess
from memo.backends.training import TIME_FACTOR
from memo.backends.versions import versions_in
from memo.defaults import DEFAULT_TIMEOUT_S, FIRST_MODEL_GRACE, WORKER_RECYCLE_MB
from memo.errors import UsageError
from memo.json_types import JsonObject


LOST = {"crash": "crashed", "hang": "hung"}


class ExecutionAbandoned(Exception):
    """Raised by an executor's ``run`` when the model was not run and must run again later (the campaign is
    stopping, or a cluster has no node left): the campaign leaves it unexecuted, and ``--resume`` runs it.
    ``stop_campaign``: the campaign cannot go on (its reason is the message)."""

    stop_campaign = False
KNOWN_STAGE = "known"  # the stage of a member skipped because the campaign knows its outcome (``run``'s ``skip``)


class Executor(Protocol):
    """What the campaign and triage use of an executor: :class:`DifferentialExecutor` is memo's one, and
    these four are all a stand-in needs. ``run`` must be safe to call from several threads at once."""

    @property
    def backend_names(self) -> list[str]:
        """The backends it runs (converters excluded)."""
        ...

    def run(self, artifact: Artifact, backends: Collection[str] | None = None,
            skip: Mapping[str, str] | None = None, library: bool = False) -> ExecutionResult:
        """Run ``artifact`` on every backend, or only on ``backends``, except the backends and converters in
        ``skip`` (name -> why: recorded as skipped at stage ``known``, a converter's consumers with it); never
        raises for what a library does (:class:`ExecutionAbandoned` when it could not run the model at all).
        ``library``: measure the libraries' code this model reaches, where the executor measures it at all."""
        ...

    def versions(self) -> dict[str, dict[str, str]]:
        """``{backend or converter: {distribution: version}}``."""
        ...

    def close(self) -> None:
        """Stop its workers."""
        ...


@dataclass
class Member:
    """A backend or converter as the executor schedules it."""

    name: str
    consumes: str
    command: WorkerCommand
    role: str = "backend"
    produces: str | None = None
    distributions: Sequence[str] = ()
    unavailable: str | None = None  # why it cannot run here (missing package or interpreter)
    versions: dict[str, str] = field(default_factory=dict)
    group: str = field(default="")
    timeout_s: float | None = None  # its own per-model limit, used when longer than the executor's
    sample_every: int = 1  # runs on one model in this many when a run names no backends
    device: str = DEVICE_CPU  # where its kernels run (a GPU backend's results record the precision it ran in)

    def sampled_out(self, artifact: Artifact) -> bool:
        """Whether a sampled backend skips ``artifact`` (decided by the artifact folder's name: the same
        models every time, whichever process or order runs them)."""
        if self.sample_every <= 1:
            return False
        digest = hashlib.sha256(artifact.directory.name.encode()).digest()
        return int.from_bytes(digest[:4], "big") % self.sample_every != 0


def registered_member(name: str) -> Member:
    """The member for a registered backend or converter."""
    spec = load_spec(name)
    produces = spec.produces if isinstance(spec, ConverterSpec) else None
    device = spec.device
    member = Member(name=name, consumes=spec.consumes, role="converter" if produces else "backend",
                    produces=produces, distributions=tuple(spec.distributions), group=spec.worker_group,
                    command=WorkerCommand(group=spec.worker_group, args=[], python=spec.python, env=dict(spec.env)),
                    timeout_s=spec.timeout_s, sample_every=spec.sample_every, device=device)
    member.versions, member.unavailable = versions_in(spec.python, tuple(spec.distributions))
    if device != DEVICE_CPU and member.unavailable is None:
        member.unavailable = gpu_unavailable()
    return member


def producer_member(kind: str) -> Member:
    """The converter that writes ``kind`` here: its registered producer, or, where that cannot run, the first stand-in
    that can (tf2onnx without TensorFlow: Keras's own ONNX export writes the ONNX file)."""
    member = registered_member(producers()[kind])
    for stand_in in STAND_IN_PRODUCERS.get(kind, ()) if member.unavailable else ():
        candidate = registered_member(stand_in)
        if candidate.unavailable is None:
            return candidate
    return member


def choose_reference(members: Mapping[str, Member], reference: str | None) -> str:
    """The backend every other one is compared with: ``reference`` (``--reference``), else memo's default
    (:data:`memo.backends.REFERENCE`) when selected, else the first backend; a :class:`UsageError` when it is not a
    selected backend or cannot run here."""
    backends = [name for name, member in members.items() if member.role == "backend"]
    chosen = reference or (REFERENCE if REFERENCE in backends else backends[0])
    if chosen not in backends:
        raise UsageError(f"reference {chosen!r} is not one of the selected backends ({', '.join(backends)})")
    why = members[chosen].unavailable
    if why:
        runnable = [name for name in backends if members[name].unavailable is None and members[name].consumes == "keras"]
        hint = f"; choose another with --reference (e.g. {runnable[0]})" if runnable else ""
        raise UsageError(f"reference {chosen!r} cannot run here ({why}){hint}")
    return chosen


def plugin_member(info: PluginInfo) -> Member:
    return Member(name=info.name, consumes=info.consumes, group=f"plugin-{info.name}",
                  command=WorkerCommand(group=f"plugin-{info.name}", args=["--plugin", str(info.path)],
                                        python=info.python, env=info.env))


def backend_selection(backends: Sequence[str] | None, plugins: Sequence[Path] = ()) -> tuple[list[str], list[PluginInfo]]:
    """(registered backends, plugins) of a selection (``None``: the default backends); a clear
    :class:`UsageError` for an unknown backend, a plugin whose name is taken or an empty selection."""
    names = list(default_backends() if backends is None else backends)
    unknown = [name for name in names if name not in BACKENDS]
    if unknown:
        raise UsageError(f"unknown backend {unknown[0]!r} (known: {', '.join(BACKENDS)})")
    infos: list[PluginInfo] = []
    for info in map(read_plugin, plugins):
        if info.name in names or info.name in BACKENDS or info.name in {i.name for i in infos}:
            raise UsageError(f"backend plugin {info.path}: name {info.name!r} is already taken")
        infos.append(info)
    if not names and not infos:
        raise UsageError("no backend selected")
    return names, infos


class DifferentialExecutor:
    """Runs artifacts on backends; a context manager whose warm workers serve many ``run`` calls."""

    def __init__(self, backends: Sequence[str] | None = None, plugins: Sequence[Path] = (),
                 timeout_s: float = DEFAULT_TIMEOUT_S, max_models_per_worker: int = 200,
                 max_rss_mb: int = WORKER_RECYCLE_MB,
                 *, safe_mode: bool = True, replicas: Mapping[str, int] | None = None,
                 first_model_grace: float = FIRST_MODEL_GRACE, reference: str | None = None,
                 gpu_precision: str = STRICT, library_coverage: bool = False) -> None:
        """``safe_mode=False`` lets the Keras workers deserialize Python code (Lambda layers) from models:
        only for models the user trusts (``memo run --unsafe``). ``replicas``: worker processes per worker
        group (default one), for a library that would otherwise hold up concurrent ``run`` calls.
        ``first_model_grace``: a backend's first model after its worker starts gets this many times the limit.
        ``reference``: the backend the others are compared with (:func:`choose_reference`); ``gpu_precision``: the
        precision GPU backends run in (:mod:`memo.backends.cuda`). ``library_coverage``: each result carries the
        lines of its library's code that the model reached (:mod:`memo.library_coverage`)."""
        names, infos = backend_selection(backends, plugins)
        self.members: dict[str, Member] = {name: registered_member(name) for name in names}
        for info in infos:
            self.members[info.name] = plugin_member(info)
        for kind in sorted({m.consumes for m in self.members.values()} - {"keras"}):
            converter = producer_member(kind)
            self.members.setdefault(converter.name, converter)
        self.reference = choose_reference(self.members, reference)
        self.gpu_precision = gpu_precision
        for member in self.members.values():
            if member.device != DEVICE_CPU:
                member.command.env[PRECISION_VARIABLE] = gpu_precision
        self.timeout_s = timeout_s
        self._log_dir = Path(tempfile.mkdtemp(prefix="memo-workers-"))
        commands: dict[str, WorkerCommand] = {}
        for member in self.members.values():
            if member.group not in commands:
                env = {**member.command.env, **({} if safe_mode else {UNSAFE_VARIABLE: "1"})}
                commands[member.group] = WorkerCommand(group=member.group, python=member.command.python, env=env,
                                                       args=["--library-coverage"] if library_coverage else [])
            commands[member.group].args.extend(member.command.args or ["--spec", member.name])
        self._workers: dict[str, list[WorkerProcess]] = {}
        self._idle: dict[str, queue.Queue[WorkerProcess]] = {}
        for group, command in commands.items():
            count = max(1, (replicas or {}).get(group, 1))
            self._workers[group] = [
                WorkerProcess(WorkerCommand(group=group if count == 1 else f"{group}.{i}", args=list(command.args),
                                            python=command.python, env=dict(command.env)),
                              self._log_dir, startup_timeout_s=max(180.0, timeout_s), max_models=max_models_per_worker,
                              max_rss_mb=max_rss_mb, first_model_grace=first_model_grace) for i in range(count)]
            self._idle[group] = queue.Queue()
            for worker in self._workers[group]:
                self._idle[group].put(worker)
        self._held = threading.local()  # the workers the current thread has leased, by group
        # Enough threads for several concurrent ``run`` calls: a thread waiting for a busy worker holds none.
        total = sum(map(len, self._workers.values()))
        self._pool = ThreadPoolExecutor(max_workers=4 * total + 4, thread_name_prefix="memo-backend")

    @property
    def backend_names(self) -> list[str]:
        """The backends (registered and plugins) this executor runs, without the converters."""
        return [m.name for m in self.members.values() if m.role == "backend"]

    def worker_pids(self) -> dict[str, int | None]:
        """``{worker group: pid}`` of the live workers (None when not started), for monitoring."""
        return {worker.command.group: worker.process.pid if worker.alive and worker.process else None
                for workers in self._workers.values() for worker in workers}

    def versions(self) -> dict[str, dict[str, str]]:
        """``{backend or converter: {distribution: version}}``, from the workers once started, else metadata."""
        out = {}
        for member in self.members.values():
            started = next((w.versions[member.name] for w in self._workers[member.group]
                            if member.name in w.versions), None)
            out[member.name] = dict(started or member.versions)
        return out

    @property
    def log_dir(self) -> Path:
        """Where each worker's stderr is written (one file per worker start)."""
        return self._log_dir

    def __enter__(self) -> "DifferentialExecutor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every worker. Safe after an interrupt: a request still in flight sees its worker go away."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        workers = [worker for group in self._workers.values() for worker in group]
        for worker in workers:
            worker.retire()
            worker.ask_to_exit()
        deadline = time.monotonic() + 3.0
        for worker in workers:
            worker.stop(grace_s=max(0.0, deadline - time.monotonic()))
        shutil.rmtree(self._log_dir, ignore_errors=True)

    # ------------------------------------------------------------------ one model
    def run(self, artifact: Artifact, backends: Collection[str] | None = None,
            skip: Mapping[str, str] | None = None, library: bool = False) -> ExecutionResult:
        """Run ``artifact`` on every backend (or only on ``backends``, with the converters they need).
        ``skip``: backends and converters not to run (name -> why; names this executor does not run are
        ignored), recorded as skipped at stage :data:`KNOWN_STAGE`; a skipped converter's consumers are
        skipped as when it fails. Never raises for anything a library does. ``library``: trace the libraries' code
        on this model (only when started with ``library_coverage``; triage's runs are never traced)."""
        selected = set(self.backend_names if backends is None else backends)
        unknown = selected - set(self.backend_names)
        if unknown:
            raise UsageError(f"backend {sorted(unknown)[0]!r} is not one this executor runs")
        started = time.perf_counter()
        result_skips: dict[str, BackendResult] = {}
        if backends is None:  # a sampled backend runs on its share of models only, unless asked for by name
            for name in sorted(selected):
                member = self.members[name]
                if member.sampled_out(artifact):
                    selected.discard(name)
                    result_skips[name] = self._skipped(member, "sample",
                                                       f"not in {name}'s sample (one model in {member.sample_every})")
        known = {name: why for name, why in (skip or {}).items() if name in self.members}
        for name in sorted(selected & set(known)):
            selected.discard(name)
            result_skips[name] = self._skipped(self.members[name], KNOWN_STAGE, known[name])
        ir = artifact.read_ir()
        input_names = [layer.name for layer in ir.input_layers]
        result = ExecutionResult(artifact_dir=str(artifact.directory), reference=self.reference,
                                 output_names=list(ir.outputs))
        result.backends.update(result_skips)
        futures: list[Future[None]] = []
        futures_lock = threading.Lock()

        def submit(member: Member, model_path: Path) -> None:
            future = self._pool.submit(self._run_member, member, artifact, model_path, input_names, result, library)
            with futures_lock:
                futures.append(future)

        def convert_all(converters: list[Member]) -> None:
            lost_load: StageResult | None = None  # the group's shared load crashed or hung: do not repeat it
            for converter in converters:
                if lost_load is None:
                    produced = self._run_member(converter, artifact, artifact.keras_path, input_names, result,
                                                library)
                    failure = result.backends[converter.name].failure
                    if failure and failure.stage == "load" and failure.status in ("crash", "hang"):
                        lost_load = failure
                else:
                    produced = None
                    result.backends[converter.name] = self._skipped(
                        converter, "load", f"not retried: the shared load {LOST[lost_load.status]} before "
                                           f"({lost_load.message})")
                if produced is not None:
                    for member in self._consumers(converter.produces, selected):
                        submit(member, produced)
                else:
                    self._skip_consumers(converter, selected, result)

        converters = [m for m in self.members.values()
                      if m.role == "converter" and self._consumers(m.produces, selected)]
        for converter in [m for m in converters if m.name in known]:
            result.backends[converter.name] = self._skipped(converter, KNOWN_STAGE, known[converter.name])
            self._skip_consumers(converter, selected, result)
        converters = [m for m in converters if m.name not in known]
        for group in dict.fromkeys(m.group for m in converters):
            future = self._pool.submit(self._holding, group, convert_all, [m for m in converters if m.group == group])
            with futures_lock:
                futures.append(future)
        for member in self._consumers("keras", selected):
            submit(member, artifact.keras_path)
        while True:
            with futures_lock:
                pending = [f for f in futures if not f.done()]
            if not pending:
                break
            wait(pending)
        for future in futures:
            future.result()  # re-raise a bug in memo itself, never a library failure
        order = list(self.members)
        result.backends = {name: result.backends[name] for name in order if name in result.backends}
        result.seconds = time.perf_counter() - started
        return result

    def train(self, artifact: Artifact, backends: Collection[str], out_dir: Path,
              options: JsonObject | None = None) -> dict[str, BackendResult]:
        """The training check (op ``train``, :mod:`memo.backends.training`) of ``artifact`` on ``backends``, side by
        side on their warm workers; each result's ``outputs_path`` is its ``.npz`` in ``out_dir`` (None: nothing
        finished), each under :data:`~memo.backends.training.TIME_FACTOR` times the per-model limit; ``options``:
        the request's (``stages``: only those). Never raises for what a library does."""
        input_names = [layer.name for layer in artifact.read_ir().input_layers]
        results: dict[str, BackendResult] = {}

        def one(member: Member) -> None:
            out = out_dir / f"{member.name}.train.npz"
            out.unlink(missing_ok=True)
            with self._lease(member.group) as worker:
                started = time.perf_counter()
                model = artifact.path_for(member.consumes)  # a converted module's: the ONNX file it converts
                reply = worker.request({"op": "train", "backend": member.name, "model": str(model),
                                        "inputs": str(artifact.inputs_path), "input_names": input_names,
                                        "out": str(out), "options": options or {}},
                                       TIME_FACTOR * max(member.timeout_s or 0.0, self.timeout_s))
            results[member.name] = BackendResult(name=member.name, consumes=member.consumes, role=member.role,
                                                 versions=worker.versions.get(member.name) or dict(member.versions),
                                                 stages=reply.stages, outputs_path=reply.outputs,
                                                 seconds=time.perf_counter() - started)

        out_dir.mkdir(parents=True, exist_ok=True)
        members = [self.members[name] for name in backends]
        for member in [m for m in members if m.unavailable]:
            results[member.name] = self._skipped(member, "start", f"unavailable: {member.unavailable}")
        for future in [self._pool.submit(one, m) for m in members if not m.unavailable]:
            future.result()
        return {m.name: results[m.name] for m in members}

    def _consumers(self, kind: str | None, selected: Collection[str]) -> list[Member]:
        return [m for m in self.members.values() if m.role == "backend" and m.consumes == kind and m.name in selected]

    def _skip_consumers(self, converter: Member, selected: Collection[str], result: ExecutionResult) -> None:
        """Record the selected consumers of a converter that produced no file as skipped."""
        status = result.backends[converter.name].status
        for member in self._consumers(converter.produces, selected):
            result.backends[member.name] = self._skipped(
                member, "convert", f"no {member.consumes} file: {converter.name} {status}")

    def _holding(self, group: str, action: Callable[..., None], *args: object) -> None:
        """Run ``action`` holding one of ``group``'s workers: a model's conversions stay on one worker."""
        with self._lease(group):
            action(*args)

    @contextlib.contextmanager
    def _lease(self, group: str) -> Iterator[WorkerProcess]:
        """An idle worker of ``group`` for this thread (the one it holds already, if any)."""
        held: dict[str, WorkerProcess] = self._held.__dict__.setdefault("workers", {})
        if group in held:
            yield held[group]
            return
        worker = self._idle[group].get()
        held[group] = worker
        try:
            yield worker
        finally:
            del held[group]
            self._idle[group].put(worker)

    @staticmethod
    def _skipped(member: Member, stage: str, message: str) -> BackendResult:
        """The result of a backend or converter that did not run this model, and why."""
        return BackendResult(name=member.name, consumes=member.consumes, role=member.role,
                             versions=dict(member.versions),
                             stages=[StageResult(stage=stage, status="skipped", message=message)])

    def _run_member(self, member: Member, artifact: Artifact, model_path: Path, input_names: list[str],
                    result: ExecutionResult, library: bool = False) -> Path | None:
        """Run one backend or converter; returns the file it wrote (outputs or converted model) if it succeeded."""
        if member.unavailable:
            result.backends[member.name] = self._skipped(member, "start", f"unavailable: {member.unavailable}")
            return None
        backend_result = BackendResult(name=member.name, consumes=member.consumes, role=member.role,
                                       precision=self.gpu_precision if member.device != DEVICE_CPU else "")
        out = artifact.path_for(member.produces) if member.produces else artifact.outputs_path(member.name)
        out.unlink(missing_ok=True)
        request = {"op": "export" if member.role == "converter" else "run", "backend": member.name,
                   "model": str(model_path), "inputs": str(artifact.inputs_path), "input_names": input_names,
                   "out": str(out), "library": library}
        with self._lease(member.group) as worker:
            started = time.perf_counter()
            reply = worker.request(request, max(member.timeout_s or 0.0, self.timeout_s))
            backend_result.seconds = time.perf_counter() - started
            backend_result.versions = worker.versions.get(member.name) or dict(member.versions)
        backend_result.stages = reply.stages
        backend_result.library = reply.library
        ok = backend_result.status == "ok"
        if member.role == "backend":
            backend_result.outputs_path = reply.outputs if ok else None
        else:
            backend_result.outputs_path = str(out) if ok and out.exists() else None
        result.backends[member.name] = backend_result
        return Path(backend_result.outputs_path) if backend_result.outputs_path else None
