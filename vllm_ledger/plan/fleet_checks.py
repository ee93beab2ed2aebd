"""The value gate on a fleet's served samples (``read/values.py``), before anything is summed.
Pure.

Each served value is judged by what it is: ``report_ok`` and ``complete`` as 0 or 1, a figure by
its own bound, a problem count as a count, coverage seconds by their range. A value the gate
refuses is a ``Refused``: named, never summed. A host's newest sample stamped more than
``AHEAD_TOLERANCE_S`` after the query's instant names its clock as ahead (``clock_ahead``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from vllm_ledger import figures, names
from vllm_ledger.errors import BadValues
from vllm_ledger.plan.fleet_copies import Sample, host_of, series_text
from vllm_ledger.read import values
from vllm_ledger.units import EARLIEST_AT, LATEST_AT

# A sample may be stamped this far after the query's instant (clocks a little apart) before its
# host's clock is named as ahead.
AHEAD_TOLERANCE_S = 60.0


@dataclass(frozen=True)
class Refused:
    """A value the value gate refused (``read/values.py``): not counted."""

    host: str
    window: str  # "" for a series without one
    series: str
    value: float
    why: str  # the gate's words


# How each served value is judged (``read/values.py``): a figure by its own bound, coverage by
# its range.
_FIGURE: dict[str, figures.Figure] = {f.report_name: f for f in figures.FIGURES}
_MOST_SECONDS = LATEST_AT - EARLIEST_AT


def check_sample(name: str, labels: dict[str, str], value: float) -> float:
    """``value`` of one served series through the value gate, or ``BadValues``."""
    what = series_text(labels)
    if name == "report_ok" or name == "complete":
        return values.check_number(what, value, most=1, whole=True)
    if name in _FIGURE:
        return values.check_reported(what, value, _FIGURE[name])
    if name == "problems":
        return values.check_number(what, value, most=values.MAX_COUNT, whole=True)
    return values.check_number(what, value, most=_MOST_SECONDS)


def clock_ahead(ahead: Sequence[Sample], at_ts: float) -> dict[str, tuple[float, str]]:
    """Per host whose newest sample is stamped more than ``AHEAD_TOLERANCE_S`` after ``at_ts``:
    how far, and the value gate's words."""
    out: dict[str, tuple[float, str]] = {}
    for labels, value in ahead:
        try:
            values.check_sample_time(
                names.LEDGER_REPORT_OK, value, at_ts=at_ts, ahead_s=AHEAD_TOLERANCE_S
            )
        except BadValues as exc:
            hk = host_of(labels)
            skew = value - at_ts if math.isfinite(value) else math.inf
            if skew > out.get(hk, (-math.inf, ""))[0]:
                out[hk] = (skew, exc.what)
    return out


__all__ = ["AHEAD_TOLERANCE_S", "Refused", "check_sample", "clock_ahead"]
