"""A measuring wrapper of the ledger plugin, for the bench's profiling step only.

``ProbedLedgerStatLogger`` is the real ``vllm_ledger.plugin:LedgerStatLogger`` with timers
around the recorder thread's own code paths, so the cost of the ledger inside a serving API
process can be read without a sampling profiler:

* wakeups: each return of the recorder thread's blocking ``queue.get`` (counted by a
  ``SimpleQueue`` subclass swapped in before the thread starts; ``submit()`` still calls the
  C ``put``/``qsize``, so the hot path is unchanged);
* flushes (``Recorder._flush``), file checks (``_check_file``) and compactions
  (``compact``): count, wall seconds and the recorder thread's CPU seconds;
* the rank-0 maintenance pass (``maintenance.run``): when, wall and CPU seconds, files read;
* ``record()`` of the plugin and of vLLM's ``PrometheusStatLogger`` on the same iterations:
  calls and wall seconds (the real per-call cost on a serving loop, where each ``put`` has to
  wake the sleeping recorder thread, which the hot-path micro-benchmark never does);
* CPU seconds of the whole process, its main thread (vLLM's asyncio loop) and the recorder
  thread, read from ``/proc/self/task``.

The figures are written as JSON to ``$BENCH_PROBE_OUT`` every second (replaced atomically)
and at exit. It is registered by a ``dist-info`` folder that ``bench/serve.py`` writes; it is
never part of a bundle.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import threading
import time
from pathlib import Path
from typing import Any

from vllm_ledger import maintenance
from vllm_ledger.plugin import LedgerStatLogger
from vllm_ledger.write.recorder import Recorder

_TICK = os.sysconf("SC_CLK_TCK")
_lock = threading.Lock()
STATS: dict[str, Any] = {
    "pid": os.getpid(),
    "init_ts": None,
    "recorder_tid": None,
    "wakeups": 0,
    "flush": {"n": 0, "wall_s": 0.0, "cpu_s": 0.0, "max_wall_s": 0.0},
    "check_file": {"n": 0, "wall_s": 0.0, "cpu_s": 0.0, "max_wall_s": 0.0},
    "compact": {"n": 0, "wall_s": 0.0, "cpu_s": 0.0, "max_wall_s": 0.0},
    "maintenance": [],
    # record() on vLLM's output loop, wall time per call (perf_counter only: cheap)
    # and a histogram of calls by bit length of the wall microseconds (bucket k: < 2**k us).
    "ledger_record": {"n": 0, "wall_s": 0.0, "max_wall_s": 0.0, "log2_us": [0] * 24},
    "prometheus_record": {"n": 0, "wall_s": 0.0, "max_wall_s": 0.0, "log2_us": [0] * 24},
}


class CountingQueue(queue.SimpleQueue):  # type: ignore[type-arg]
    """Counts the blocking ``get`` calls of the recorder loop: one per wakeup."""

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        STATS["wakeups"] += 1  # only the recorder thread calls get()
        return super().get(block, timeout)


def _timed(name: str, fn: Any) -> Any:
    def wrapper(*args: Any, **kw: Any) -> Any:
        t, c = time.perf_counter(), time.thread_time()
        try:
            return fn(*args, **kw)
        finally:
            wall = time.perf_counter() - t
            s = STATS[name]
            s["n"] += 1
            s["wall_s"] += wall
            s["cpu_s"] += time.thread_time() - c
            s["max_wall_s"] = max(s["max_wall_s"], wall)

    return wrapper


def _count_call(s: dict[str, Any], wall: float) -> None:
    s["n"] += 1
    s["wall_s"] += wall
    if wall > s["max_wall_s"]:
        s["max_wall_s"] = wall
    s["log2_us"][min(23, int(wall * 1e6).bit_length())] += 1


def _timed_wall(name: str, fn: Any) -> Any:
    def wrapper(*args: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            _count_call(STATS[name], time.perf_counter() - t)

    return wrapper


def _install() -> None:
    if getattr(Recorder, "_bench_probed", False):
        return
    Recorder._bench_probed = True  # type: ignore[attr-defined]
    orig_start, orig_run = Recorder.start, Recorder._run

    def start(self: Recorder) -> None:
        q: queue.SimpleQueue[Any] = CountingQueue()
        while True:
            try:
                q.put(self.queue.get_nowait())
            except queue.Empty:
                break
        self.queue = q
        orig_start(self)

    def run(self: Recorder) -> None:
        STATS["recorder_tid"] = threading.get_native_id()
        orig_run(self)

    Recorder.start = start  # type: ignore[method-assign]
    Recorder._run = run  # type: ignore[method-assign]
    Recorder._flush = _timed("flush", Recorder._flush)  # type: ignore[method-assign]
    Recorder._check_file = _timed("check_file", Recorder._check_file)  # type: ignore[method-assign]
    Recorder.compact = _timed("compact", Recorder.compact)  # type: ignore[method-assign]
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
    from vllm.v1.metrics import loggers

    prom = loggers.PrometheusStatLogger
    prom.record = _timed_wall("prometheus_record", prom.record)  # type: ignore[method-assign]


def _cpu_s(stat_path: str) -> float | None:
    try:
        with open(stat_path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime
    except (OSError, IndexError, ValueError):
        return None


def snapshot(logger: ProbedLedgerStatLogger | None = None) -> dict[str, Any]:
    pid = os.getpid()
    with _lock:
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
    return doc


def _write(path: Path, logger: ProbedLedgerStatLogger) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(snapshot(logger)))
    os.replace(tmp, path)


class ProbedLedgerStatLogger(LedgerStatLogger):
    """The real plugin, with the probe installed before its recorder starts."""

    def record(self, *args: Any, **kw: Any) -> None:
        t = time.perf_counter()
        super().record(*args, **kw)
        _count_call(STATS["ledger_record"], time.perf_counter() - t)

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
