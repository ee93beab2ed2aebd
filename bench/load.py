"""The measured load a serving server gets: a warm-up, then completions of ``MAX_TOKENS``
tokens with ``CONCURRENCY`` in flight at every moment, each carrying one of ``KEYS`` (in turn)
and one of ``USERS`` users; tokens/s from the responses, in all and per quarter of the load.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

# The measured load: the same for every server.
MAX_TOKENS = 64
CONCURRENCY = 32  # requests in flight: enough to keep the batch full on this machine
TOKENS = 40_960  # generated tokens per server's measured load (640 requests of 64)
WARMUP_REQUESTS = 64
# Whose tokens (docs/attribution.md): every server requires one of these keys, each request
# carries one (in turn) and a user (one of USERS).
KEYS = ("sk-bench-alpha-5f1e27c9d0", "sk-bench-bravo-9a03bd44e1", "sk-bench-charlie-77e0c2d1f2")
USERS = 50


async def run_load(
    url: str,
    *,
    concurrency: int,
    warmup: int,
    requests: int | None = None,
    until: float | None = None,
    window: Callable[[], Any] | None = None,
) -> dict[str, Any]:
    """Warm up, then the measured load: ``requests`` completions (or as many as fit before
    ``until``, a monotonic deadline), ``concurrency`` in flight at every moment until the last
    is sent. ``window()`` is called as the measured load starts; its ``stop()`` as it ends."""
    import httpx

    retries = 0

    async def one(client: httpx.AsyncClient, i: int) -> int:
        nonlocal retries
        for attempt in range(3):
            try:
                r = await client.post(
                    "/v1/completions",
                    json={
                        "model": "tiny",
                        "prompt": f"measure throughput {i} " * 8,
                        "max_tokens": MAX_TOKENS,
                        "ignore_eos": True,
                        "user": f"user-{i % USERS:02d}",
                    },
                    headers={"Authorization": f"Bearer {KEYS[i % len(KEYS)]}"},
                )
                break
            except httpx.TransportError:
                # A kept-alive connection the server closed as it was reused: send it again
                # (counted; the request had not reached vLLM's engine).
                if attempt == 2:
                    raise
                retries += 1
        r.raise_for_status()
        return int(r.json()["usage"]["completion_tokens"])

    async def run(
        client: httpx.AsyncClient, first: int, n: int | None, deadline: float | None
    ) -> list[tuple[float, int]]:
        done: list[tuple[float, int]] = []
        sent = 0

        async def worker() -> None:
            nonlocal sent
            while (n is None or sent < n) and (deadline is None or time.monotonic() < deadline):
                i = first + sent
                sent += 1
                tokens = await one(client, i)
                done.append((time.perf_counter(), tokens))

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return done

    # Drop idle connections before uvicorn's 5 s keep-alive does: reusing one it is closing at
    # that moment ends in a ReadError.
    limits = httpx.Limits(keepalive_expiry=1.0, max_connections=concurrency + 8)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
        await run(client, -warmup, warmup, None)
        win = window() if window is not None else None
        t = time.perf_counter()
        done = await run(client, 0, requests, until)
        cpu = win.stop() if win is not None else None
    seconds = max(p for p, _ in done) - t
    tokens = sum(n for _, n in done)
    return {
        "requests": len(done),
        "tokens": tokens,
        "seconds": seconds,
        "tokens_per_s": tokens / seconds,
        "quarters_tokens_per_s": _quarters(t, done),
        "retries": retries,
        "cpu": cpu,
    }


def _quarters(t0: float, done: list[tuple[float, int]]) -> list[float]:
    """tokens/s in each quarter of the load, by order of completion (the spread within a
    server)."""
    done = sorted(done)
    k = len(done) // 4
    if k == 0:
        return [sum(n for _, n in done) / (done[-1][0] - t0)]
    out, start = [], t0
    for q in range(4):
        part = done[q * k : (q + 1) * k if q < 3 else len(done)]
        end = part[-1][0]
        out.append(sum(n for _, n in part) / max(end - start, 1e-9))
        start = end
    return out
