"""A load ramp's figures and verdict: the steps, the knee, and whether errors forbid one. Pure.

Each step runs ``concurrency`` clients for ``duration_s`` seconds; every client sends one
streaming completion after another (``ignore_eos`` so each produces ``max_tokens``), and
no new request starts after the step's deadline; the step ends when the last one finishes
(``plan/ramp_load.py`` drives the server). Per step: requests, prompt and output tokens as the
server reported them in each response's ``usage`` and as vLLM's counters moved (they must agree
when nothing else uses the server), throughput (output tokens per second of the step), TTFT
P50/P99 as the client saw them (nearest rank), TPOT (vLLM's own mean time per output token over
the step, from the increase of its ``vllm:request_time_per_output_token_seconds`` histogram;
the client-side figure, last minus first chunk over tokens - 1, is kept too: a busy API process
hands chunks over in bursts, so the client's view can be far below the engine's), KV-cache
usage and waiting requests (sampled from /metrics), and the failed requests: how many, and the
first one's HTTP status and a bounded excerpt of its answer (every form shows it escaped).

The knee is the first step whose throughput rose less than 10 % over the step before, or
whose KV-cache usage reached 90 %, whichever comes first. No knee is drawn when any step had
more than 1 % of its requests fail (``MAX_ERROR_FRACTION``): its throughput is that of the
requests that did not fail, so a flat curve says nothing of the server's capacity
(``errors_verdict`` says which step and why; the command exits 4).

The table, the chart and the four output files are ``formats/ramp.py``'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from vllm_ledger.names import KV_CACHE_FULL_FRACTION

DEFAULT_PROMPT = (
    "Explain, step by step and with care, how a ledger of tokens can be kept exact across "
    "restarts of the server that produces them, and why coverage matters."
)
KNEE_RISE = 0.10
MAX_ERROR_FRACTION = 0.01  # more failed requests than this in any step: no knee is drawn
ERROR_EXCERPT_CHARS = 200  # of a failed request's answer, kept in the step


@dataclass(frozen=True)
class RequestResult:
    ok: bool
    ttft_s: float | None = None
    tpot_s: float | None = None
    prompt_tokens: int = 0
    output_tokens: int = 0
    error: str = ""  # at most ERROR_EXCERPT_CHARS of the answer (error_excerpt), or the failure
    status: int | None = None  # a failed request's HTTP status; None: no answer came


@dataclass(frozen=True)
class StepResult:
    concurrency: int
    seconds: float
    requests: int
    errors: int
    prompt_tokens: int  # from the responses' usage
    output_tokens: int
    server_prompt_tokens: int | None  # vLLM's counters, after minus before
    server_output_tokens: int | None
    ttft_p50_s: float | None
    ttft_p99_s: float | None
    tpot_s: float | None  # vLLM's mean time per output token over the step's requests
    client_tpot_s: float | None  # the same seen by the client: last - first chunk / (n - 1)
    kv_usage_max: float | None  # 0..1
    kv_usage_mean: float | None
    waiting_max: float | None
    waiting_mean: float | None
    first_error_status: int | None = None  # the first failed request's HTTP status
    first_error: str = ""  # its answer's excerpt (error_excerpt), or what stopped it

    @property
    def throughput_tokens_per_s(self) -> float:
        return self.output_tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def error_fraction(self) -> float:
        """Failed requests over requests (0 for a step that sent none)."""
        return self.errors / self.requests if self.requests else 0.0


@dataclass(frozen=True)
class Knee:
    index: int
    concurrency: int
    reason: str


# ---- pure ------------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..1); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def error_excerpt(text: str) -> str:
    """At most ``ERROR_EXCERPT_CHARS`` of a remote's answer, a cut one marked with ``...``.
    Still the remote's characters: every form escapes them (``formats/ramp.py``)."""
    one = text.strip()
    cut = one[:ERROR_EXCERPT_CHARS]
    return cut + ("..." if len(one) > len(cut) else "")


def error_text(step: StepResult) -> str:
    """``HTTP 401: {"error": ...}``: the first failed request of ``step``, or ``""``."""
    if not step.errors:
        return ""
    status = "no answer" if step.first_error_status is None else f"HTTP {step.first_error_status}"
    return f"{status}: {step.first_error}" if step.first_error else status


def too_many_errors(
    steps: Sequence[StepResult], limit: float = MAX_ERROR_FRACTION
) -> list[StepResult]:
    """The steps where more than ``limit`` of the requests failed."""
    return [s for s in steps if s.error_fraction > limit]


def errors_verdict(steps: Sequence[StepResult], limit: float = MAX_ERROR_FRACTION) -> str | None:
    """Why no knee is drawn, or None when every step's failures are within ``limit``."""
    bad = too_many_errors(steps, limit)
    if not bad:
        return None
    worst = max(bad, key=lambda s: s.error_fraction)
    others = f" (and {len(bad) - 1} more step{'s' if len(bad) > 2 else ''})" if len(bad) > 1 else ""
    refused = worst.first_error_status in (401, 403)
    cause = "the cause (an API key: --api-key-file or VLLM_API_KEY)" if refused else "the cause"
    return (
        f"none drawn: {worst.errors} of {worst.requests} requests failed at concurrency "
        f"{worst.concurrency} ({worst.error_fraction * 100:.1f} %, over {limit * 100:g} %)"
        f"{others}, first {error_text(worst)}; the figures are those of the requests that "
        f"did not fail: fix {cause} and run again"
    )


def find_knee(
    steps: Sequence[StepResult], rise: float = KNEE_RISE, kv: float = KV_CACHE_FULL_FRACTION
) -> Knee | None:
    """The first step where throughput stops rising (< ``rise``) or KV usage reaches ``kv``;
    None when not reached, or when a step had too many errors to judge (``errors_verdict``)."""
    if too_many_errors(steps):
        return None
    for i, s in enumerate(steps):
        if s.kv_usage_max is not None and s.kv_usage_max >= kv:
            return Knee(i, s.concurrency, f"KV-cache usage reached {s.kv_usage_max * 100:.0f} %")
        if i == 0:
            continue
        prev = steps[i - 1]
        before, now = prev.throughput_tokens_per_s, s.throughput_tokens_per_s
        if before > 0 and now < before * (1 + rise):
            change = (now / before - 1) * 100
            return Knee(
                i,
                s.concurrency,
                f"throughput {change:+.0f} % over concurrency {prev.concurrency} "
                f"({before:.1f} -> {now:.1f} tokens/s)",
            )
    return None


__all__ = [
    "DEFAULT_PROMPT",
    "MAX_ERROR_FRACTION",
    "Knee",
    "RequestResult",
    "StepResult",
    "error_excerpt",
    "error_text",
    "errors_verdict",
    "find_knee",
    "percentile",
    "too_many_errors",
]
