"""Compare the current run's ledger totals with vLLM's live /metrics counters.

The check the write-up asks for after every vLLM upgrade: the ledger's input, output and
cached tokens (and finished requests) for the run now serving must equal
``vllm:prompt_tokens_total``, ``vllm:generation_tokens_total``,
``vllm:prompt_tokens_cached_total`` (and ``vllm:request_success_total``) summed over engines.
vLLM's counters start at zero with each launch, so the ledger side is the newest run's
total. The ledger commits about once a second, so the check waits for it to catch up.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vllm_ledger.errors import BadArgument, LedgerUnavailable, RemoteError
from vllm_ledger.promtext import has_metric, parse_samples, sum_metric
from vllm_ledger.read.report import build_report

COUNTERS: tuple[tuple[str, str], ...] = (
    ("input", "vllm:prompt_tokens_total"),
    ("output", "vllm:generation_tokens_total"),
    ("cached", "vllm:prompt_tokens_cached_total"),
    ("requests", "vllm:request_success_total"),
)


@dataclass(frozen=True)
class Difference:
    figure: str
    metric: str
    ledger: int
    vllm: int


@dataclass(frozen=True)
class VerifyResult:
    run_id: str
    ledger: dict[str, int]
    vllm: dict[str, int]
    differences: tuple[Difference, ...]
    waited_s: float

    @property
    def match(self) -> bool:
        return not self.differences


def fetch_metrics(url: str, timeout_s: float = 10.0) -> str:
    if not url.startswith(("http://", "https://")):
        raise BadArgument(
            f"--metrics-url {url!r} is not an http(s) URL: e.g. http://127.0.0.1:8000/metrics"
        )
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            return r.read(32 * 1024 * 1024).decode("utf-8", "replace")
    except OSError as exc:
        raise RemoteError(f"cannot read {url}: {exc}; is vLLM running there?", url) from exc


def vllm_counters(metrics_text: str) -> dict[str, int]:
    samples = parse_samples(metrics_text)
    missing = [m for _k, m in COUNTERS if not has_metric(samples, m)]
    if missing:
        raise RemoteError(f"/metrics has no {', '.join(missing)}: is this a vLLM 0.32+ server?")
    return {key: round(sum_metric(samples, metric)) for key, metric in COUNTERS}


def ledger_run_totals(
    roots: Sequence[Path], clock: Callable[[], float] = time.time, run_id: str | None = None
) -> tuple[str, dict[str, int]]:
    """Totals of the newest run (or ``run_id``), every second up to now included."""
    # Report one second ahead so the second just committed is inside the cutoff.
    report = build_report(roots, at_ts=clock() + 1.0, by="run", clock=clock)
    if not report.breakdown:
        raise LedgerUnavailable(
            f"no ledger under {', '.join(map(str, roots))}: is the plugin on (VLLM_LEDGER_DIR)?",
            tuple(map(str, roots)),
        )
    if run_id is None:
        runs = sorted({w.run_id for w in report.writers})
        starts = {r: min((w.first_ts or 0) for w in report.writers if w.run_id == r) for r in runs}
        run_id = max(runs, key=lambda r: starts[r])
    row = next((r for r in report.breakdown if r.key == run_id), None)
    if row is None:
        raise LedgerUnavailable(f"run {run_id} not found under the roots")
    total = next(w for w in row.windows if w.name == "total")
    return run_id, {
        "input": total.input_tokens,
        "output": total.output_tokens,
        "cached": total.cached_tokens,
        "requests": total.requests,
    }


def verify(
    roots: Sequence[Path],
    metrics_url: str,
    *,
    wait_s: float = 10.0,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    run_id: str | None = None,
) -> VerifyResult:
    """Compare, re-checking until they agree or ``wait_s`` has passed (queue drain, commit)."""
    start = clock()
    while True:
        vllm = vllm_counters(fetch_metrics(metrics_url))
        rid, ledger = ledger_run_totals(roots, clock, run_id)
        diffs = tuple(
            Difference(key, metric, ledger[key], vllm[key])
            for key, metric in COUNTERS
            if ledger[key] != vllm[key]
        )
        waited = clock() - start
        if not diffs or waited >= wait_s:
            return VerifyResult(rid, ledger, vllm, diffs, waited)
        sleep(1.0)
