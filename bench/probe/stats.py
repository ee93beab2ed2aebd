"""The probe's figures, filled in by its timers and written out by ``logger.snapshot``: one
dict (``STATS``) and the lock that guards what more than one thread writes to it.
"""

from __future__ import annotations

import os
import threading
from typing import Any

HIST_BUCKETS = 16 * 34  # up to 2**34 ns, about 17 s
LOCK = threading.Lock()
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
    # The recorder's waits on its waker: CPU charged to its thread while it sleeps there (the
    # system call's entry and exit, and whatever stops and resumes the thread from outside,
    # such as py-spy's blocking sampler).
    "wait": {"n": 0, "cpu_s": 0.0},
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
