"""A load ramp: real requests at rising concurrency, /metrics sampled, the knee named.

Each step runs ``concurrency`` clients for ``duration_s`` seconds; every client sends one
streaming completion after another (``ignore_eos`` so each produces ``max_tokens``), and
no new request starts after the step's deadline; the step ends when the last one finishes.
Per step: requests, prompt and output tokens as the server reported them in each response's
``usage`` and as vLLM's counters moved (they must agree when nothing else uses the server),
throughput (output tokens per second of the step), TTFT P50/P99 as the client saw them
(nearest rank), TPOT (vLLM's own mean time per output token over the step, from the increase
of its ``vllm:request_time_per_output_token_seconds`` histogram; the client-side figure, last
minus first chunk over tokens - 1, is kept too: a busy API process hands chunks over in bursts,
so the client's view can be far below the engine's), KV-cache usage and waiting requests
(sampled from /metrics every ``sample_every_s``).

The knee is the first step whose throughput rose less than 10 % over the step before, or
whose KV-cache usage reached 90 %, whichever comes first.

``find_knee`` and ``percentile`` are pure; ``run_step`` and ``run_ramp`` talk HTTP (httpx, the
``http`` extra). The table, the chart and the four output files are ``formats/ramp.py``'s.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from vllm_ledger.errors import MissingExtra, RemoteError
from vllm_ledger.names import (
    KV_CACHE_FULL_FRACTION,
    VLLM_GENERATION_TOKENS_TOTAL,
    VLLM_KV_CACHE_USAGE_PERC,
    VLLM_NUM_REQUESTS_RUNNING,
    VLLM_NUM_REQUESTS_WAITING,
    VLLM_PROMPT_TOKENS_TOTAL,
    VLLM_REQUEST_TIME_PER_OUTPUT_TOKEN_SECONDS,
)
from vllm_ledger.promtext import has_metric, parse_samples, sum_metric
from vllm_ledger.strictjson import loads

DEFAULT_PROMPT = (
    "Explain, step by step and with care, how a ledger of tokens can be kept exact across "
    "restarts of the server that produces them, and why coverage matters."
)
KNEE_RISE = 0.10


@dataclass(frozen=True)
class RequestResult:
    ok: bool
    ttft_s: float | None = None
    tpot_s: float | None = None
    prompt_tokens: int = 0
    output_tokens: int = 0
    error: str = ""


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

    @property
    def throughput_tokens_per_s(self) -> float:
        return self.output_tokens / self.seconds if self.seconds > 0 else 0.0


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


def find_knee(
    steps: Sequence[StepResult], rise: float = KNEE_RISE, kv: float = KV_CACHE_FULL_FRACTION
) -> Knee | None:
    """The first step where throughput stops rising (< ``rise``) or KV usage reaches ``kv``."""
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


# ---- the edges: HTTP -------------------------------------------------------------------------


def _httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:
        raise MissingExtra("httpx", "http") from exc
    return httpx


@dataclass(frozen=True)
class Counters:
    """vLLM's counters at one instant, summed over engines."""

    prompt_tokens: int
    output_tokens: int
    tpot_sum_s: float  # vLLM's per-request time per output token histogram: sum and count
    tpot_count: int
    busy: float  # running + waiting

    def same(self, other: Counters | None) -> bool:
        return other is not None and (self.prompt_tokens, self.output_tokens, self.tpot_count) == (
            other.prompt_tokens,
            other.output_tokens,
            other.tpot_count,
        )


def server_counters(client: Any, metrics_url: str) -> Counters | None:
    """vLLM's token counters and TPOT histogram from /metrics; None without them."""
    try:
        r = client.get(metrics_url)
        r.raise_for_status()
    except Exception as exc:
        raise RemoteError(f"cannot read {metrics_url}: {exc}", metrics_url) from exc
    s = parse_samples(r.text)
    if not has_metric(s, VLLM_GENERATION_TOKENS_TOTAL):
        return None
    return Counters(
        prompt_tokens=int(sum_metric(s, VLLM_PROMPT_TOKENS_TOTAL)),
        output_tokens=int(sum_metric(s, VLLM_GENERATION_TOKENS_TOTAL)),
        tpot_sum_s=sum_metric(s, VLLM_REQUEST_TIME_PER_OUTPUT_TOKEN_SECONDS + "_sum"),
        tpot_count=int(sum_metric(s, VLLM_REQUEST_TIME_PER_OUTPUT_TOKEN_SECONDS + "_count")),
        busy=sum_metric(s, VLLM_NUM_REQUESTS_RUNNING) + sum_metric(s, VLLM_NUM_REQUESTS_WAITING),
    )


