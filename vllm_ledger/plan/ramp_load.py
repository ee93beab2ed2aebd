"""A load ramp's edges: the requests it sends and the /metrics it reads (``plan/ramp.py`` holds
the figures, the knee and the error verdict).

Two clients. /metrics is read through the project's one client (``http/client.py``: a deadline
for the whole exchange, a capped body). The completions stream through httpx (the ``http``
extra): TTFT is the time of the first chunk, so each request's answer is read chunk by chunk as
it arrives, which the one client (it returns an answer whole) does not do.

The API key, when there is one, goes in each completion's ``Authorization: Bearer`` header, as
vLLM's ``--api-key`` (``VLLM_API_KEY``) expects; never to /metrics, which vLLM serves without one
and which may be another host's (``--metrics-url``). A failed request is counted with its HTTP
status and the first ``ERROR_BODY_BYTES`` of its answer, never fatal to the ramp.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vllm_ledger.errors import MissingExtra, RemoteError
from vllm_ledger.http import client as http
from vllm_ledger.names import (
    VLLM_GENERATION_TOKENS_TOTAL,
    VLLM_KV_CACHE_USAGE_PERC,
    VLLM_NUM_REQUESTS_RUNNING,
    VLLM_NUM_REQUESTS_WAITING,
    VLLM_PROMPT_TOKENS_TOTAL,
    VLLM_REQUEST_TIME_PER_OUTPUT_TOKEN_SECONDS,
)
from vllm_ledger.plan.ramp import (
    DEFAULT_PROMPT,
    RequestResult,
    StepResult,
    error_excerpt,
    percentile,
)
from vllm_ledger.promtext import has_metric, parse_samples, sum_metric
from vllm_ledger.strictjson import loads

METRICS_DEADLINE_S = 10.0
METRICS_MAX_BYTES = 16 * 1024 * 1024
ERROR_BODY_BYTES = 4096  # of a failed request's answer, read and no more
_HINT = "is vLLM running there? (--metrics-url)"


def _httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:
        raise MissingExtra("httpx", "http") from exc
    return httpx


def metrics_text(metrics_url: str) -> str:
    """The /metrics text, through the one client; a ``RemoteError`` naming the URL."""
    r = http.get(
        metrics_url, deadline_s=METRICS_DEADLINE_S, max_bytes=METRICS_MAX_BYTES, hint=_HINT
    )
    if r.status != 200:
        raise RemoteError(f"cannot read {metrics_url}: {r.status_text}", metrics_url, hint=_HINT)
    return r.body.decode("utf-8", errors="replace")


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


def server_counters(metrics_url: str) -> Counters | None:
    """vLLM's token counters and TPOT histogram from /metrics; None without them."""
    s = parse_samples(metrics_text(metrics_url))
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
    metrics_url: str, timeout_s: float = 30.0, poll_s: float = 0.25
) -> Counters | None:
    """Counters once nothing runs or waits and two readings agree (or at the timeout)."""
    deadline = time.monotonic() + timeout_s
    last: Counters | None = None
    while True:
        now = server_counters(metrics_url)
        if now is None:
            return None
        if (now.busy == 0 and now.same(last)) or time.monotonic() > deadline:
            return now
        last = now
        time.sleep(poll_s)


def _failed(r: Any) -> RequestResult:
    """A non-200 answer: its status and the start of its body (``ERROR_BODY_BYTES`` at most)."""
    got = b""
    for piece in r.iter_bytes():
        got += piece
        if len(got) >= ERROR_BODY_BYTES:
            break
    text = got[:ERROR_BODY_BYTES].decode("utf-8", errors="replace")
    return RequestResult(False, error=error_excerpt(text), status=r.status_code)


def one_request(
    client: Any, url: str, body: dict[str, Any], headers: Mapping[str, str]
) -> RequestResult:
    """One streaming completion; times its first and last token."""
    t0 = time.monotonic()
    first = last = None
    usage: dict[str, Any] = {}
    try:
        with client.stream("POST", url, json=body, headers=dict(headers)) as r:
            if r.status_code != 200:
                return _failed(r)
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
        return RequestResult(False, error=error_excerpt(f"{type(exc).__name__}: {exc}"))
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


@dataclass(frozen=True)
class Load:
    """What every step sends: where, which model, the prompt and length, the key's header."""

    base_url: str
    model: str
    metrics_url: str
    prompt: str = DEFAULT_PROMPT
    max_tokens: int = 64
    headers: Mapping[str, str] | None = None
    sample_every_s: float = 0.5


def _sample(metrics_url: str) -> tuple[float | None, float | None]:
    s = parse_samples(metrics_text(metrics_url))
    kv_vals = [v for n, _l, v in s if n == VLLM_KV_CACHE_USAGE_PERC]
    kv = statistics.fmean(kv_vals) if kv_vals else None
    if not has_metric(s, VLLM_NUM_REQUESTS_WAITING):
        return kv, None
    return kv, sum_metric(s, VLLM_NUM_REQUESTS_WAITING)


