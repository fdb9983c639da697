"""The supervisor side of one worker process: start it, send a request, survive whatever happens to it.

A worker that dies (segfault, abort, kill, a non-zero exit) or stays silent past the deadline is a
finding about its library, never a failure of memo: the request's last announced stage gets status
"crash" (with the signal or exit code and the tail of the worker's stderr) or "hang" (after the worker
is killed), and the next request starts a fresh worker. Workers are also recycled after a number of
models or above a resident-memory limit, so memory stays bounded over a long campaign; a worker that passes the
request bound (:func:`request_memory_bound`) while still inside one model is killed there, and that model is
recorded as skipped on its backends (exc_type "MemoryBound"): one model's memory, not a finding.

The per-model limit counts the library's own work on the model. A worker started for a request imports its
libraries under the start-up limit, before the request's clock starts; and a backend's first model since its
worker started gets ``first_model_grace`` times the limit (its first compilation, lazy imports), every later
model the limit itself (memo.defaults.FIRST_MODEL_GRACE).
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from memo.backends.result import LibraryLines, StageResult
from memo.defaults import (FIRST_MODEL_GRACE, WORKER_MEMORY_SHARE, WORKER_MEMORY_VARIABLE,
                           WORKER_RECYCLE_MB)
from memo.errors import UsageError
from memo.json_types import JsonObject

REPO_ROOT = Path(__file__).resolve().parents[2]
STDERR_TAIL_CHARS = 4000
STDERR_SCAN_BYTES = 256_000  # how far back a native crash's faulthandler dump is looked for
FAULTHANDLER_HEADER = "Fatal Python error"
MEMORY_POLL_S = 0.5  # how often a worker inside a model has its resident memory read
MEMORY_BOUND = "MemoryBound"
# One thread per library: workers run side by side on few cores, and oversubscribed thread pools
# slow every library down. Override with MEMO_WORKER_THREADS.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TF_NUM_INTRAOP_THREADS",
                    "TF_NUM_INTEROP_THREADS")


@dataclass
class Reply:
    """What came back for one request: the worker's stage records, or how it died."""

    stages: list[StageResult] = field(default_factory=list)
    outputs: str | None = None
    library: dict[str, LibraryLines] = field(default_factory=dict)  # --library-coverage: the lines it reached


@dataclass
class WorkerCommand:
    """How to start a worker: interpreter, worker arguments, extra environment."""

    group: str
    args: list[str]
    python: str | None = None
    env: dict[str, str] = field(default_factory=dict)


def request_memory_bound(max_rss_mb: int) -> int:
    """MB a worker may hold while inside one model: MEMO_WORKER_MEMORY_MB when set, else a quarter of the
    machine's memory, and never below the recycling bound ``max_rss_mb``."""
    override = os.environ.get(WORKER_MEMORY_VARIABLE, "").strip()
    if override:
        try:
            return max(1, int(override))
        except ValueError:
            raise UsageError(f"{WORKER_MEMORY_VARIABLE}={override!r} is not a whole number of MB") from None
    return max(max_rss_mb, int(psutil.virtual_memory().total / 2**20 * WORKER_MEMORY_SHARE))


def resident_mb(pid: int) -> float:
    """Resident memory of process ``pid`` in MB (0 when it is gone)."""
    try:
        return psutil.Process(pid).memory_info().rss / 2**20
    except psutil.Error:
        return 0.0


