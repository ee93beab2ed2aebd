"""The probe's figures over the profile's window: what changed between two of its snapshots
(``bench/probe/``), per second or per call, the medians of ``record()`` from its histograms,
the recorder's GIL slices, the attribution middleware under its clock, and the part of a
maintenance spawn that held the GIL.
"""

from __future__ import annotations

import os
import subprocess
import time
from typing import Any


def _delta(a: dict[str, Any], b: dict[str, Any], key: str) -> float:
    return float((b.get(key) or 0) - (a.get(key) or 0))


def _hist_median(a: list[int], b: list[int]) -> float | None:
    """The median (us) of the calls between two snapshots of the probe's histogram (16 buckets
    an octave of nanoseconds), interpolated within its bucket on the log scale."""
    counts = [y - x for x, y in zip(a, b, strict=True)]
    total, seen = sum(counts), 0
    if not total:
        return None
    for k, c in enumerate(counts):
        if seen + c >= total / 2:
            return float(2 ** ((k + (total / 2 - seen) / c) / 16) / 1e3)
        seen += c
    return None


def vfork_wait_releases_gil() -> dict[str, Any]:
    """Whether this interpreter lets the GIL go while ``subprocess`` waits for a vfork'ed
    child to exec (3.11.7 does; not every CPython release does): a spawn made slow on
    purpose (30,000 missing PATH entries to try before ``true``), timed beside a thread
    that counts how long it waits for the GIL. The API processes run this same interpreter."""
    import threading

    state: dict[str, Any] = {"stop": False, "longest": 0.0, "t": None}

    def spin() -> None:
        last = time.perf_counter()
        while not state["stop"]:
            now = time.perf_counter()
            if state["t"] is not None and now >= state["t"]:
                state["longest"] = max(state["longest"], now - last)
            last = now

    real = os.get_exec_path
    bogus = [f"/nonexistent-{i}" for i in range(30_000)]
    t = threading.Thread(target=spin, daemon=True)
    t.start()
    time.sleep(0.1)
    try:
        os.get_exec_path = lambda env=None: [*bogus, *real(env)]  # subprocess looks it up
        state["t"] = time.perf_counter()
        p = subprocess.Popen(["true"], close_fds=True, start_new_session=True)
        spawn = time.perf_counter() - state["t"]
        state["t"] = None
        p.wait()
    except OSError as exc:
        return {"released": None, "error": str(exc)}
    finally:
        os.get_exec_path = real
        state["stop"] = True
        t.join()
    released = spawn >= 0.02 and state["longest"] < spawn / 2
    return {
        "released": released if spawn >= 0.02 else None,
        "spawn_ms": 1e3 * spawn,
        "other_thread_longest_wait_ms": 1e3 * state["longest"],
    }


def spawn_gil_ms(m: dict[str, Any], vfork_releases: bool | None) -> float:
    """The part of a maintenance spawn that held the API process's GIL: all of it, or, where
    the vfork wait lets the GIL go, all but fork_exec's time off the CPU (that wait)."""
    wall = float(m["spawn_wall_s"])
    if vfork_releases and "fork_exec_wall_s" in m:
        wall -= float(m["fork_exec_wall_s"]) - float(m["fork_exec_cpu_s"])
    return 1e3 * wall


def middleware_window(a: dict[str, Any], b: dict[str, Any], wall: float) -> dict[str, Any]:
    """The attribution middleware between two probe snapshots: its own CPU per second and per
    call, the control's (``NullMiddleware``), what the clock charged to the app and the
    server, the tag book's counts."""
    ma, mb = a.get("middleware") or {}, b.get("middleware") or {}
    if not mb:
        return {}
    calls = mb["calls"] - ma.get("calls", 0)
    own = mb["own_cpu_s"] - ma.get("own_cpu_s", 0.0)
    null = net = None
    stretches = {k: v - (ma.get("stretches") or {}).get(k, 0) for k, v in mb["stretches"].items()}
    if mb.get("null_cpu_s") is not None:
        null = mb["null_cpu_s"] - (ma.get("null_cpu_s") or 0.0)
        # The control's CPU per stretch is the clock's error here: taken off each of the
        # attribution middleware's stretches (and with it the control's few frames of code).
        per_stretch = null / stretches["null"] if stretches.get("null") else 0.0
        net = max(0.0, own - per_stretch * stretches.get("mw", 0))
    charged = {
        k: v - (ma.get("charged_cpu_s") or {}).get(k, 0.0) for k, v in mb["charged_cpu_s"].items()
    }
    return {
        "calls_per_s": calls / wall,
        "own_cpu_ms_per_s": 1e3 * own / wall,
        "own_cpu_us_per_call": 1e6 * own / calls if calls else None,
        "null_cpu_ms_per_s": None if null is None else 1e3 * null / wall,
        "null_cpu_us_per_call": None if null is None or not calls else 1e6 * null / calls,
        "net_cpu_ms_per_s": None if net is None else 1e3 * net / wall,
        "net_cpu_us_per_call": None if net is None or not calls else 1e6 * net / calls,
        "charged_cpu_ms_per_s": {k: 1e3 * v / wall for k, v in charged.items()},
        "stretches_per_call": {k: v / calls if calls else None for k, v in stretches.items()},
        "bias_us": mb["bias_us"],
        "tagged": mb["tagged"] - ma.get("tagged", 0),
        "faults": mb["faults"] - ma.get("faults", 0),
        "book_full": mb["book_full"],
    }


