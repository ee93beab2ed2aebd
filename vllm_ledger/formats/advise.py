"""The forms of capacity advice: the terminal text and JSON of an ``Advice``.

Each function takes a built ``plan.advise.Advice`` and returns a string; none samples a
``/metrics`` or asks a Prometheus.
"""

from __future__ import annotations

import json
from typing import Any

from vllm_ledger.plan.advise import Advice

DIGITS = 4  # readings in JSON: enough for a percentage to a hundredth of a point


def _round(x: float | None, digits: int) -> float | None:
    # Not formats.json's: importing it would pull the read side into a command reading no ledger.
    return None if x is None else round(x, digits)


def render_text(a: Advice) -> str:
    r = a.readings
    pct = None if r.kv_cache_usage is None else r.kv_cache_usage * 100
    halves = r.gen_tokens_per_s_halves
    rows = [
        ("KV-cache usage", "n/a" if pct is None else f"{pct:.1f} %"),
        ("waiting requests", "n/a" if r.num_waiting is None else f"{r.num_waiting:.2f}"),
        ("running requests", "n/a" if r.num_running is None else f"{r.num_running:.2f}"),
        ("GPU utilisation", "n/a" if r.gpu_util_percent is None else f"{r.gpu_util_percent:.1f} %"),
        (
            "TTFT P99",
            "n/a"
            if r.ttft_p99_seconds is None
            else f"{r.ttft_p99_seconds:.3f} s ({r.num_ttft} requests)",
        ),
        (
            "power",
            "n/a"
            if r.power_watts is None
            else f"{r.power_watts:.0f} W"
            + ("" if r.power_limit_watts is None else f" of {r.power_limit_watts:.0f} W limit"),
        ),
        (
            "throughput",
            "n/a"
            if r.gen_tokens_per_s is None
            else f"{r.gen_tokens_per_s:.1f} generation tokens/s"
            + ("" if halves is None else f" (halves {halves[0]:.1f} -> {halves[1]:.1f})"),
        ),
    ]
    lines = [f"readings over {r.seconds:.1f} s from {r.source}"]
    lines += [f"  {k:<18}{v}" for k, v in rows]
    lines.append("")
    for v in a.verdicts:
        lines.append(f"[{v.state}] {v.rule.name}: {v.rule.when} ({v.why})")
        if v.state == "met":
            lines.append(f"    diagnosis: {v.rule.diagnosis}; action: {v.rule.action}")
    lines.append("")
    if a.met:
        lines.append("met: " + ", ".join(v.rule.name for v in a.met))
    else:
        lines.append("met: none of the judged rules")
    if a.not_judgeable:
        lines.append(
            "not judgeable: " + ", ".join(f"{v.rule.name} ({v.why})" for v in a.not_judgeable)
        )
    return "\n".join(lines) + "\n"


def advice_dict(a: Advice) -> dict[str, Any]:
    r = a.readings
    return {
        "source": r.source,
        "seconds": _round(r.seconds, 3),
        "readings": {
            "kv_cache_usage": _round(r.kv_cache_usage, DIGITS),
            "num_waiting": _round(r.num_waiting, DIGITS),
            "num_running": _round(r.num_running, DIGITS),
            "gpu_util_percent": _round(r.gpu_util_percent, DIGITS),
            "ttft_p99_seconds": _round(r.ttft_p99_seconds, 6),
            "num_ttft": r.num_ttft,
            "power_watts": _round(r.power_watts, DIGITS),
            "power_limit_watts": _round(r.power_limit_watts, DIGITS),
            "gen_tokens_per_s": _round(r.gen_tokens_per_s, DIGITS),
            "gen_tokens_per_s_halves": None
            if r.gen_tokens_per_s_halves is None
            else [_round(x, DIGITS) for x in r.gen_tokens_per_s_halves],
        },
        "rules": [
            {
                "rule": v.rule.name,
                "state": v.state,
                "why": v.why,
                "diagnosis": v.rule.diagnosis,
                "action": v.rule.action,
            }
            for v in a.verdicts
        ],
        "met": [v.rule.name for v in a.met],
    }


def render_json(a: Advice) -> str:
    return json.dumps(advice_dict(a), indent=2, allow_nan=False) + "\n"


__all__ = ["advice_dict", "render_json", "render_text"]