class WorkerProcess:
    def __init__(self, command: WorkerCommand, log_dir: Path, *, startup_timeout_s: float = 180.0,
                 max_models: int = 200, max_rss_mb: int = WORKER_RECYCLE_MB,
                 first_model_grace: float = FIRST_MODEL_GRACE, memory_bound_mb: int | None = None) -> None:
        """``max_rss_mb``: recycle after a model above this; ``memory_bound_mb``: kill inside a model above this
        (default :func:`request_memory_bound`)."""
        self.command = command
        self.first_model_grace = first_model_grace
        self.served: set[str] = set()  # the backends this worker has answered a model for since it started
        self.log_dir = log_dir
        self.startup_timeout_s = startup_timeout_s
        self.max_models = max_models
        self.max_rss_mb = max_rss_mb
        self.memory_bound_mb = memory_bound_mb if memory_bound_mb is not None else request_memory_bound(max_rss_mb)
        self.process: subprocess.Popen[bytes] | None = None
        self.versions: dict[str, dict[str, str]] = {}
        self.models_served = 0
        self.starts = 0
        self.next_id = 0
        self._buffer = b""
        self._stderr_path: Path | None = None
        self.start_failure: StageResult | None = None  # set when the library cannot even be imported
        self.retired = False  # its executor closed: a request no longer starts it again (see :meth:`retire`)

    # ------------------------------------------------------------------ life cycle
    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("KERAS_BACKEND", None)  # the orchestrator's numpy default must not reach a worker
        threads = env.get("MEMO_WORKER_THREADS", "1")
        env.update({name: threads for name in THREAD_VARIABLES})
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        env.update(self.command.env)
        return env

    def start(self) -> StageResult | None:
        """Start the worker and wait until its library is imported; a StageResult describes a failure."""
        self.stop()
        if self._stderr_path is not None:  # its tail is in the results already; keep disk use bounded
            self._stderr_path.unlink(missing_ok=True)
        self.starts += 1
        self.models_served = 0
        self.served = set()
        self._buffer = b""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._stderr_path = self.log_dir / f"{self.command.group}.{self.starts}.stderr"
        python = self.command.python or _current_python()
        started = time.perf_counter()
        with open(self._stderr_path, "wb") as stderr:
            self.process = subprocess.Popen([python, "-m", "memo.backends.worker", *self.command.args],
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                            env=self.environment(), cwd=str(REPO_ROOT), start_new_session=True)
        event = self._next_event(time.monotonic() + self.startup_timeout_s)
        seconds = time.perf_counter() - started
        if event is not None and event.get("event") == "ready":
            self.versions = event.get("versions", {})
            self.start_failure = None
            return None
        if event is not None and event.get("event") == "failed":
            failure = StageResult(stage="start", status="error", seconds=seconds, exc_type=event.get("exc_type"),
                                  message=event.get("message", ""), traceback=event.get("traceback", ""))
        else:
            failure = self._death("start", seconds, timed_out=event is None)
        self.kill()
        self.start_failure = failure
        return failure

    def retire(self) -> None:
        """Its executor is closing: a request still on its way (a converter's next model, a thread that outlived
        the campaign) gets a skipped stage instead of a freshly started worker, which would keep memo from exiting
        for a library's start-up."""
        self.retired = True

    def ask_to_exit(self) -> None:
        """Send the exit request without waiting (lets several workers shut down side by side)."""
        if self.alive and self.process is not None and self.process.stdin is not None:
            try:
                self.process.stdin.write(b'{"op": "exit"}\n')
                self.process.stdin.flush()
            except OSError:
                pass

    def stop(self, grace_s: float = 2.0) -> None:
        """Ask the worker to exit; kill it if it has not within ``grace_s`` seconds."""
        if not self.alive:
            self.kill()
            return
        assert self.process is not None
        self.ask_to_exit()
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def kill(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream:
                try:
                    stream.close()
                except BrokenPipeError:  # a request still buffered for the worker that is gone
                    pass
        self.process = None

    def recycle_if_needed(self) -> None:
        if not self.alive or self.process is None:
            return
        if self.models_served >= self.max_models or resident_mb(self.process.pid) > self.max_rss_mb:
            self.stop()

    # ------------------------------------------------------------------ requests
    def limit_for(self, backend: str, timeout_s: float) -> float:
        """The seconds ``backend``'s next model may take on this worker: ``timeout_s``, times the grace for
        its first model since the worker started."""
        return timeout_s if backend in self.served else timeout_s * self.first_model_grace

    def request(self, payload: JsonObject, timeout_s: float) -> Reply:
        """Send one request; never raises for anything the library does. ``timeout_s``: the per-model limit
        (see :meth:`limit_for`); a worker started now starts under its own start-up limit, not this one."""
        if not self.alive:
            if self.retired:
                return Reply(stages=[StageResult(stage="start", status="skipped", message="the executor was closed")])
            failure = self.start()
            if failure is not None:
                return Reply(stages=[failure])
        assert self.process is not None and self.process.stdin is not None
        self.next_id += 1
        backend = str(payload.get("backend", ""))
        payload = {**payload, "id": self.next_id}
        stage, stage_started = "load", time.perf_counter()
        timeout_s = self.limit_for(backend, timeout_s)
        deadline = time.monotonic() + timeout_s  # after the start-up: the library's work on the model only
        try:
            self.process.stdin.write((json.dumps(payload) + "\n").encode())
            self.process.stdin.flush()
        except OSError:
            return self._fail(stage, stage_started, timed_out=False, timeout_s=timeout_s)
        while True:
            event = self._next_event(deadline, watch_memory=True)
            if event is not None and event["event"] == "memory":
                return self._over_memory(stage, stage_started, float(event["rss_mb"]))
            if event is None or event["event"] == "eof":
                return self._fail(stage, stage_started, timed_out=event is None, timeout_s=timeout_s)
            if event.get("id") != self.next_id:
                continue
            if event["event"] == "stage":
                stage, stage_started = event["stage"], time.perf_counter()
            elif event["event"] == "done":
                self.models_served += 1
                self.served.add(backend)
                self.recycle_if_needed()
                return Reply(stages=[StageResult.from_json(record) for record in event["stages"]],
                             outputs=event.get("outputs"),
                             library={name: LibraryLines.from_json(lines)
                                      for name, lines in event.get("library", {}).items()})

    def _fail(self, stage: str, stage_started: float, *, timed_out: bool, timeout_s: float) -> Reply:
        seconds = time.perf_counter() - stage_started
        record = self._death(stage, seconds, timed_out=timed_out, timeout_s=timeout_s)
        self.kill()
        return Reply(stages=[record])

    def _over_memory(self, stage: str, stage_started: float, rss_mb: float) -> Reply:
        """The worker passed the request bound inside a model: kill it (the next request starts a fresh one)."""
        self.kill()
        return Reply(stages=[StageResult(
            stage=stage, status="skipped", seconds=time.perf_counter() - stage_started, exc_type=MEMORY_BOUND,
            message=f"memo stopped the worker: {rss_mb:.0f} MB resident, above the bound of {self.memory_bound_mb} MB "
                    f"({WORKER_MEMORY_VARIABLE})")])

    def _death(self, stage: str, seconds: float, *, timed_out: bool, timeout_s: float | None = None) -> StageResult:
        """Describe why the worker stopped answering: a hang (we kill it) or its own death."""
        if timed_out:
            self.kill()
            return StageResult(stage=stage, status="hang", seconds=seconds, exc_type="Timeout",
                               message=f"no answer within {timeout_s or self.startup_timeout_s:g} s; worker killed",
                               stderr_tail=self.stderr_tail())
        assert self.process is not None
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = None
        signal_number = -code if code is not None and code < 0 else None
        exit_code = code if code is not None and code >= 0 else None
        what = (f"killed by signal {signal_number} ({_signal_name(signal_number)})" if signal_number
                else f"exited with code {exit_code}")
        return StageResult(stage=stage, status="crash", seconds=seconds, exc_type="WorkerDied",
                           message=f"worker process {what}", signal=signal_number, exit_code=exit_code,
                           stderr_tail=self.stderr_tail())

    def stderr_tail(self) -> str:
        """The end of the worker's stderr; after a native crash, faulthandler's dump from its first line
        (the signal and the innermost frames, "most recent call first"), which a plain tail would cut off
        when many threads are dumped."""
        if self._stderr_path is None or not self._stderr_path.exists():
            return ""
        with open(self._stderr_path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - STDERR_SCAN_BYTES))
            text = handle.read().decode("utf-8", "replace")
        dump = text.rfind(FAULTHANDLER_HEADER)
        if dump >= 0:
            return text[dump:dump + 2 * STDERR_TAIL_CHARS]
        return text[-STDERR_TAIL_CHARS:]

    def _next_event(self, deadline: float, watch_memory: bool = False) -> JsonObject | None:
        """The next JSON event from the worker; ``{"event": "eof"}`` when it died, None at the deadline;
        with ``watch_memory``, ``{"event": "memory", "rss_mb": MB}`` once it holds more than its request bound."""
        assert self.process is not None and self.process.stdout is not None
        fd, pid = self.process.stdout.fileno(), self.process.pid
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                if not selector.select(timeout=min(remaining, MEMORY_POLL_S) if watch_memory else remaining):
                    if watch_memory and (rss_mb := resident_mb(pid)) > self.memory_bound_mb:
                        return {"event": "memory", "rss_mb": rss_mb}
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    return {"event": "eof"}
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            return {"event": "noise"}


def _current_python() -> str:
    return sys.executable


def _signal_name(number: int | None) -> str:
    try:
        return signal.Signals(number).name if number else "?"
    except ValueError:
        return "?"
