"""What the serving bench reads from /proc (bench/procstat.py), read here on this test's own
process: CPU seconds grow with work, context switches are counted over living threads, and a
window reports each share."""

from __future__ import annotations

import os
import time

from bench.procstat import CpuWindow, _cpu_s, _ctx_switches, api_pids


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_cpu_seconds_and_context_switches_of_this_process() -> None:
    before = _cpu_s(os.getpid())
    _spin(0.05)
    assert _cpu_s(os.getpid()) > before
    switches, threads = _ctx_switches(os.getpid())
    assert switches > 0 and threads >= 1
    assert _cpu_s(2**22 + 12345) == 0.0  # no such process


def test_a_process_with_no_api_server_children_is_its_own_api_process() -> None:
    assert api_pids(os.getpid()) == [os.getpid()]


def test_a_window_reports_the_api_process_and_the_rest() -> None:
    w = CpuWindow(os.getpid(), [os.getpid()])
    _spin(0.05)
    time.sleep(0.01)
    doc = w.stop()
    assert doc["api_pids"] == [os.getpid()]
    assert doc["api_cpu_s"] > 0 and doc["wall_s"] > 0
    assert doc["engine_cpu_s"] == 0
    assert doc["api_ctx_switches"] >= 0
    assert set(doc) >= {"client_cpu_s", "machine_busy_cores", "other_work_cores", "api_threads"}
