"""The forms of capacity advice: the terminal text and JSON of an ``Advice``, and of a
``Baseline`` with the thresholds derived from it.

Each function takes a built ``plan.advise.Advice`` (or ``plan.baseline.Baseline`` and its
``Threshold``s) and returns a string; none samples a ``/metrics`` or asks a Prometheus.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from datetime import timezone, tzinfo
from typing import Any

from vllm_ledger.formats.table import aligned, pad
from vllm_ledger.plan.advise import Advice
from vllm_ledger.plan.advise_readings import Readings, told_lines
from vllm_ledger.plan.baseline import (
    MIN_HISTORY_S,
    Baseline,
    Threshold,
    history_warning,
    no_thresholds_reason,
    observability_flags,
    window_words,
)
from vllm_ledger.plan.baseline import told_lines as baseline_told_lines
from vllm_ledger.plan.partial import told_json
from vllm_ledger.units import format_instant

DIGITS = 4  # readings in JSON: enough for a percentage to a hundredth of a point
# How the text names a verdict's state: a rule whose condition does not hold was not
# triggered (nothing was missed). JSON keeps the state's own word.
LABELS = {"met": "met", "missed": "not triggered", "not judgeable": "not judgeable"}


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
    lines += [f"  {pad(k, 18)}{v}{_told_mark(r, k)}" for k, v in rows]
    lines.append("")
    for v in a.verdicts:
        lines.append(f"[{LABELS.get(v.state, v.state)}] {v.rule.name}: {v.rule.when} ({v.why})")
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
    if r.told:
        lines += [
            "",
            "INCOMPLETE: the readings marked come from answers the store called partial or "
            "gave a warning with; no rule is judged on them",
            *(f"  {line}" for line in told_lines(r)),
        ]
    return "\n".join(lines) + "\n"


# The readings each row of the text shows (a row is marked when any came from a partial answer).
_ROW_READINGS = {
    "KV-cache usage": ("kv_cache_usage",),
    "waiting requests": ("num_waiting",),
    "running requests": ("num_running",),
    "GPU utilisation": ("gpu_util_percent",),
    "TTFT P99": ("ttft_p99_seconds", "num_ttft"),
    "power": ("power_watts", "power_limit_watts"),
    "throughput": ("gen_tokens_per_s", "gen_tokens_per_s_halves"),
}


def _told_mark(r: Readings, row: str) -> str:
    return " (INCOMPLETE)" if any(name in r.told for name in _ROW_READINGS[row]) else ""


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
        "partial_answers": told_json(r.said),
    }


def render_json(a: Advice) -> str:
    return json.dumps(advice_dict(a), indent=2, allow_nan=False) + "\n"


# ---- a baseline and its thresholds ------------------------------------------------------------

BASELINE_DIGITS = 6
_SHOWN = {
    "ttft_p99_seconds": ("TTFT", lambda x: f"{x:.3f} s", lambda x: f"{x:g}"),
    "kv_cache_threshold": ("KV-cache usage", lambda x: f"{x * 100:.1f} %", lambda x: f"{x:g}"),
    "queue_waiting": ("waiting requests", lambda x: f"{x:.2f}", lambda x: f"{x:g}"),
}


def _or_na(x: float | None, fmt: Any) -> str:
    return "n/a" if x is None else str(fmt(x))


def flags_line(thresholds: Sequence[Threshold]) -> str:
    """The ``vllm-ledger observability`` command line carrying the thresholds."""
    return shlex.join(["vllm-ledger", "observability", *observability_flags(thresholds)])


def render_baseline_text(
    b: Baseline, thresholds: Sequence[Threshold], tz: tzinfo = timezone.utc
) -> str:
    """The window (its edges in ``tz``, with their offset), a warning when the history held is
    shorter than asked, the servers' baselines and the thresholds derived from them, or why
    none is proposed (under ``MIN_HISTORY_S`` of history)."""
    start = b.end_ts - b.window_seconds
    lines = [
        f"baseline over {window_words(b)}: {format_instant(start, tz)} .. "
        f"{format_instant(b.end_ts, tz)} from Prometheus {b.url}"
    ]
    warning = history_warning(b)
    if warning is not None:
        lines.append(warning + _history_edges(b, tz))
    lines.append("")
    # Instance and model are Prometheus label values: shown escaped, aligned by display width.
    rows = [["instance", "model_name", "TTFT P99", "KV-cache P99", "waiting P99", "KV samples"]]
    for g in b.groups:
        rows.append(
            [
                g.instance,
                g.model_name,
                _or_na(g.ttft_p99_seconds, lambda x: f"{x:.3f} s"),
                _or_na(g.kv_cache_p99, lambda x: f"{x * 100:.1f} %"),
                _or_na(g.waiting_p99, lambda x: f"{x:.2f}"),
                f"{g.kv_samples:,}",
            ]
        )
    lines += aligned(rows, right={2, 3, 4, 5}, safe=True)
    if not thresholds:
        reason = no_thresholds_reason(b) or "no thresholds"
        told = [f"  {line}" for line in baseline_told_lines(b)]
        return "\n".join([*lines, "", reason, *told]) + "\n"
    lines += ["", "thresholds (from the highest baseline of the servers above):"]
    for t in thresholds:
        name, base_fmt, value_fmt = _SHOWN[t.name]
        if t.value is None or t.baseline is None:
            lines.append(f"  {t.flag} (keep the default): no {name} data in the window")
        else:
            lines.append(
                f"  {t.flag} {value_fmt(t.value)}: baseline {name} P99 {base_fmt(t.baseline)}, "
                f"{t.rule}"
            )
    lines += ["", "as flags: " + flags_line(thresholds)]
    return "\n".join(lines) + "\n"


def _history_edges(b: Baseline, tz: tzinfo) -> str:
    if b.first_ts is None or b.last_ts is None:
        return ""
    return f" ({format_instant(b.first_ts, tz)} .. {format_instant(b.last_ts, tz)})"


def _r(x: float | None) -> float | None:
    return _round(x, BASELINE_DIGITS)


def baseline_dict(b: Baseline, thresholds: Sequence[Threshold]) -> dict[str, Any]:
    return {
        "prometheus": b.url,
        "window_seconds": b.window_seconds,
        "start": round(b.end_ts - b.window_seconds, 3),
        "end": round(b.end_ts, 3),
        "kv_metric": b.kv_metric,
        "queries": list(b.queries),
        "groups": [
            {
                "instance": g.instance,
                "model_name": g.model_name,
                "ttft_p99_seconds": _r(g.ttft_p99_seconds),
                "kv_cache_p99": _r(g.kv_cache_p99),
                "waiting_p99": _r(g.waiting_p99),
                "kv_samples": g.kv_samples,
            }
            for g in b.groups
        ],
        "history": {
            "first": None if b.first_ts is None else round(b.first_ts, 3),
            "last": None if b.last_ts is None else round(b.last_ts, 3),
            "seconds": None if b.history_seconds is None else round(b.history_seconds, 3),
            "minimum_seconds": MIN_HISTORY_S,
            "warning": history_warning(b),
        },
        "no_thresholds": None if thresholds else no_thresholds_reason(b) or "no thresholds",
        "thresholds": {
            t.name: {"flag": t.flag, "baseline": _r(t.baseline), "value": t.value, "rule": t.rule}
            for t in thresholds
        },
        "observability_flags": observability_flags(thresholds),
        "partial_answers": told_json(b.said),
    }


def render_baseline_json(b: Baseline, thresholds: Sequence[Threshold]) -> str:
    return json.dumps(baseline_dict(b, thresholds), indent=2, allow_nan=False) + "\n"


__all__ = [
    "advice_dict",
    "baseline_dict",
    "flags_line",
    "render_baseline_json",
    "render_baseline_text",
    "render_json",
    "render_text",
]
