"""A small parser for the Prometheus text exposition format (what /metrics serves). Pure.

Enough for counters, gauges and histograms as vLLM exports them: ``name{l="v",...} value``.
Comments, ``# TYPE``/``# HELP`` lines and timestamps are skipped; a malformed line is skipped.
"""

from __future__ import annotations

import math
import re

Sample = tuple[str, dict[str, str], float]

_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


def _unescape(v: str) -> str:
    return v.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")


def parse_labels(text: str) -> dict[str, str] | None:
    labels: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        m = _LABEL.match(text, pos)
        if not m:
            return None if text[pos:].strip() else labels
        labels[m.group(1)] = _unescape(m.group(2))
        pos = m.end()
    return labels


def parse_samples(text: str) -> list[Sample]:
    out: list[Sample] = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        labels = parse_labels(m.group(3) or "")
        if labels is None:
            continue
        try:
            value = float(m.group(4))
        except ValueError:
            continue
        out.append((m.group(1), labels, value))
    return out


def sum_metric(samples: list[Sample], name: str, **match: str) -> float:
    """Sum of every sample of ``name`` whose labels include ``match``; NaN samples skipped."""
    total = 0.0
    for n, labels, v in samples:
        if (
            n == name
            and all(labels.get(k) == want for k, want in match.items())
            and not math.isnan(v)
        ):
            total += v
    return total


def has_metric(samples: list[Sample], name: str) -> bool:
    return any(n == name for n, _l, _v in samples)