def settled_counters(
    client: Any, metrics_url: str, timeout_s: float = 30.0, poll_s: float = 0.25
) -> Counters | None:
    """Counters once nothing runs or waits and two readings agree (or at the timeout)."""
    deadline = time.monotonic() + timeout_s
    last: Counters | None = None
    while True:
        now = server_counters(client, metrics_url)
        if now is None:
            return None
        if (now.busy == 0 and now.same(last)) or time.monotonic() > deadline:
            return now
        last = now
        time.sleep(poll_s)


def one_request(client: Any, url: str, body: dict[str, Any]) -> RequestResult:
    """One streaming completion; times its first and last token."""
    t0 = time.monotonic()
    first = last = None
    usage: dict[str, Any] = {}
    try:
        with client.stream("POST", url, json=body) as r:
            if r.status_code != 200:
                r.read()
                return RequestResult(False, error=f"HTTP {r.status_code}: {r.text[:200]}")
            for line in r.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = loads(line[6:], max_bytes=1 << 20, what="an SSE chunk")
                if chunk.get("choices"):
                    last = time.monotonic()
                    if first is None:
                        first = last
                if chunk.get("usage"):
                    usage = chunk["usage"]
    except Exception as exc:  # a failed request is counted, not fatal to the ramp
        return RequestResult(False, error=f"{type(exc).__name__}: {exc}")
    out = int(usage.get("completion_tokens", 0))
    tpot = (
        (last - first) / (out - 1) if first is not None and last is not None and out > 1 else None
    )
    return RequestResult(
        ok=True,
        ttft_s=None if first is None else first - t0,
        tpot_s=tpot,
        prompt_tokens=int(usage.get("prompt_tokens", 0)),
        output_tokens=out,
    )


Progress = Callable[[float, int], None]  # (elapsed seconds, requests done)


