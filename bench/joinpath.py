"""``record()`` with the attribution join, against vLLM's ``PrometheusStatLogger.record()`` on
the same input (a child of ``bench/run.py --only join``; prints one JSON document).

Each call gets its own batch-256 ``IterationStats`` as vLLM fills one: 256 requests in the
batch, two of them in prefill (128 prompt tokens each, 64 of them cached), so 256 prompt tokens
and 256 generated tokens, a time to first token for the two, an inter-token latency for the
other 254, and 8 ``FinishedRequestStats`` carrying ``request_id`` (``chatcmpl-`` and the 32 hex
digits of their ``X-Request-Id``), ``num_prompt_tokens`` and ``num_cached_tokens``. Half of the
finished requests were tagged by the real ``LedgerMiddleware`` in the process's ``BOOK``: those
requests are in flight in the middleware (their app is waiting) while ``record()`` runs, and
end after the round, as a response does after its last output. The other half are untagged.

Rounds of ``CALLS`` calls alternate between the two loggers, each round on fresh iterations
(the same objects for both). After each ledger round the recorder thread is woken and takes the
round's events in (joining them to the tags) before the next round starts, so ``record()`` is
timed beside an idle recorder, and the take-in (where the join runs) is timed on its own: the
CPU of the recorder thread per event. Run together at this rate (8,000 finished requests per
round of a few milliseconds) the two would share one core and the GIL, and the figure of either
would hold the other's. Every figure is CPU time of the thread that ran it (``thread_time``),
not wall time: on a machine other work shares, wall time holds the waits for a core too.
At the end the ledger is closed and read back: the requests credited and untagged.

    python bench/joinpath.py REPO MODEL_DIR
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROUNDS = 21
CALLS = 1000  # below the recorder's high-water mark (3072 of 4096), as in the hotpath part
BATCH = 256
FINISHED = 8
TAGGED = 4  # of the 8 finished requests of each call, tagged by the middleware
KEY = b"sk-bench-0123456789abcdef0123456789abcdef"


def setup(root: str) -> None:
    os.environ.update(
        {
            "VLLM_LEDGER_DIR": root,
            "VLLM_LEDGER_RUN_ID": "bench",
            "VLLM_LEDGER_MAINTENANCE": "0",
            "VLLM_LEDGER_ATTRIBUTE_USER": "1",
        }
    )


def iterations(round_no: int) -> tuple[list[Any], list[str]]:
    """``CALLS`` batch-256 iterations with fresh finished requests; the ids to tag."""
    from vllm.v1.engine import FinishReason
    from vllm.v1.metrics.stats import FinishedRequestStats, IterationStats, PrefillStats

    ttft = [0.05, 0.06]
    itl = [0.01] * (BATCH - 2)
    out, tagged = [], []
    for call in range(CALLS):
        it = IterationStats()
        for _ in range(2):
            ps = PrefillStats()
            ps.set(128, 64, 0)
            it.prompt_token_stats.update_from_output(ps)
        it.num_generation_tokens = BATCH
        it.time_to_first_tokens_iter = ttft
        it.inter_token_latencies_iter = itl
        it.max_num_generation_tokens_iter = [64] * FINISHED
        it.n_params_iter = [1] * FINISHED
        for k in range(FINISHED):
            x = f"{round_no:08x}{call:08x}{k:016x}"
            if k < TAGGED:
                tagged.append(x)
            it.finished_requests.append(
                FinishedRequestStats(
                    finish_reason=FinishReason.LENGTH,
                    request_id=f"chatcmpl-{x}",
                    num_generation_tokens=64,
                    decode_time=0.63,
                    e2e_latency=0.8,
                    queued_time=0.01,
                    prefill_time=0.1,
                    inference_time=0.73,
                    num_prompt_tokens=128,
                    num_cached_tokens=64,
                    mean_time_per_output_token=0.01,
                )
            )
        out.append(it)
    return out, tagged


class InFlight:
    """Requests in flight through the real middleware: tagged, their app waiting."""

    def __init__(self) -> None:
        from vllm_ledger.middleware import LedgerMiddleware

        self.loop = asyncio.new_event_loop()
        self.release = asyncio.Event()
        self.started = 0

        async def app(scope: Any, receive: Any, send: Any) -> None:
            while (await receive()).get("more_body"):
                pass
            self.started += 1
            await self.release.wait()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"{}"})

        self.mw = LedgerMiddleware(app)

    def begin(self, ids: list[str]) -> None:
        """Send the requests and wait until each is tagged and in the app."""
        self.release = asyncio.Event()
        self.started = 0
        body = json.dumps(
            {"messages": [{"role": "user", "content": "hi"}], "model": "tiny", "user": "u-1"}
        ).encode()

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: Any) -> None:
            return None

        def one(x: str) -> Any:
            scope = {
                "type": "http",
                "method": "POST",
                "path": "/v1/chat/completions",
                "headers": [(b"authorization", b"Bearer " + KEY), (b"x-request-id", x.encode())],
            }
            return self.loop.create_task(self.mw(scope, receive, send))

        self.tasks = [one(x) for x in ids]

        async def until_started() -> None:
            while self.started < len(ids):
                await asyncio.sleep(0)

        self.loop.run_until_complete(until_started())

    def end(self) -> None:
        """The responses go out: each request's entry ends in the book."""
        self.release.set()
        self.loop.run_until_complete(asyncio.gather(*self.tasks))


