"""The part ``profile``: where the ledger's cost goes in a serving API process. One server with
the ledger on runs ``bench/probe/``'s wrapper of the plugin (``bench/profiling.py``'s
``profile``); the rows here are the probe's figures beside their baselines: the recorder's
wakeups and CPU, ``record()`` against ``PrometheusStatLogger.record()``, the maintenance pass,
the attribution middleware, the ledger's CPU in all and its longest GIL hold.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from bench.parts.profile_cpu import ledger_ms
from bench.parts.profile_notes import profile_notes
from bench.parts.profile_spy import spy_rows
from bench.profiling import profile
from bench.results import DETAILS, row


def bench_profile(args: argparse.Namespace) -> None:
    d = profile(args.profile_seconds, args.profile_hz, args.profile_spy)
    DETAILS["profile"] = d
    pr = d["probe"]
    _recorder_rows(pr)
    _record_rows(pr)
    row("  flush (one transaction), mean", pr["flush_ms_mean"], "ms", "-", None, "", None, None)
    _maintenance_rows(pr)
    mw = pr.get("middleware") or {}
    if mw:
        _middleware_rows(pr, mw)
    _ledger_rows(pr, mw)
    profile_notes(d)
    spy_rows(d)


def _recorder_rows(pr: dict[str, Any]) -> None:
    """The recorder thread's wakeups against record() calls, its CPU against the process's."""
    row(
        "profile: recorder thread wakeups",
        pr["wakeups_per_s"],
        "/s",
        "<= 5/s under load",
        pr["record_calls_per_s"],
        "record() calls/s",
        pr["wakeups_per_s"] / pr["record_calls_per_s"] if pr["record_calls_per_s"] else None,
        pr["wakeups_per_s"] <= 5,
    )
    row(
        "  recorder thread CPU",
        pr["recorder_cpu_ms_per_s"],
        "ms/s",
        "-",
        pr["process_cpu_ms_per_s"],
        "API process CPU",
        pr["recorder_cpu_ms_per_s"] / pr["process_cpu_ms_per_s"]
        if pr["process_cpu_ms_per_s"]
        else None,
        None,
    )
    waiting = pr.get("recorder_wait_cpu_ms_per_s")
    if waiting is not None:
        row(
            "  of it, while asleep in its wait (stopped from outside)",
            waiting,
            "ms/s",
            "-",
            pr["recorder_cpu_ms_per_s"],
            "recorder thread CPU",
            waiting / pr["recorder_cpu_ms_per_s"] if pr["recorder_cpu_ms_per_s"] else None,
            None,
        )


def _record_rows(pr: dict[str, Any]) -> None:
    """record() of the ledger against PrometheusStatLogger.record(): CPU and wall per call,
    and the medians judged against the target."""
    if pr.get("ledger_record_cpu_us_per_call") is not None:
        lc, pc = pr["ledger_record_cpu_us_per_call"], pr["prometheus_record_cpu_us_per_call"]
        row(
            "  record() CPU per call in the serving process, mean",
            lc,
            "us",
            "-",
            pc,
            "PrometheusStatLogger.record()",
            lc / pc if pc else None,
            None,
        )
    lr, pr_us = pr["ledger_record_us_per_call"], pr["prometheus_record_us_per_call"]
    row(
        "  record() per call in the serving process, mean (probe)",
        lr,
        "us",
        "(hot path: <= 1/30)",
        pr_us,
        "PrometheusStatLogger.record()",
        lr / pr_us if pr_us else None,
        None,
    )
    # Both medians less what the timer adds to a call (timing a no-op the same way).
    bias = pr["timer_bias_us"]
    med = (pr["ledger_record_us_median"] or 0.0) - bias
    prom_raw = pr["prometheus_record_us_median"]
    prom_med = prom_raw - bias if prom_raw else None
    row(
        "  record() per call in the serving process, median",
        med,
        "us",
        "<= 1/10 of baseline",
        prom_med,
        "PrometheusStatLogger.record()",
        med / prom_med if prom_med else None,
        med / prom_med <= 0.1 if prom_med else None,
    )


def _maintenance_rows(pr: dict[str, Any]) -> None:
    """A row per rank-0 maintenance pass: the spawn of its child, or the pass on a thread."""
    for m in pr["maintenance"]:
        if "spawn_wall_s" in m:
            row(
                "  rank-0 maintenance: spawning its child, in the API process",
                m["spawn_wall_s"] * 1000,
                "ms",
                "-",
                None,
                "",
                None,
                None,
            )
        elif "files_read" in m:
            row(
                f"  rank-0 maintenance pass ({m['files_read']} files read, "
                f"{m['compacted']} compacted)",
                m["wall_s"] * 1000,
                "ms",
                "-",
                None,
                "",
                None,
                None,
            )


def _middleware_rows(pr: dict[str, Any], mw: dict[str, Any]) -> None:
    """The attribution middleware's own code by the probe's clock, against the main thread,
    and beside the control where it ran."""
    row(
        "  attribution middleware's own code (probe's clock)",
        mw["own_cpu_ms_per_s"],
        "ms/s",
        "-",
        pr["main_thread_cpu_ms_per_s"],
        "main thread (asyncio loop)",
        mw["own_cpu_ms_per_s"] / pr["main_thread_cpu_ms_per_s"]
        if pr["main_thread_cpu_ms_per_s"]
        else None,
        None,
    )
    if mw.get("null_cpu_ms_per_s") is not None:
        row(
            "  the control: a pass-through middleware, same clock",
            mw["null_cpu_ms_per_s"],
            "ms/s",
            "-",
            mw["own_cpu_ms_per_s"],
            "the attribution middleware",
            mw["null_cpu_ms_per_s"] / mw["own_cpu_ms_per_s"] if mw["own_cpu_ms_per_s"] else None,
            None,
        )
        row(
            "  the attribution middleware, less the control per stretch",
            mw["net_cpu_ms_per_s"],
            "ms/s",
            "-",
            mw["own_cpu_ms_per_s"],
            "the clock's own figure",
            mw["net_cpu_ms_per_s"] / mw["own_cpu_ms_per_s"] if mw["own_cpu_ms_per_s"] else None,
            None,
        )


def _ledger_rows(pr: dict[str, Any], mw: dict[str, Any]) -> None:
    """The ledger's CPU against the API process's and the machine's, and its longest GIL
    hold against CPython's switch interval."""
    cores = os.cpu_count() or 1
    in_process = (pr.get("shape") or {}).get("maintenance") == "thread in the API process"
    share = ledger_ms(pr) / pr["process_cpu_ms_per_s"] if pr["process_cpu_ms_per_s"] else None
    row(
        "  ledger CPU: recorder thread + record() + middleware",
        ledger_ms(pr),
        "ms/s",
        "<= 3% of the API process's",
        pr["process_cpu_ms_per_s"],
        "API process CPU",
        share,
        None if share is None or not mw else share <= 0.03,
    )
    row(
        "  the same against the machine",
        ledger_ms(pr),
        "ms/s",
        "-",
        1000.0 * cores,
        f"the machine ({cores} cores)",
        ledger_ms(pr) / (1000.0 * cores),
        None,
    )
    gil, switch = pr["longest_gil_hold_ms"], pr["switch_interval_ms"]
    if gil is not None:
        row(
            "  longest GIL hold by ledger code (API process)",
            gil,
            "ms",
            "<= 5 ms, maintenance included",
            switch,
            "CPython's switch interval",
            gil / switch,
            False if gil > 5 else (None if in_process else True),
        )
