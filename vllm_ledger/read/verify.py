"""Compare the current run's ledger totals with vLLM's live /metrics counters.

The check to run after every vLLM upgrade (docs/ledger.md#verification-against-vllm): the
ledger's input, output and cached tokens (and finished requests) for the run now serving must equal
``vllm:prompt_tokens_total``, ``vllm:generation_tokens_total``,
``vllm:prompt_tokens_cached_total`` (and ``vllm:request_success_total``) summed over engines.
vLLM's counters start at zero with each launch, so the ledger side is the newest run's
total. The ledger commits about once a second, so the check waits for it to catch up.

Pointed at another server's /metrics, the figures would differ for no fault of the ledger.
vLLM's counters carry ``_created`` samples (when each counter was made: its launch), and vLLM
makes them in the same loop that builds this plugin's writer, so they fall within a second or
two of the run's start. Counters created more than ``SAME_LAUNCH_S`` away from the compared run's
start are named as another server's (or another launch's), not reported as a difference.
A /metrics without ``_created`` samples (vLLM's multi-process mode leaves them out) is compared
on the figures alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timezone, tzinfo
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from vllm_ledger.errors import BadArgument, LedgerUnavailable, RemoteError
from vllm_ledger.http import client
from vllm_ledger.http.urls import url_problem
from vllm_ledger.names import (
    VLLM_GENERATION_TOKENS_TOTAL,
    VLLM_PROMPT_TOKENS_CACHED_TOTAL,
    VLLM_PROMPT_TOKENS_TOTAL,
    VLLM_REQUEST_SUCCESS_TOTAL,
)
from vllm_ledger.promtext import Sample, has_metric, parse_samples, sum_metric
from vllm_ledger.read.matched import root_hint
from vllm_ledger.read.report import build_report
from vllm_ledger.units import EARLIEST_AT, LATEST_AT, format_instant

COUNTERS: tuple[tuple[str, str], ...] = (
    ("input", VLLM_PROMPT_TOKENS_TOTAL),
    ("output", VLLM_GENERATION_TOKENS_TOTAL),
    ("cached", VLLM_PROMPT_TOKENS_CACHED_TOTAL),
    ("requests", VLLM_REQUEST_SUCCESS_TOTAL),
)

# The counters' creation samples: vllm:prompt_tokens_total -> vllm:prompt_tokens_created.
CREATED: tuple[str, ...] = tuple(m.removesuffix("_total") + "_created" for _k, m in COUNTERS)
# Counters created this far (or further) from the run's start are not that run's launch's.
SAME_LAUNCH_S = 30.0
FETCH_TIMEOUT_S = 10.0  # one /metrics read, whole
MAX_METRICS_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class OtherServer:
    """The /metrics counters were created ``offset_s`` away from the compared run's start."""

    created_ts: float
    run_start_ts: float

    @property
    def offset_s(self) -> float:
        """Seconds from the run's start to the counters' creation (negative: before it)."""
        return self.created_ts - self.run_start_ts

    def explain(self, tz: tzinfo = timezone.utc) -> str:
        """One line: why these counters are another server's, and what to do (times in
        ``tz``)."""
        when = "after" if self.offset_s > 0 else "before"
        return (
            f"/metrics is another server's (or another launch's): its counters were created at "
            f"{format_instant(self.created_ts, tz)}, {abs(self.offset_s):,.0f} s {when} this run "
            f"started ({format_instant(self.run_start_ts, tz)}); the figures were not compared: "
            "point --metrics-url at the server that writes this ledger (or pass --run for the "
            "run it serves)"
        )


@dataclass(frozen=True)
class RunTotals:
    """The compared run: its id, its totals and when its first writer started."""

    run_id: str
    totals: dict[str, int]
    start_ts: float | None
    live_writers: int = 0  # writers of the run still alive: only they can change its totals


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
    other_server: OtherServer | None = None

    @property
    def match(self) -> bool:
        return not self.differences and self.other_server is None


def fetch_metrics(url: str, timeout_s: float = FETCH_TIMEOUT_S) -> str:
    """The text at ``url``, all of it within ``timeout_s`` (connection, headers and body: a
    server that drips it is cut there), at most ``MAX_METRICS_BYTES``. Redirects are followed
    only on the same host (vLLM's ``/metrics`` may answer with one to ``/metrics/``)."""
    problem = url_problem(url)  # what the client would refuse, said first as the argument's
    if problem is not None:
        raise BadArgument(
            f"metrics_url {url!r} {problem}",
            hint="e.g. http://127.0.0.1:8000/metrics",
            argument="metrics_url",
            value=url,
        )
    answer = client.get(
        url,
        deadline_s=timeout_s,
        headers={"Accept": "text/plain"},
        max_bytes=MAX_METRICS_BYTES,
        redirects=3,
        hint="is vLLM running there?",
    )
    text = answer.body.decode("utf-8", "replace")
    add = metrics_path_hint(url)
    if answer.status != 200:
        # It answers: vLLM (or something) is running there; the path may be what is wrong.
        hint = add or "is this vLLM's /metrics?"
        raise RemoteError(f"cannot read {url}: {answer.status_text}", url, hint=hint)
    if add and not any(name in text for _k, name in COUNTERS):
        raise RemoteError(f"{url} answers, but not with vLLM's metrics", url, hint=add)
    return text