def timed_take_in(recorder: Any) -> dict[str, float]:
    """Time the recorder thread's take-in (where the join runs): CPU seconds and events."""
    spent = {"cpu_s": 0.0, "events": 0.0}
    orig = recorder._take_in

    def take_in(*args: Any, **kw: Any) -> int:
        t = time.thread_time()
        n = orig(*args, **kw)
        spent["cpu_s"] += time.thread_time() - t
        spent["events"] += n
        return int(n)

    recorder._take_in = take_in
    return spent


def drained(recorder: Any, spent: dict[str, float], timeout_s: float = 30.0) -> None:
    """Wake the recorder and wait until it has taken in every event submitted: the next round
    of ``record()`` then runs beside an idle recorder thread, and its take-in is timed alone."""
    recorder.wake.set()
    deadline = time.monotonic() + timeout_s
    while spent["events"] < recorder.submitted_total and time.monotonic() < deadline:
        time.sleep(0.005)


def credited(root: str) -> dict[str, int]:
    """Requests per reason in the ledger written ("" = credited)."""
    (path,) = Path(root).rglob("*.ledger.sqlite")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT d.reason, sum(s.requests), sum(s.prompt_tokens) FROM attr_seconds s "
            "JOIN attr_dims d ON d.id = s.dim GROUP BY d.reason"
        ).fetchall()
    finally:
        conn.close()
    return {reason or "credited": int(n) for reason, n, _p in rows}


def reference_us() -> float:
    """This machine's speed as the run saw it: ``sum(range(1000))``, CPU us, median of 21."""
    runs = []
    for _ in range(21):
        t = time.thread_time()
        for _ in range(100):
            sum(range(1000))
        runs.append((time.thread_time() - t) * 1e4)
    return statistics.median(runs)


def main() -> None:
    repo, model = sys.argv[1], sys.argv[2]
    sys.path.insert(0, repo)
    root = tempfile.mkdtemp(prefix="bench-join-")
    setup(root)
    from vllm.config import ModelConfig, ParallelConfig, VllmConfig
    from vllm.v1.metrics.loggers import PrometheusStatLogger

    from vllm_ledger.plugin import LedgerStatLogger
    from vllm_ledger.write.tags import BOOK

    cfg = VllmConfig(
        parallel_config=ParallelConfig(), model_config=ModelConfig(model=model, dtype="float32")
    )
    prom = PrometheusStatLogger(cfg, [0])
    led = LedgerStatLogger(cfg, [0])
    assert led.recorder is not None and BOOK.consumer, "the join is not on"
    spent = timed_take_in(led.recorder)
    flight = InFlight()
    per: dict[str, list[float]] = {"prom": [], "ledger": []}
    for r in range(ROUNDS):
        its, ids = iterations(r)
        order = ("prom", "ledger") if r % 2 == 0 else ("ledger", "prom")
        for name in order:
            if name == "ledger":
                flight.begin(ids)
            lg = led if name == "ledger" else prom
            t = time.thread_time()
            for it in its:
                lg.record(None, it, engine_idx=0)
            per[name].append((time.thread_time() - t) / CALLS)
            if name == "ledger":
                flight.end()
                drained(led.recorder, spent)
            time.sleep(0.02)
    tagged = BOOK.begun_total
    led.shutdown()
    out = {
        "reference_us": reference_us(),
        "prom_us": statistics.median(per["prom"]) * 1e6,
        "ledger_us": statistics.median(per["ledger"]) * 1e6,
        "ledger_quartiles_us": [q * 1e6 for q in statistics.quantiles(per["ledger"], n=4)[::2]],
        "prom_quartiles_us": [q * 1e6 for q in statistics.quantiles(per["prom"], n=4)[::2]],
        "take_in_us_per_event": 1e6 * spent["cpu_s"] / max(1.0, spent["events"]),
        "events_taken": spent["events"],
        "calls": ROUNDS * CALLS,
        "tagged": tagged,
        "middleware_faults": BOOK.faults_total,
        "drops": led.recorder.dropped_total,
        "requests": credited(root),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
