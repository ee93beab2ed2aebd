"""The probe's plugin: the real ``LedgerStatLogger`` with the probe installed before its
recorder starts, its ``record()`` timed by the same wrapper as vLLM's
``PrometheusStatLogger.record()``; the probe's figures read with the CPU seconds of the
process, its main thread and the recorder thread, and written as JSON to
``$BENCH_PROBE_OUT`` every second and at exit.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from vllm_ledger.plugin import LedgerStatLogger
from vllm_ledger.write.recorder import Recorder

from . import maintenance, middleware, recorder
from .stats import LOCK, STATS
from .timers import timed_wall, timer_bias_us

_TICK = os.sysconf("SC_CLK_TCK")


def _install() -> None:
    if getattr(Recorder, "_bench_probed", False):
        return
    Recorder._bench_probed = True  # type: ignore[attr-defined]
    STATS["switch_interval_s"] = sys.getswitchinterval()
    recorder.install()
    maintenance.install()
    middleware.install()
    from vllm.v1.metrics import loggers

    prom = loggers.PrometheusStatLogger
    prom.record = timed_wall("prometheus_record", prom.record)  # type: ignore[method-assign]
    STATS["timer_bias_us"] = timer_bias_us()


def _cpu_s(stat_path: str) -> float | None:
    try:
        with open(stat_path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime
    except (OSError, IndexError, ValueError):
        return None


def snapshot(logger: ProbedLedgerStatLogger | None = None) -> dict[str, Any]:
    pid = os.getpid()
    with LOCK:
        for entry in STATS["maintenance"]:
            maintenance.child_seen(entry)
        STATS["middleware"] = middleware.figures()
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


ProbedLedgerStatLogger.record = timed_wall(  # type: ignore[method-assign]
    "ledger_record", LedgerStatLogger.record
)
