"""GIL slices of the recorder thread: the thread can let the GIL go only where it waits (its
wake-up wait or ``queue.get``), sleeps (``time.sleep(0)`` between take-in slices), or calls
into SQLite and the file system (``writes.commit_batch``, ``write_sequence_marker``,
``open_for_write``, ``file_damage``, ``quick_check``, ``compaction.compact_connection``).
A timer closes a slice as the thread enters one of those and opens the next as it comes back,
so each slice's wall time bounds from above one stretch of Python that held the GIL throughout
(an OS preemption inside the stretch counts in it; the GIL-held parts inside those calls, such
as binding one row's parameters, are not counted).
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

from .stats import LOCK, STATS

SLICE_LOG_MIN_S = 0.0002
SLICE_LOG_MAX = 5_000
_slice: dict[str, Any] = {"ident": None, "t": None, "c": 0.0, "labels": set(), "depth": 0}


def _on_recorder() -> bool:
    return threading.get_ident() == _slice["ident"]


def on_this_thread() -> None:
    """The calling thread is the recorder's: its slices are the ones timed."""
    _slice["ident"] = threading.get_ident()


def mark(label: str) -> None:
    """Name what runs in the recorder thread's open slice (a call from it only)."""
    if _slice["t"] is not None and _on_recorder():
        _slice["labels"].add(label)


def open_slice() -> None:
    _slice["labels"] = set()
    _slice["c"] = time.thread_time()
    _slice["t"] = time.perf_counter()


def close_slice() -> None:
    t = _slice["t"]
    if t is None:
        return
    wall = time.perf_counter() - t
    cpu = time.thread_time() - _slice["c"]
    _slice["t"] = None
    label = "+".join(sorted(_slice["labels"])) or "loop"
    with LOCK:
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


def releases_gil(fn: Any) -> Any:
    """A call in which the recorder thread may let the GIL go: the slice ends before it."""

    def wrapper(*args: Any, **kw: Any) -> Any:
        if not _on_recorder() or _slice["depth"]:
            return fn(*args, **kw)  # another thread's call, or one inside such a call
        close_slice()
        _slice["depth"] += 1
        try:
            return fn(*args, **kw)
        finally:
            _slice["depth"] -= 1
            open_slice()

    return wrapper


def cpu_while_waiting(fn: Any) -> Any:
    """The recorder's wait, with the CPU its thread is charged while in it (``STATS["wait"]``)."""

    def wrapper(*args: Any, **kw: Any) -> Any:
        c = time.thread_time()
        try:
            return fn(*args, **kw)
        finally:
            w = STATS["wait"]
            w["n"] += 1
            w["cpu_s"] += time.thread_time() - c

    return wrapper


class TimedWaker:
    """The recorder's wake-up ``Event`` with its ``wait`` marked as a GIL release, and the CPU
    its thread is charged while it waits counted."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.wait = releases_gil(cpu_while_waiting(inner.wait))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class TimeModule:
    """``time`` as the recorder module sees it, with ``sleep`` marked as a GIL release."""

    sleep = staticmethod(releases_gil(time.sleep))

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


class CountingQueue(queue.SimpleQueue):
    """The older recorder's queue: counts the blocking ``get`` calls (one per wakeup), each a
    GIL release."""

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        STATS["wakeups"] += 1  # only the recorder thread calls get()
        close_slice()
        try:
            return super().get(block, timeout)
        finally:
            open_slice()
