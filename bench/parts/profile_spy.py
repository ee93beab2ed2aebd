"""The profile part's py-spy figures: the share of ``py-spy record --gil`` samples in which the
recorder thread, ``record()`` on the main thread and the middleware's own frames held the GIL,
beside the main thread and ``PrometheusStatLogger.record()``.
"""

from __future__ import annotations

from typing import Any

from bench.results import note, row


def spy_rows(d: dict[str, Any]) -> None:
    """py-spy's rows and its note, or a note that it took no samples."""
    spy = d.get("py_spy")
    if not spy or "threads" not in spy:
        note("profile: no py-spy samples (not installed, or ptrace refused); probe figures only")
        return
    ticks = spy["ticks"]
    ms = 1000 / (ticks / d["window_s"])  # ms of wall time one sample stands for

    def per_s(n: int) -> float:
        return n * ms / d["window_s"]

    rec = sum(spy["recorder"].values())
    main = spy["threads"].get("MainThread", 0)
    row(
        "  recorder thread holding the GIL (py-spy --gil)",
        per_s(rec),
        "ms/s",
        "-",
        per_s(main),
        "main thread (asyncio loop)",
        rec / main if main else None,
        None,
    )
    hot = spy["main"].get("ledger record() (plugin hot path)", 0)
    prom = spy["main"].get("vLLM's PrometheusStatLogger.record()", 0)
    row(
        "  record() on the main thread holding the GIL",
        per_s(hot),
        "ms/s",
        "-",
        per_s(prom),
        "PrometheusStatLogger.record()",
        hot / prom if prom else None,
        None,
    )
    own = spy["main"].get("ledger middleware (its own frames)", 0)
    main_cpu = d["probe"]["main_thread_cpu_ms_per_s"]
    if own and main:
        row(
            "  middleware's own frames, share of main-thread samples x its CPU",
            own / main * main_cpu,
            "ms/s",
            "-",
            (d["probe"].get("middleware") or {}).get("net_cpu_ms_per_s"),
            "the probe's clock, less the control",
            None,
            None,
        )
    maint = sum(spy["maintenance"].values())
    note(
        f"profile, py-spy --gil at {ticks / d['window_s']:.0f} Hz, {spy['samples']} samples with a "
        f"GIL holder of {ticks} ticks: threads {spy['threads']}; recorder {spy['recorder']}; "
        f"maintenance thread {spy['maintenance']} ({maint * ms:.0f} ms of GIL in all); main "
        f"thread {spy['main']}"
    )