def window_slices(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The recorder thread's GIL slices between two probe snapshots: per kind (count, mean and
    CPU, from the running sums) and the longest (from the probe's log of slices >= 0.2 ms)."""
    kinds = {}
    for label, s in b.get("slices", {}).items():
        s0 = a.get("slices", {}).get(label, {"n": 0, "wall_s": 0.0, "cpu_s": 0.0})
        n = s["n"] - s0["n"]
        if n:
            kinds[label] = {
                "n": n,
                "mean_ms": 1e3 * (s["wall_s"] - s0["wall_s"]) / n,
                "cpu_ms": 1e3 * (s["cpu_s"] - s0["cpu_s"]),
            }
    logged = [e for e in b.get("slice_log", []) if a["wall_ts"] <= e[0] <= b["wall_ts"]]
    logged.sort(key=lambda e: -e[1])
    return {
        "kinds": kinds,
        "longest": [
            {"wall_ms": 1e3 * w, "cpu_ms": 1e3 * c, "label": lb, "ts": ts}
            for ts, w, c, lb in logged[:5]
        ],
        "over_1ms": sum(1 for e in logged if e[1] >= 0.001),
        "over_5ms": sum(1 for e in logged if e[1] >= 0.005),
        "log_full": len(b.get("slice_log", [])) >= 5000,
    }


def probe_figures(
    a: dict[str, Any],
    b: dict[str, Any],
    wall: float,
    maint: list[dict[str, Any]],
    slices: dict[str, Any],
) -> dict[str, Any]:
    """The probe's figures over the window between snapshots ``a`` and ``b`` (``wall``
    seconds apart), with the maintenance passes and the recorder's GIL slices in it."""
    longest_slice = slices["longest"][0]["wall_ms"] if slices["longest"] else None
    spawns = [m["spawn_gil_ms"] for m in maint if m["in_window"] and "spawn_gil_ms" in m]
    reasons = b.get("wakeups_by_reason") or {}
    return {
        "shape": b.get("shape"),
        "record_calls_per_s": _delta(a, b, "submitted_total") / wall,
        "wakeups_per_s": _delta(a, b, "wakeups_total") / wall,
        "wakeups_by_reason": {
            k: v - (a.get("wakeups_by_reason") or {}).get(k, 0) for k, v in reasons.items()
        },
        "flushes_per_s": (b["flush"]["n"] - a["flush"]["n"]) / wall,
        "flush_ms_mean": 1e3
        * (b["flush"]["wall_s"] - a["flush"]["wall_s"])
        / max(1, b["flush"]["n"] - a["flush"]["n"]),
        "flush_ms_max": 1e3 * b["flush"]["max_wall_s"],
        "flush_cpu_ms_per_s": 1e3 * (b["flush"]["cpu_s"] - a["flush"]["cpu_s"]) / wall,
        "take_ins_per_s": (b["take_in"]["n"] - a["take_in"]["n"]) / wall,
        "take_in_events_per_call": (b["take_in"]["events"] - a["take_in"]["events"])
        / max(1, b["take_in"]["n"] - a["take_in"]["n"]),
        "take_in_cpu_ms_per_s": 1e3 * (b["take_in"]["cpu_s"] - a["take_in"]["cpu_s"]) / wall,
        "check_file_cpu_ms_per_s": 1e3
        * (b["check_file"]["cpu_s"] - a["check_file"]["cpu_s"])
        / wall,
        "compact": b["compact"],
        "recorder_cpu_ms_per_s": 1e3 * _delta(a, b, "recorder_cpu_s") / wall,
        "recorder_wait_cpu_ms_per_s": 1e3
        * ((b.get("wait") or {}).get("cpu_s", 0.0) - (a.get("wait") or {}).get("cpu_s", 0.0))
        / wall,
        "main_thread_cpu_ms_per_s": 1e3 * _delta(a, b, "main_thread_cpu_s") / wall,
        "process_cpu_ms_per_s": 1e3 * _delta(a, b, "process_cpu_s") / wall,
        "maintenance": maint,
        "gil_slices": slices,
        "switch_interval_ms": 1e3 * (b.get("switch_interval_s") or 0.005),
        # The longest stretch of ledger code holding the GIL in the window: a recorder
        # slice, or the spawn of the maintenance child (None where neither was measured).
        "longest_gil_hold_ms": max([x for x in (longest_slice, *spawns) if x is not None])
        if longest_slice is not None or spawns
        else None,
        "timer_bias_us": b.get("timer_bias_us") or 0.0,
        "timer_bias_cpu_us": b.get("timer_bias_cpu_us") or 0.0,
        **{
            f"{k}_cpu_us_per_call": max(
                0.0,
                1e6
                * (b[k].get("cpu_s", 0.0) - a[k].get("cpu_s", 0.0))
                / max(1, b[k]["n"] - a[k]["n"])
                - (b.get("timer_bias_cpu_us") or 0.0),
            )
            for k in ("ledger_record", "prometheus_record")
        },
        "dropped": _delta(a, b, "dropped_total"),
        "ledger_record_max_us": 1e6 * b["ledger_record"]["max_wall_s"],
        **{
            f"{k}_us_per_call": 1e6
            * (b[k]["wall_s"] - a[k]["wall_s"])
            / max(1, b[k]["n"] - a[k]["n"])
            for k in ("ledger_record", "prometheus_record")
        },
        **{
            f"{k}_us_median": _hist_median(a[k]["hist"], b[k]["hist"])
            for k in ("ledger_record", "prometheus_record")
        },
        "prometheus_calls_per_s": (b["prometheus_record"]["n"] - a["prometheus_record"]["n"])
        / wall,
        "middleware": middleware_window(a, b, wall),
    }