def metrics_path_hint(url: str) -> str:
    """How to point at vLLM's counters when ``url``'s path is not ``/metrics`` (``""`` when
    it is): ``add /metrics`` to a bare ``http://HOST:PORT``, else the path vLLM serves."""
    parts = urlsplit(url)
    if parts.path.rstrip("/").endswith("/metrics"):
        return ""
    fixed = urlunsplit(parts._replace(path="/metrics", query="", fragment=""))
    if parts.path.strip("/"):
        return f"vLLM serves its counters at /metrics: --metrics-url {fixed}"
    return f"add /metrics: --metrics-url {fixed}"


def vllm_counters(metrics_text: str) -> dict[str, int]:
    return _counters(parse_samples(metrics_text))


def counters_created_ts(metrics_text: str) -> float | None:
    """When the compared counters were created (the earliest ``_created`` sample), or None."""
    return _created_ts(parse_samples(metrics_text))


def _created_ts(samples: list[Sample]) -> float | None:
    stamps = [v for n, _l, v in samples if n in CREATED and EARLIEST_AT <= v <= LATEST_AT]
    return min(stamps) if stamps else None


def other_server(created_ts: float | None, run_start_ts: float | None) -> OtherServer | None:
    """An ``OtherServer`` when both instants are known and ``SAME_LAUNCH_S`` or more apart."""
    if created_ts is None or run_start_ts is None:
        return None
    if abs(created_ts - run_start_ts) < SAME_LAUNCH_S:
        return None
    return OtherServer(created_ts, run_start_ts)


def _counters(samples: list[Sample]) -> dict[str, int]:
    missing = [m for _k, m in COUNTERS if not has_metric(samples, m)]
    if missing:
        raise RemoteError(f"/metrics has no {', '.join(missing)}: is this a vLLM 0.32+ server?")
    return {key: round(sum_metric(samples, metric)) for key, metric in COUNTERS}


def ledger_run_totals(
    roots: Sequence[Path], clock: Callable[[], float] = time.time, run_id: str | None = None
) -> tuple[str, dict[str, int]]:
    """Totals of the newest run (or ``run_id``), every second up to now included."""
    run = ledger_run(roots, clock, run_id)
    return run.run_id, run.totals


def ledger_run(
    roots: Sequence[Path], clock: Callable[[], float] = time.time, run_id: str | None = None
) -> RunTotals:
    """The newest run (or ``run_id``): its totals up to now and its start, from one read."""
    # Report one second ahead so the second just committed is inside the cutoff.
    report = build_report(roots, at_ts=clock() + 1.0, by="run", clock=clock)
    if not report.breakdown:
        near = root_hint(roots)
        where = ", ".join(map(str, roots))
        what = f"no ledger file under {where}" + (near or ": is the plugin on (VLLM_LEDGER_DIR)?")
        raise LedgerUnavailable(what, tuple(map(str, roots)))
    if run_id is None:
        runs = sorted({w.run_id for w in report.writers})
        starts = {r: min((w.first_ts or 0) for w in report.writers if w.run_id == r) for r in runs}
        run_id = max(runs, key=lambda r: starts[r])
    row = next((r for r in report.breakdown if r.key == run_id), None)
    if row is None:
        raise LedgerUnavailable(f"run {run_id} not found under the roots")
    total = next(w for w in row.windows if w.name == "total")
    firsts = [w.first_ts for w in report.writers if w.run_id == run_id and w.first_ts is not None]
    totals = {
        "input": total.input_tokens,
        "output": total.output_tokens,
        "cached": total.cached_tokens,
        "requests": total.requests,
    }
    live = sum(1 for w in report.writers if w.run_id == run_id and w.state == "alive")
    return RunTotals(run_id, totals, min(firsts) if firsts else None, live)


def verify(
    roots: Sequence[Path],
    metrics_url: str,
    *,
    wait_s: float = 10.0,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    run_id: str | None = None,
    timeout_s: float = FETCH_TIMEOUT_S,
    on_wait: Callable[[float, str], None] | None = None,
) -> VerifyResult:
    """Compare, re-checking until they agree or ``wait_s`` has passed (queue drain, commit).
    Each read of ``metrics_url`` ends within ``timeout_s``; one that does not is an error.

    Counters of another server (``OtherServer``: created ``SAME_LAUNCH_S`` or more away from the
    run's start) end the check at once: waiting cannot make them agree. So does a difference in
    a run with no live writer: its ledger can no longer change. Before the first wait,
    ``on_wait(seconds, why)`` is called once (the command prints it)."""
    start = clock()
    told = False
    while True:
        samples = parse_samples(fetch_metrics(metrics_url, timeout_s))
        vllm = _counters(samples)
        run = ledger_run(roots, clock, run_id)
        ledger = run.totals
        diffs = tuple(
            Difference(key, metric, ledger[key], vllm[key])
            for key, metric in COUNTERS
            if ledger[key] != vllm[key]
        )
        other = other_server(_created_ts(samples), run.start_ts)
        waited = clock() - start
        if other is not None or not diffs or waited >= wait_s or run.live_writers == 0:
            return VerifyResult(run.run_id, ledger, vllm, diffs, waited, other)
        if not told and on_wait is not None:
            n = run.live_writers
            on_wait(
                wait_s,
                f"run {run.run_id} has {n} live writer{'s' if n != 1 else ''}, and its ledger "
                "commits about once a second: the figures may still catch up",
            )
        told = True
        sleep(1.0)
