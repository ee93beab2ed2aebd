"""The ledger's CPU in a serving API process, ms/s, from the probe's figures of the profile
part: its recorder thread, its ``record()`` calls on vLLM's loop and the attribution
middleware's own code.
"""

from __future__ import annotations

from typing import Any


def ledger_ms(pr: dict[str, Any]) -> float:
    """The ledger's CPU in the API process, ms/s: its recorder thread, its record() calls and
    the attribution middleware's own code."""
    return float(pr["recorder_cpu_ms_per_s"] + record_ms(pr) + middleware_ms(pr))


def record_ms(pr: dict[str, Any]) -> float:
    """record()'s CPU on vLLM's loop, ms/s: the calls' CPU time (thread_time, less what the
    timer adds) where the probe took it, else their wall time (which holds the waits for a core
    and for the GIL on a busy machine)."""
    per = pr.get("ledger_record_cpu_us_per_call")
    if per is None:
        per = pr["ledger_record_us_per_call"]
    return float(pr["record_calls_per_s"] * per / 1000)


def middleware_ms(pr: dict[str, Any]) -> float:
    """The attribution middleware's own CPU, ms/s: the probe's clock less its control where
    the control ran, else the clock's figure (its share per stretch taken off)."""
    mw = pr.get("middleware") or {}
    net = mw.get("net_cpu_ms_per_s")
    return float(net if net is not None else mw.get("own_cpu_ms_per_s", 0.0))
