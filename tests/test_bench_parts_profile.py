"""The bench's profile part (bench/parts/profile.py, profile_cpu.py, profile_notes.py,
profile_spy.py): from the probe's figures of one window, its rows in their order, the ledger's
CPU as the sum of its three parts, the notes and py-spy's rows."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from bench import results
from bench.parts import profile as part
from bench.parts.profile_cpu import ledger_ms, middleware_ms, record_ms
from bench.parts.profile_notes import profile_notes
from bench.parts.profile_spy import spy_rows


def _middleware() -> dict[str, Any]:
    return {
        "calls_per_s": 10.0,
        "own_cpu_ms_per_s": 2.0,
        "own_cpu_us_per_call": 200.0,
        "null_cpu_ms_per_s": 0.5,
        "null_cpu_us_per_call": 50.0,
        "net_cpu_ms_per_s": 1.5,
        "net_cpu_us_per_call": 150.0,
        "charged_cpu_ms_per_s": {"app": 5.0, "server": 1.0},
        "stretches_per_call": {"mw": 4.0, "null": 2.0},
        "bias_us": 1.0,
        "tagged": 800,
        "faults": 0,
        "book_full": 0,
    }


def _probe() -> dict[str, Any]:
    return {
        "shape": {"recorder": "buffer, own cadence", "maintenance": "child process"},
        "record_calls_per_s": 400.0,
        "wakeups_per_s": 1.0,
        "wakeups_by_reason": {"cadence": 80},
        "flushes_per_s": 1.0,
        "flush_ms_mean": 5.0,
        "flush_ms_max": 20.0,
        "flush_cpu_ms_per_s": 1.0,
        "take_ins_per_s": 1.0,
        "take_in_events_per_call": 400.0,
        "take_in_cpu_ms_per_s": 0.5,
        "check_file_cpu_ms_per_s": 0.1,
        "recorder_cpu_ms_per_s": 2.5,
        "recorder_wait_cpu_ms_per_s": 0.5,
        "main_thread_cpu_ms_per_s": 100.0,
        "process_cpu_ms_per_s": 200.0,
        "maintenance": [
            {"spawn_wall_s": 0.001, "spawn_cpu_s": 0.0005, "in_window": True, "spawn_gil_ms": 0.5}
        ],
        "gil_slices": {
            "kinds": {"flush": {"n": 80, "mean_ms": 0.2, "cpu_ms": 10.0}},
            "longest": [{"wall_ms": 1.5, "cpu_ms": 0.5, "label": "flush", "ts": 1.0}],
            "over_1ms": 1,
            "over_5ms": 0,
            "log_full": False,
        },
        "switch_interval_ms": 5.0,
        "longest_gil_hold_ms": 1.5,
        "timer_bias_us": 0.25,
        "ledger_record_cpu_us_per_call": 2.5,
        "prometheus_record_cpu_us_per_call": 25.0,
        "dropped": 0.0,
        "ledger_record_max_us": 300.0,
        "ledger_record_us_per_call": 3.0,
        "prometheus_record_us_per_call": 30.0,
        "ledger_record_us_median": 2.25,
        "prometheus_record_us_median": 20.25,
        "middleware": _middleware(),
    }


def _window(spy: dict[str, Any] | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"window_s": 80.0, "tokens_per_s": 1000.0, "probe": _probe()}
    d["se" + "ed"] = "8 writers x 1 day"
    d["vfork_wait_releases_gil"] = {"released": False}
    if spy is not None:
        d["py_spy"] = spy
    return d


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(results, "ROWS", [])
    monkeypatch.setattr(results, "DETAILS", {})
    monkeypatch.setattr(part, "DETAILS", results.DETAILS)
    results.begin("profile")


def test_the_ledger_s_cpu_is_its_recorder_its_record_calls_and_its_middleware() -> None:
    pr = _probe()
    assert record_ms(pr) == 1.0  # 400 calls/s of 2.5 us CPU
    assert middleware_ms(pr) == 1.5  # the clock's figure less the control
    assert ledger_ms(pr) == 5.0
    del pr["ledger_record_cpu_us_per_call"], pr["middleware"]["net_cpu_ms_per_s"]
    assert record_ms(pr) == 1.2 and middleware_ms(pr) == 2.0  # wall time; the clock alone


def test_the_rows_in_their_order(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(part, "profile", lambda *a: _window())
    part.bench_profile(argparse.Namespace(profile_seconds=80, profile_hz=100, profile_spy="off"))
    rows = {r["what"].strip(): r for r in results.ROWS}
    assert list(rows) == [
        "profile: recorder thread wakeups",
        "recorder thread CPU",
        "of it, while asleep in its wait (stopped from outside)",
        "record() CPU per call in the serving process, mean",
        "record() per call in the serving process, mean (probe)",
        "record() per call in the serving process, median",
        "flush (one transaction), mean",
        "rank-0 maintenance: spawning its child, in the API process",
        "attribution middleware's own code (probe's clock)",
        "the control: a pass-through middleware, same clock",
        "the attribution middleware, less the control per stretch",
        "ledger CPU: recorder thread + record() + middleware",
        "the same against the machine",
        "longest GIL hold by ledger code (API process)",
    ]
    assert rows["record() per call in the serving process, median"]["measured"] == 2.0
    waiting = rows["of it, while asleep in its wait (stopped from outside)"]
    assert (waiting["measured"], waiting["ratio"]) == (0.5, 0.2)
    assert rows["record() per call in the serving process, median"]["met"] is True
    assert rows["ledger CPU: recorder thread + record() + middleware"]["met"] is True
    assert rows["longest GIL hold by ledger code (API process)"]["met"] is True
    notes = results.DETAILS["notes"]["profile"]
    assert notes[-1] == "profile: no py-spy samples (not installed, or ptrace refused); " + (
        "probe figures only"
    )


def test_the_notes_name_each_figure_s_source(fresh: None) -> None:
    profile_notes(_window())
    notes = results.DETAILS["notes"]["profile"]
    assert [n.split(":")[0].split(" (")[0] for n in notes] == [
        "profile",
        "profile, attribution middleware",
        "profile",
        "profile, record() medians",
        "profile, recorder GIL slices in the window",
        "profile",
    ]
    assert "is 2.5% of the API process's 200 ms/s" in notes[2]
    assert "(all of the spawn's wall time)" in notes[5]


def test_py_spy_s_share_of_samples_per_second(fresh: None) -> None:
    spy = {
        "ticks": 8000,
        "samples": 2000,
        "threads": {"MainThread": 1000, "vllm-ledger-recorder": 10},
        "recorder": {"flush: commit_batch (SQLite)": 10},
        "maintenance": {},
        "main": {
            "ledger record() (plugin hot path)": 2,
            "vLLM's PrometheusStatLogger.record()": 20,
            "ledger middleware (its own frames)": 10,
        },
    }
    spy_rows(_window(spy))
    rows = [(r["what"].strip(), r["measured"], r["baseline"]) for r in results.ROWS]
    assert rows == [
        ("recorder thread holding the GIL (py-spy --gil)", 1.25, 125.0),  # 10 ms a sample
        ("record() on the main thread holding the GIL", 0.25, 2.5),
        ("middleware's own frames, share of main-thread samples x its CPU", 1.0, 1.5),
    ]