def _drive(
    client: Any, load: Load, concurrency: int, duration_s: float, progress: Progress | None
) -> tuple[list[RequestResult], list[tuple[float | None, float | None]], float]:
    """``concurrency`` clients until ``duration_s`` has passed, /metrics sampled meanwhile."""
    results: list[RequestResult] = []
    lock = threading.Lock()
    samples: list[tuple[float | None, float | None]] = []
    stop = threading.Event()
    start = time.monotonic()
    deadline = start + duration_s
    url = load.base_url.rstrip("/") + "/v1/completions"
    headers = dict(load.headers or {})

    def worker(w: int) -> None:
        i = 0
        while time.monotonic() < deadline:
            body = {
                "model": load.model,
                "prompt": f"[{concurrency}.{w}.{i}] {load.prompt}",
                "max_tokens": load.max_tokens,
                "ignore_eos": True,
                "temperature": 0.0,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            res = one_request(client, url, body, headers)
            with lock:
                results.append(res)
            i += 1

    def sampler() -> None:
        while not stop.is_set():
            try:
                samples.append(_sample(load.metrics_url))
            except Exception:  # a missed sample is only a missed sample
                pass
            stop.wait(load.sample_every_s)

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
    seconds = time.monotonic() - start
    stop.set()
    sampler_thread.join()
    if progress is not None:
        progress(seconds, len(results))
    return results, samples, seconds


def run_step(
    client: Any,
    load: Load,
    concurrency: int,
    duration_s: float,
    progress: Progress | None = None,
) -> StepResult:
    before = settled_counters(load.metrics_url)
    results, samples, seconds = _drive(client, load, concurrency, duration_s, progress)
    after = settled_counters(load.metrics_url)
    ok = [r for r in results if r.ok]
    failed = [r for r in results if not r.ok]
    ttfts = [r.ttft_s for r in ok if r.ttft_s is not None]
    tpots = [r.tpot_s for r in ok if r.tpot_s is not None]
    client_tpot = statistics.fmean(tpots) if tpots else None
    server_tpot = server_prompt = server_output = None
    if before is not None and after is not None:
        server_prompt = after.prompt_tokens - before.prompt_tokens
        server_output = after.output_tokens - before.output_tokens
        if after.tpot_count > before.tpot_count:
            server_tpot = (after.tpot_sum_s - before.tpot_sum_s) / (
                after.tpot_count - before.tpot_count
            )
    kvs = [k for k, _w in samples if k is not None]
    waits = [w for _k, w in samples if w is not None]
    return StepResult(
        concurrency=concurrency,
        seconds=seconds,
        requests=len(results),
        errors=len(failed),
        prompt_tokens=sum(r.prompt_tokens for r in ok),
        output_tokens=sum(r.output_tokens for r in ok),
        server_prompt_tokens=server_prompt,
        server_output_tokens=server_output,
        ttft_p50_s=percentile(ttfts, 0.50),
        ttft_p99_s=percentile(ttfts, 0.99),
        tpot_s=server_tpot if server_tpot is not None else client_tpot,
        client_tpot_s=client_tpot,
        kv_usage_max=max(kvs) if kvs else None,
        kv_usage_mean=statistics.fmean(kvs) if kvs else None,
        waiting_max=max(waits) if waits else None,
        waiting_mean=statistics.fmean(waits) if waits else None,
        first_error_status=failed[0].status if failed else None,
        first_error=failed[0].error if failed else "",
    )


def bearer(api_key: str | None) -> dict[str, str]:
    """The completions' ``Authorization`` header for ``api_key``; none without one."""
    return {} if not api_key else {"Authorization": f"Bearer {api_key}"}


def run_ramp(
    load: Load,
    concurrencies: Sequence[int],
    duration_s: float,
    *,
    progress_bars: bool = True,
) -> list[StepResult]:
    """Every step in turn, a rich progress bar per step on stderr."""
    httpx = _httpx()
    steps: list[StepResult] = []
    limits = httpx.Limits(max_connections=max(concurrencies) + 4)
    with httpx.Client(timeout=httpx.Timeout(300.0, connect=10.0), limits=limits) as client:
        for c in concurrencies:
            if progress_bars:
                steps.append(_with_bar(client, load, c, duration_s))
            else:
                steps.append(run_step(client, load, c, duration_s))
    return steps


def _with_bar(client: Any, load: Load, c: int, duration_s: float) -> StepResult:
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

        return run_step(client, load, c, duration_s, progress)


__all__ = [
    "Counters",
    "Load",
    "bearer",
    "metrics_text",
    "one_request",
    "run_ramp",
    "run_step",
    "server_counters",
    "settled_counters",
]
