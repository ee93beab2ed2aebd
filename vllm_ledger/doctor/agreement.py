"""The ``agreement`` check: ``verify`` (read/verify.py), the newest run's totals against a live
/metrics, another server's /metrics named as such.

``agreement_row`` turns what ``verify`` found into the row (pure); ``check_agreement`` asks
the server.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timezone, tzinfo
from pathlib import Path

from vllm_ledger.doctor.base import Row
from vllm_ledger.errors import LedgerError
from vllm_ledger.read.verify import COUNTERS, FETCH_TIMEOUT_S, VerifyResult, verify
from vllm_ledger.units import format_duration


def agreement_fix(url: str) -> str:
    """What to do when ``url`` cannot be compared with the ledger."""
    return (
        f"check that vLLM serves {url} and that --root is the ledger root it writes "
        "(VLLM_LEDGER_DIR)"
    )


def agreement_row(result: VerifyResult, metrics_url: str, tz: tzinfo = timezone.utc) -> Row:
    """The row for what ``verify`` found against ``metrics_url`` (instants in ``tz``). Pure."""
    if result.other_server is not None:
        return Row(
            "agreement",
            False,
            f"run {result.run_id}: {result.other_server.explain(tz)}",
            "point --metrics-url at the vLLM whose ledger is under --root",
        )
    if result.differences:
        diffs = "; ".join(
            f"{d.figure}: ledger {d.ledger:,} vs {d.metric} {d.vllm:,} "
            f"(diff {d.ledger - d.vllm:+,})"
            for d in result.differences
        )
        return Row(
            "agreement",
            False,
            f"run {result.run_id} after {format_duration(result.waited_s, 'words')}: {diffs}",
            "run it again when traffic is quiet; a difference that stays means events are "
            "lost or the stats interface changed (see the interface row and docs/faults.md)",
        )
    figures = ", ".join(f"{k} {result.ledger[k]:,}" for k, _m in COUNTERS)
    return Row("agreement", True, f"run {result.run_id}: {figures}, equal to {metrics_url}")


def check_agreement(
    roots: Sequence[Path],
    metrics_url: str | None,
    *,
    wait_s: float,
    timeout_s: float = FETCH_TIMEOUT_S,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    tz: tzinfo = timezone.utc,
) -> Row:
    if metrics_url is None:
        return Row(
            "agreement",
            False,
            "no /metrics to compare with",
            "pass --metrics-url http://HOST:PORT/metrics of the server writing the ledger",
        )
    try:
        result = verify(
            roots, metrics_url, wait_s=wait_s, clock=clock, sleep=sleep, timeout_s=timeout_s
        )
    except LedgerError as exc:
        return Row("agreement", False, str(exc), agreement_fix(metrics_url))
    return agreement_row(result, metrics_url, tz)
