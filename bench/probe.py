"""A measuring wrapper of the ledger plugin, for the bench's profiling step only.

``ProbedLedgerStatLogger`` is the real ``vllm_ledger.plugin:LedgerStatLogger`` with timers
around the recorder thread's own code paths, so the cost of the ledger inside a serving API
process can be read without a sampling profiler. It measures either shape of the recorder:

* wakeups: the recorder's own ``wakeups_total`` / ``wakeups_by_reason`` where it has a
  ``buffer`` (a deque that ``submit()`` appends to without waking anyone); for the older
  shape (a ``SimpleQueue`` whose blocking ``get`` returns once per wakeup) a ``SimpleQueue``
  subclass swapped in before the thread starts counts the returns;
* GIL slices of the recorder thread: the thread can let the GIL go only where it waits (its
  wake-up wait or ``queue.get``), sleeps (``time.sleep(0)`` between take-in slices), or calls
  into SQLite and the file system (``writes.commit_batch``, ``write_sequence_marker``,
  ``open_for_write``, ``file_damage``, ``quick_check``, ``compaction.compact_connection``).
  A timer closes a slice as the thread enters one of those and opens the next as it comes
  back, so each slice's wall time bounds from above one stretch of Python that held the GIL
  throughout (an OS preemption inside the stretch counts in it; the GIL-held parts inside
  those calls, such as binding one row's parameters, are not counted);
* flushes (``Recorder._flush``), take-ins (``_take_in``), file checks (``_check_file``) and
  compactions (``compact``): count, wall seconds and the recorder thread's CPU seconds;
* the rank-0 maintenance pass: where it runs in a child (``spawn_pass`` in
  ``vllm_ledger.background`` or ``vllm_ledger.maintenance``), the spawn's wall and thread CPU
  in the API process, the ``fork_exec`` inside it, the child's pid, nice level and, from
  ``wait4``, its CPU; where it runs on a thread (``maintenance.run``), its wall and CPU;
* ``record()`` of the plugin and of vLLM's ``PrometheusStatLogger`` on the same iterations:
  calls and wall seconds, and a histogram of calls for the medians;
* the attribution middleware (``--middleware vllm_ledger.middleware.LedgerMiddleware``): its
  own code's CPU on vLLM's loop, apart from the app it wraps and the server's ``receive`` and
  ``send`` (``bench/mwclock.py``: ``thread_time`` at every change of owner, the clock's own
  share per stretch taken off), its calls, and the tag book's counts (tagged, faults);
* CPU seconds of the whole process, its main thread (vLLM's asyncio loop) and the recorder
  thread, read from ``/proc/self/task``.

The figures are written as JSON to ``$BENCH_PROBE_OUT`` every second (replaced atomically)
and at exit. It is registered by a ``dist-info`` folder that ``bench/serve.py`` writes; it is
never part of a bundle.
"""

from __future__ import annotations

import atexit
import importlib
import json
import math
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from vllm_ledger.format import connect, smallfiles, writes
from vllm_ledger.plugin import LedgerStatLogger
from vllm_ledger.write import middleware as middleware_module
from vllm_ledger.write import recorder as recorder_module
from vllm_ledger.write.recorder import Recorder
from vllm_ledger.write.tags import BOOK

try:  # beside this module in the probe's folder (bench/serve.py copies it there)
    import vllm_ledger_bench_mwclock as mwclock
except ImportError:  # run from the checkout
    from bench import mwclock

