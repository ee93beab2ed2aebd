"""The probe's figures over a window (bench/probe_window.py): what changed between two
snapshots, per second and per call, from hand-made snapshots with known answers."""

from __future__ import annotations

from typing import Any

from bench.probe.stats import HIST_BUCKETS
from bench.probe_window import middleware_window, probe_figures, spawn_gil_ms, window_slices


def _calls(n: int, wall_s: float, bucket: int) -> dict[str, Any]:
    hist = [0] * HIST_BUCKETS
    hist[bucket] = n
    return {"n": n, "wall_s": wall_s, "cpu_s": wall_s / 2, "max_wall_s": 0.001, "hist": hist}


def _snap(t: float, k: int) -> dict[str, Any]:
    """A snapshot at wall time ``t`` after ``k`` seconds of steady work."""
    paths = {"n": k, "wall_s": 0.01 * k, "cpu_s": 0.005 * k, "max_wall_s": 0.01, "events": 10 * k}
    return {
        "wall_ts": t,
        "shape": {"recorder": "buffer, own cadence", "maintenance": "child process"},
        "submitted_total": 100 * k,
        "wakeups_total": k,
        "wakeups_by_reason": {"cadence": k},
        "flush": dict(paths),
        "take_in": dict(paths),
        "check_file": dict(paths),
        "compact": dict(paths),
        "recorder_cpu_s": 0.002 * k,
        "wait": {"n": k, "cpu_s": 0.0005 * k},
        "main_thread_cpu_s": 0.1 * k,
        "process_cpu_s": 0.2 * k,
        "dropped_total": 0,
        "timer_bias_us": 0.25,
        "timer_bias_cpu_us": 0.0,
        "ledger_record": _calls(100 * k, 1e-4 * k, 16 * 10),  # about 1 us a call
        "prometheus_record": _calls(100 * k, 2e-3 * k, 16 * 14),
        "slices": {"flush": {"n": k, "wall_s": 0.001 * k, "cpu_s": 0.0005 * k}},
        "slice_log": [[t - 0.5, 0.0012, 0.0004, "flush"]],
    }


def test_the_window_gives_rates_per_second_and_per_call() -> None:
    a, b = _snap(1000.0, 10), _snap(1010.0, 20)
    slices = window_slices(a, b)
    assert slices["kinds"] == {"flush": {"n": 10, "mean_ms": 1.0, "cpu_ms": 5.0}}
    assert [s["wall_ms"] for s in slices["longest"]] == [1.2]
    assert (slices["over_1ms"], slices["over_5ms"], slices["log_full"]) == (1, 0, False)
    pr = probe_figures(a, b, 10.0, [], slices)
    assert pr["record_calls_per_s"] == 100
    assert pr["wakeups_per_s"] == 1
    assert round(pr["recorder_wait_cpu_ms_per_s"], 6) == 0.5  # of the recorder's 2 ms/s
    assert pr["wakeups_by_reason"] == {"cadence": 10}
    assert pr["flush_ms_mean"] == 10
    assert pr["take_in_events_per_call"] == 10
    assert round(pr["process_cpu_ms_per_s"], 6) == 200
    assert pr["longest_gil_hold_ms"] == 1.2
    # 1000 calls in bucket 160 (2**10 ns up): the median halfway through it, in us.
    assert pr["ledger_record_us_median"] == 2 ** (160.5 / 16) / 1e3
    assert pr["middleware"] == {}


def test_a_spawn_counts_whole_unless_the_vfork_wait_lets_the_gil_go() -> None:
    m = {"spawn_wall_s": 0.010, "fork_exec_wall_s": 0.008, "fork_exec_cpu_s": 0.001}
    assert spawn_gil_ms(m, None) == 10.0
    assert round(spawn_gil_ms(m, True), 6) == 3.0


def test_the_middleware_less_the_control_per_stretch() -> None:
    a = {"middleware": {"calls": 0, "own_cpu_s": 0.0, "stretches": {}, "charged_cpu_s": {}}}
    b = {
        "middleware": {
            "calls": 100,
            "own_cpu_s": 0.5,
            "null_cpu_s": 0.1,
            "stretches": {"mw": 400, "null": 200},
            "charged_cpu_s": {"app": 2.0},
            "bias_us": 1.0,
            "tagged": 100,
            "faults": 0,
            "book_full": 0,
        }
    }
    w = middleware_window(a, b, 10.0)
    assert w["own_cpu_ms_per_s"] == 50
    assert w["null_cpu_ms_per_s"] == 10
    assert round(w["net_cpu_ms_per_s"], 6) == 30  # 0.5 s less 400 stretches of 0.5 ms
    assert w["stretches_per_call"] == {"mw": 4, "null": 2}