def run_step(
    client: Any,
    base_url: str,
    model: str,
    concurrency: int,
    duration_s: float,
    *,
    metrics_url: str,
    prompt: str = DEFAULT_PROMPT,
    max_tokens: int = 64,
    sample_every_s: float = 0.5,
    progress: Progress | None = None,
) -> StepResult:
    before = settled_counters(client, metrics_url)
    results: list[RequestResult] = []
    lock = threading.Lock()
    samples: list[tuple[float | None, float | None]] = []
    stop = threading.Event()
    start = time.monotonic()
    deadline = start + duration_s
    url = base_url.rstrip("/") + "/v1/completions"

    def worker(w: int) -> None:
        i = 0
        while time.monotonic() < deadline:
            body = {
                "model": model,
                "prompt": f"[{concurrency}.{w}.{i}] {prompt}",
                "max_tokens": max_tokens,
                "ignore_eos": True,
                "temperature": 0.0,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            res = one_request(client, url, body)
            with lock:
                results.append(res)
            i += 1

    def sampler() -> None:
        while not stop.is_set():
            try:
                r = client.get(metrics_url)
                s = parse_samples(r.text)
                kv_vals = [v for n, _l, v in s if n == VLLM_KV_CACHE_USAGE_PERC]
                kv = statistics.fmean(kv_vals) if kv_vals else None
                waiting = (
                    sum_metric(s, VLLM_NUM_REQUESTS_WAITING)
                    if has_metric(s, VLLM_NUM_REQUESTS_WAITING)
                    else None
                )
                samples.append((kv, waiting))
            except Exception:  # a missed sample is only a missed sample
                pass
            stop.wait(sample_every_s)

    threads = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(concurrency)]
    sampler_thread = threading.Thread(target=sampler, daemon=True)
    sampler_thread.start()
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        if progress is not None:
            with lock:
                done = len(results)
            progress(time.monotonic() - start, done)
        time.sleep(0.1)
    end = time.monotonic()
    stop.set()
    sampler_thread.join()
    if progress is not None:
        progress(end - start, len(results))
    after = settled_counters(client, metrics_url)
    ok = [r for r in results if r.ok]
    ttfts = [r.ttft_s for r in ok if r.ttft_s is not None]
    tpots = [r.tpot_s for r in ok if r.tpot_s is not None]
    client_tpot = statistics.fmean(tpots) if tpots else None
    both = None if before is None or after is None else (before, after)
    server_tpot = None
    if both is not None and both[1].tpot_count > both[0].tpot_count:
        server_tpot = (both[1].tpot_sum_s - both[0].tpot_sum_s) / (
            both[1].tpot_count - both[0].tpot_count
        )
    kvs = [k for k, _w in samples if k is not None]
    waits = [w for _k, w in samples if w is not None]
    return StepResult(
        concurrency=concurrency,
        seconds=end - start,
        requests=len(results),
        errors=len(results) - len(ok),
        prompt_tokens=sum(r.prompt_tokens for r in ok),
        output_tokens=sum(r.output_tokens for r in ok),
        server_prompt_tokens=None
        if both is None
        else both[1].prompt_tokens - both[0].prompt_tokens,
        server_output_tokens=None
        if both is None
        else both[1].output_tokens - both[0].output_tokens,
        ttft_p50_s=percentile(ttfts, 0.50),
        ttft_p99_s=percentile(ttfts, 0.99),
        tpot_s=server_tpot if server_tpot is not None else client_tpot,
        client_tpot_s=client_tpot,
        kv_usage_max=max(kvs) if kvs else None,
        kv_usage_mean=statistics.fmean(kvs) if kvs else None,
        waiting_max=max(waits) if waits else None,
        waiting_mean=statistics.fmean(waits) if waits else None,
    )


def run_ramp(
    base_url: str,
    model: str,
    concurrencies: Sequence[int],
    duration_s: float,
    *,
    metrics_url: str | None = None,
    prompt: str = DEFAULT_PROMPT,
    max_tokens: int = 64,
    progress_bars: bool = True,
) -> list[StepResult]:
    """Every step in turn, a rich progress bar per step on stderr."""
    httpx = _httpx()
    metrics = metrics_url or base_url.rstrip("/") + "/metrics"
    steps: list[StepResult] = []
    limits = httpx.Limits(max_connections=max(concurrencies) + 4)
    with httpx.Client(timeout=httpx.Timeout(300.0, connect=10.0), limits=limits) as client:
        for c in concurrencies:
            if progress_bars:
                steps.append(
                    _with_bar(client, base_url, model, c, duration_s, metrics, prompt, max_tokens)
                )
            else:
                steps.append(
                    run_step(
                        client,
                        base_url,
                        model,
                        c,
                        duration_s,
                        metrics_url=metrics,
                        prompt=prompt,
                        max_tokens=max_tokens,
                    )
                )
    return steps


def _with_bar(
    client: Any,
    base_url: str,
    model: str,
    c: int,
    duration_s: float,
    metrics: str,
    prompt: str,
    max_tokens: int,
) -> StepResult:
    try:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    except ImportError as exc:
        raise MissingExtra("rich", "cli") from exc
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[done]} requests"),
        console=Console(stderr=True),
    )
    with bar:
        task = bar.add_task(f"concurrency {c:>3}", total=duration_s, done=0)

        def progress(elapsed: float, done: int) -> None:
            bar.update(task, completed=min(elapsed, duration_s), done=done)

        return run_step(
            client,
            base_url,
            model,
            c,
            duration_s,
            metrics_url=metrics,
            prompt=prompt,
            max_tokens=max_tokens,
            progress=progress,
        )


__all__ = [
    "Knee",
    "RequestResult",
    "StepResult",
    "find_knee",
    "percentile",
    "run_ramp",
    "run_step",
]