_TICK = os.sysconf("SC_CLK_TCK")
HIST_BUCKETS = 16 * 34  # up to 2**34 ns, about 17 s
_lock = threading.Lock()
STATS: dict[str, Any] = {
    "pid": os.getpid(),
    "init_ts": None,
    "recorder_tid": None,
    "shape": {"recorder": None, "maintenance": None},
    "wakeups": 0,  # the older recorder: returns of its blocking queue.get
    "flush": {"n": 0, "wall_s": 0.0, "cpu_s": 0.0, "max_wall_s": 0.0},
    "take_in": {"n": 0, "wall_s": 0.0, "cpu_s": 0.0, "max_wall_s": 0.0, "events": 0},
    "check_file": {"n": 0, "wall_s": 0.0, "cpu_s": 0.0, "max_wall_s": 0.0},
    "compact": {"n": 0, "wall_s": 0.0, "cpu_s": 0.0, "max_wall_s": 0.0},
    # GIL slices of the recorder thread, by what ran in them; the five longest.
    "slices": {},
    "longest_slices": [],
    "slice_log": [],  # [end ts, wall s, cpu s, label] of every slice of SLICE_LOG_MIN_S or more
    "switch_interval_s": None,
    "timer_bias_us": None,
    "timer_bias_cpu_us": None,
    "maintenance": [],
    # record() on vLLM's output loop, wall time per call (perf_counter only: cheap)
    # and a histogram of calls, 16 buckets an octave of nanoseconds (bucket k: from
    # 2**(k/16) ns to 2**((k+1)/16) ns, each about 4.4% wide).
    "ledger_record": {
        "n": 0,
        "wall_s": 0.0,
        "cpu_s": 0.0,
        "max_wall_s": 0.0,
        "hist": [0] * HIST_BUCKETS,
    },
    "prometheus_record": {
        "n": 0,
        "wall_s": 0.0,
        "cpu_s": 0.0,
        "max_wall_s": 0.0,
        "hist": [0] * HIST_BUCKETS,
    },
    # The attribution middleware's own code on vLLM's loop (``bench/mwclock.py``): filled in
    # by ``snapshot`` from the clock.
    "middleware": None,
}
CLOCK = mwclock.MiddlewareClock()


# ---- GIL slices of the recorder thread ---------------------------------------------------------

SLICE_LOG_MIN_S = 0.0002
SLICE_LOG_MAX = 5_000
_slice: dict[str, Any] = {"ident": None, "t": None, "c": 0.0, "labels": set(), "depth": 0}


def _on_recorder() -> bool:
    return threading.get_ident() == _slice["ident"]


def _open_slice() -> None:
    _slice["labels"] = set()
    _slice["c"] = time.thread_time()
    _slice["t"] = time.perf_counter()


def _close_slice() -> None:
    t = _slice["t"]
    if t is None:
        return
    wall = time.perf_counter() - t
    cpu = time.thread_time() - _slice["c"]
    _slice["t"] = None
    label = "+".join(sorted(_slice["labels"])) or "loop"
    with _lock:
        s = STATS["slices"].setdefault(
            label, {"n": 0, "wall_s": 0.0, "cpu_s": 0.0, "max_wall_s": 0.0, "max_cpu_s": 0.0}
        )
        s["n"] += 1
        s["wall_s"] += wall
        s["cpu_s"] += cpu
        s["max_wall_s"] = max(s["max_wall_s"], wall)
        s["max_cpu_s"] = max(s["max_cpu_s"], cpu)
        if wall >= SLICE_LOG_MIN_S and len(STATS["slice_log"]) < SLICE_LOG_MAX:
            STATS["slice_log"].append([time.time(), wall, cpu, label])
        top = STATS["longest_slices"]
        if len(top) < 5 or wall > top[-1]["wall_s"]:
            top.append({"wall_s": wall, "cpu_s": cpu, "label": label, "ts": time.time()})
            top.sort(key=lambda x: -x["wall_s"])
            del top[5:]


def _releases_gil(fn: Any) -> Any:
    """A call in which the recorder thread may let the GIL go: the slice ends before it."""

    def wrapper(*args: Any, **kw: Any) -> Any:
        if not _on_recorder() or _slice["depth"]:
            return fn(*args, **kw)  # another thread's call, or one inside such a call
        _close_slice()
        _slice["depth"] += 1
        try:
            return fn(*args, **kw)
        finally:
            _slice["depth"] -= 1
            _open_slice()

    return wrapper


