"""The probe's timers: a call's count, wall and thread CPU seconds kept under its name in
``STATS`` (the recorder's own paths, marking the open GIL slice with what ran in it), and
``record()``'s wall time per call in a histogram of 16 buckets an octave, with what the timer
itself adds to a call.
"""

from __future__ import annotations

import math
import time
from typing import Any

from . import slices
from .stats import HIST_BUCKETS, STATS


def timed(name: str, fn: Any, label: str | None = None) -> Any:
    def wrapper(*args: Any, **kw: Any) -> Any:
        if label is not None:
            slices.mark(label)
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
            if label is not None:
                slices.mark(label)

    return wrapper


def _count_call(s: dict[str, Any], wall: float) -> None:
    s["n"] += 1
    s["wall_s"] += wall
    if wall > s["max_wall_s"]:
        s["max_wall_s"] = wall
    ns = wall * 1e9
    s["hist"][min(HIST_BUCKETS - 1, int(16 * math.log2(ns))) if ns >= 1 else 0] += 1


def timed_wall(name: str, fn: Any) -> Any:
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


def wrap(obj: Any, name: str, make: Any) -> bool:
    fn = getattr(obj, name, None)
    if fn is None:
        return False
    setattr(obj, name, make(fn))
    return True


def timer_bias_us() -> float:
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
    timed = timed_wall("_calibration", noop)
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