class _TimedWaker:
    """The recorder's wake-up ``Event`` with its ``wait`` marked as a GIL release."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.wait = _releases_gil(inner.wait)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _TimeModule:
    """``time`` as the recorder module sees it, with ``sleep`` marked as a GIL release."""

    sleep = staticmethod(_releases_gil(time.sleep))

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


class CountingQueue(queue.SimpleQueue):  # type: ignore[type-arg]
    """The older recorder's queue: counts the blocking ``get`` calls (one per wakeup), each a
    GIL release."""

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        STATS["wakeups"] += 1  # only the recorder thread calls get()
        _close_slice()
        try:
            return super().get(block, timeout)
        finally:
            _open_slice()


# ---- timers --------------------------------------------------------------------------------


def _timed(name: str, fn: Any, label: str | None = None) -> Any:
    def wrapper(*args: Any, **kw: Any) -> Any:
        if label is not None and _slice["t"] is not None and _on_recorder():
            _slice["labels"].add(label)
        t, c = time.perf_counter(), time.thread_time()
        result = None
        try:
            result = fn(*args, **kw)
            return result
        finally:
            wall = time.perf_counter() - t
            s = STATS[name]
            s["n"] += 1
            s["wall_s"] += wall
            s["cpu_s"] += time.thread_time() - c
            s["max_wall_s"] = max(s["max_wall_s"], wall)
            if name == "take_in" and isinstance(result, int):
                s["events"] += result
            if label is not None and _slice["t"] is not None and _on_recorder():
                _slice["labels"].add(label)

    return wrapper


def _count_call(s: dict[str, Any], wall: float) -> None:
    s["n"] += 1
    s["wall_s"] += wall
    if wall > s["max_wall_s"]:
        s["max_wall_s"] = wall
    ns = wall * 1e9
    s["hist"][min(HIST_BUCKETS - 1, int(16 * math.log2(ns))) if ns >= 1 else 0] += 1


def _timed_wall(name: str, fn: Any) -> Any:
    """Wall time per call (the histogram) and the thread's CPU seconds in all: on a machine
    other work shares, a call's wall time holds the waits for a core and the GIL too."""

    def wrapper(*args: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        c = time.thread_time()
        try:
            return fn(*args, **kw)
        finally:
            s = STATS[name]
            s["cpu_s"] += time.thread_time() - c
            _count_call(s, time.perf_counter() - t)

    return wrapper


def _wrap(obj: Any, name: str, make: Any) -> bool:
    fn = getattr(obj, name, None)
    if fn is None:
        return False
    setattr(obj, name, make(fn))
    return True


# ---- the maintenance pass -------------------------------------------------------------------

_spawning = threading.local()


def _timed_fork_exec(fn: Any) -> Any:
    def wrapper(*args: Any, **kw: Any) -> Any:
        if not getattr(_spawning, "entry", None):
            return fn(*args, **kw)
        t, c = time.perf_counter(), time.thread_time()
        try:
            return fn(*args, **kw)
        finally:
            _spawning.entry["fork_exec_wall_s"] = time.perf_counter() - t
            _spawning.entry["fork_exec_cpu_s"] = time.thread_time() - c

    return wrapper


def _timed_spawn(fn: Any) -> Any:
    """``spawn_pass(root)``: the API process's part of a pass (one fork/exec)."""

    def wrapper(*args: Any, **kw: Any) -> Any:
        entry: dict[str, Any] = {"start_ts": time.time(), "tid": threading.get_native_id()}
        _spawning.entry = entry
        t, c = time.perf_counter(), time.thread_time()
        try:
            proc = fn(*args, **kw)
        finally:
            entry["spawn_wall_s"] = time.perf_counter() - t
            entry["spawn_cpu_s"] = time.thread_time() - c
            _spawning.entry = None
            with _lock:
                STATS["maintenance"].append(entry)
        entry["child_pid"] = proc.pid
        _watch_child(proc, entry)
        return proc

    return wrapper


def _watch_child(proc: subprocess.Popen[Any], entry: dict[str, Any]) -> None:
    """Reap the child with ``wait4`` instead of ``waitpid``, to keep its CPU seconds."""
    orig = proc._try_wait  # type: ignore[attr-defined]

    def try_wait(wait_flags: int) -> tuple[int, int]:
        try:
            pid, sts, ru = os.wait4(proc.pid, wait_flags)
        except ChildProcessError:
            return orig(wait_flags)  # type: ignore[no-any-return]
        if pid == proc.pid:
            entry["child_cpu_s"] = ru.ru_utime + ru.ru_stime
            entry["child_wall_s"] = time.time() - entry["start_ts"]
            entry["child_status"] = sts
        return pid, sts

    proc._try_wait = try_wait  # type: ignore[attr-defined]


def _install_maintenance() -> None:
    spawned = False
    for name in ("vllm_ledger.background", "vllm_ledger.maintenance"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        spawned = _wrap(mod, "spawn_pass", _timed_spawn) or spawned
    if spawned:
        STATS["shape"]["maintenance"] = "child process"
        subprocess._fork_exec = _timed_fork_exec(subprocess._fork_exec)  # type: ignore[attr-defined]
        return
    from vllm_ledger import maintenance  # the older shape: the pass runs on a thread here

    STATS["shape"]["maintenance"] = "thread in the API process"
    orig_pass = maintenance.run

    def maintenance_run(root: Path, *args: Any, **kw: Any) -> Any:
        t0, t, c = time.time(), time.perf_counter(), time.thread_time()
        result = orig_pass(root, *args, **kw)
        with _lock:
            STATS["maintenance"].append(
                {
                    "start_ts": t0,
                    "wall_s": time.perf_counter() - t,
                    "cpu_s": time.thread_time() - c,
                    "files_read": result.files_read,
                    "compacted": len(result.compacted),
                    "tid": threading.get_native_id(),
                }
            )
        return result

    maintenance.run = maintenance_run  # the background loop looks it up on each pass


# ---- installing -------------------------------------------------------------------------------


def _install() -> None:
    if getattr(Recorder, "_bench_probed", False):
        return
    Recorder._bench_probed = True  # type: ignore[attr-defined]
    STATS["switch_interval_s"] = sys.getswitchinterval()
    orig_start, orig_run = Recorder.start, Recorder._run

    def start(self: Recorder) -> None:
        if hasattr(self, "buffer"):
            STATS["shape"]["recorder"] = "buffer, own cadence"
            if hasattr(self, "wake"):
                self.wake = _TimedWaker(self.wake)
        else:
            STATS["shape"]["recorder"] = "queue, woken per put"
            q: queue.SimpleQueue[Any] = CountingQueue()
            old = self.queue  # type: ignore[attr-defined]
            while True:
                try:
                    q.put(old.get_nowait())
                except queue.Empty:
                    break
            self.queue = q  # type: ignore[attr-defined]
        orig_start(self)

    def run(self: Recorder) -> None:
        STATS["recorder_tid"] = threading.get_native_id()
        _slice["ident"] = threading.get_ident()
        _open_slice()
        try:
            orig_run(self)
        finally:
            _close_slice()

    Recorder.start = start  # type: ignore[method-assign]
    Recorder._run = run  # type: ignore[method-assign]
    for method, name, label in (
        ("_flush", "flush", "flush"),
        ("_take_in", "take_in", "take in"),
        ("_check_file", "check_file", "file check"),
        ("compact", "compact", "compaction"),
    ):
        _wrap(Recorder, method, lambda fn, n=name, lb=label: _timed(n, fn, lb))
    recorder_module.time = _TimeModule()  # type: ignore[assignment]
    for module, fn in (
        (writes, "commit_batch"),
        (smallfiles, "write_sequence_marker"),
        (connect, "open_for_write"),
        (connect, "file_damage"),
        (connect, "quick_check"),
        (connect, "close_without_checkpoint"),
    ):
        _wrap(module, fn, _releases_gil)
    compaction = getattr(recorder_module, "compaction", None)
    if compaction is not None:
        _wrap(compaction, "compact_connection", _releases_gil)
    _install_maintenance()
    _install_middleware()
    from vllm.v1.metrics import loggers

    prom = loggers.PrometheusStatLogger
    prom.record = _timed_wall("prometheus_record", prom.record)  # type: ignore[method-assign]
    STATS["timer_bias_us"] = _timer_bias_us()


def _install_middleware() -> None:
    """Run every call of the attribution middleware under the clock: its own code's CPU
    (``thread_time`` at every change of owner), apart from the app it wraps and the server's
    ``receive``/``send``. vLLM builds the middleware at the first request, after this."""
    cls = middleware_module.LedgerMiddleware
    original = cls.__call__
    cls._mwclock_original = original  # type: ignore[attr-defined]

    def __call__(self: Any, scope: Any, receive: Any, send: Any) -> Any:
        if not getattr(self, "_mwclock_app", False):
            self.app = CLOCK.wrap_app(self.app)
            self._mwclock_app = True
        return CLOCK.wrap_call(self, scope, receive, send)

    cls.__call__ = __call__  # type: ignore[method-assign]
    # The clock's own share per stretch, measured on a thread of its own: this runs inside
    # vLLM's starting loop, where asyncio.run cannot.
    t = threading.Thread(target=CLOCK.calibrate, name="bench-probe-calibrate")
    t.start()
    t.join()


class NullMiddleware:
    """The control beside the ledger's middleware: one that only hands the request on through
    its own ``receive`` and ``send`` (the ledger's shape, none of its work), under the same
    clock as ``null``. What the clock finds in it is the clock's own error in this process
    plus a few frames of real code. ``--middleware vllm_ledger_bench_probe.NullMiddleware``."""

    def __init__(self, app: Any) -> None:
        self.app = CLOCK.wrap_app(app, owner="null")

    def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        return CLOCK.wrap_call(self, scope, receive, send, owner="null")

    async def _mwclock_original(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return

        async def receive_body() -> Any:
            return await receive()

        async def send_watched(message: Any) -> None:
            await send(message)

        await self.app(scope, receive_body, send_watched)


def _middleware_stats() -> dict[str, Any]:
    return {
        "calls": CLOCK.requests,
        "own_cpu_s": CLOCK.own_s(),
        "null_cpu_s": CLOCK.own_s("null") if "null" in CLOCK.seconds else None,
        "charged_cpu_s": dict(CLOCK.seconds),
        "stretches": dict(CLOCK.stretches),
        "bias_us": CLOCK.bias_s * 1e6,
        "tagged": BOOK.begun_total,
        "faults": BOOK.faults_total,
        "book_full": BOOK.full_total,
    }


def _timer_bias_us() -> float:
    """What the ``record()`` timer adds to a call it times: the median of timing a call that
    does nothing, made the way vLLM calls ``record()``."""

    def noop(self: Any, *args: Any, **kw: Any) -> None:
        return None

    stats: dict[str, Any] = {
        "n": 0,
        "wall_s": 0.0,
        "cpu_s": 0.0,
        "max_wall_s": 0.0,
        "hist": [0] * HIST_BUCKETS,
    }
    STATS["_calibration"] = stats
    timed = _timed_wall("_calibration", noop)
    for _ in range(20_000):
        timed(None, scheduler_stats=None, iteration_stats=None, engine_idx=0)
    del STATS["_calibration"]
    STATS["timer_bias_cpu_us"] = 1e6 * stats["cpu_s"] / stats["n"]
    counts, seen = stats["hist"], 0
    for k, c in enumerate(counts):
        if seen + c >= stats["n"] / 2:
            return float(2 ** ((k + (stats["n"] / 2 - seen) / c) / 16) / 1e3)
        seen += c
    return 0.0


def _cpu_s(stat_path: str) -> float | None:
    try:
        with open(stat_path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime
    except (OSError, IndexError, ValueError):
        return None


def _child_seen(entry: dict[str, Any]) -> None:
    """While the maintenance child lives: its CPU so far and its nice level."""
    pid = entry.get("child_pid")
    if not pid or "child_cpu_s" in entry:
        return
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        entry["child_cpu_seen_s"] = (int(fields[11]) + int(fields[12])) / _TICK
        entry["child_nice"] = int(fields[16])
        entry["child_policy"] = int(fields[38])  # 5: SCHED_IDLE
    except (OSError, IndexError, ValueError):
        pass


def snapshot(logger: ProbedLedgerStatLogger | None = None) -> dict[str, Any]:
    pid = os.getpid()
    with _lock:
        for entry in STATS["maintenance"]:
            _child_seen(entry)
        STATS["middleware"] = _middleware_stats()
        doc = json.loads(json.dumps(STATS))
    doc["wall_ts"] = time.time()
    doc["process_cpu_s"] = _cpu_s(f"/proc/{pid}/stat")
    doc["main_thread_cpu_s"] = _cpu_s(f"/proc/{pid}/task/{pid}/stat")
    tid = doc["recorder_tid"]
    doc["recorder_cpu_s"] = _cpu_s(f"/proc/{pid}/task/{tid}/stat") if tid else None
    rec = logger.recorder if logger is not None else None
    if rec is not None:
        doc["submitted_total"] = rec.submitted_total
        doc["committed_events_total"] = rec.committed_events_total
        doc["dropped_total"] = rec.dropped_total
        own = getattr(rec, "wakeups_total", None)
        doc["wakeups_total"] = own if isinstance(own, int) else STATS["wakeups"]
        doc["wakeups_by_reason"] = dict(getattr(rec, "wakeups_by_reason", None) or {})
    return doc


def _write(path: Path, logger: ProbedLedgerStatLogger) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(snapshot(logger)))
    os.replace(tmp, path)


class ProbedLedgerStatLogger(LedgerStatLogger):
    """The real plugin, with the probe installed before its recorder starts; its ``record()``
    timed by the same wrapper as vLLM's ``PrometheusStatLogger.record()``."""

    def __init__(self, vllm_config: Any, engine_indexes: list[int] | None = None) -> None:
        _install()
        STATS["init_ts"] = time.time()
        super().__init__(vllm_config, engine_indexes)
        out = os.environ.get("BENCH_PROBE_OUT")
        if not out:
            return
        path = Path(out)

        def report() -> None:
            while True:
                try:
                    _write(path, self)
                except Exception:
                    pass
                time.sleep(1.0)

        threading.Thread(target=report, name="bench-probe", daemon=True).start()
        atexit.register(lambda: _write(path, self))


ProbedLedgerStatLogger.record = _timed_wall(  # type: ignore[method-assign]
    "ledger_record", LedgerStatLogger.record
)
