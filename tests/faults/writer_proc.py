"""A standalone writer process for the fault tests: the real Recorder (or the real plugin class
fed real vLLM IterationStats), acknowledging its commits on stdout, then killable.

Lines on stdout (each written with one os.write, so a kill never leaves half a line):

  READY <pid>                    the recorder thread runs
  PRE <seq> <events>             commit <seq> is about to run; if it lands, <events> are durable
  ACK <seq> <events>             commit <seq> returned: <events> events are on disk in total
  QUEUED <n> <json sums>         (plugin mode) n events wait in the buffer; the writer is parked
  LOST <n>                       (--wait-lost) n events were counted as lost after retries
  CLOSED <clean> <committed> <lost>   close() returned (or the atexit drain ran)

Every event in recorder mode is (now, engine 0, prompt 3, generation 1, cached 0, no finished),
so input tokens are 3 x events and output tokens 1 x events.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.write.recorder import Recorder

PROMPT_PER_EVENT = 3
GEN_PER_EVENT = 1


def out(line: str) -> None:
    os.write(1, (line + "\n").encode())


def acknowledge_commits(rec: Recorder) -> None:
    """Wrap this Recorder's commit so that each one is announced and acknowledged."""
    orig = rec._commit

    def commit(conn: Any, now_ts: float, final: bool) -> None:
        total = rec.committed_events_total + rec._batch.pending_events
        out(f"PRE {rec._span.seq + 1} {total}")
        orig(conn, now_ts, final)
        out(f"ACK {rec._span.seq} {total}")

    rec._commit = commit  # type: ignore[method-assign]


def run_recorder(a: argparse.Namespace) -> int:
    ident = WriterIdentity(
        a.run_id,
        a.rank,
        a.expected,
        pid=os.getpid(),
        instance=InstanceInfo(("tiny",), 8000, "testhost", "0.32.0"),
    )
    rec = Recorder(
        Path(a.root),
        ident,
        flush_interval_s=a.flush,
        heartbeat_interval_s=a.heartbeat,
        integrity_check_interval_s=a.integrity,
    )
    acknowledge_commits(rec)
    rec.start()
    out(f"READY {os.getpid()}")
    sent = 0
    while a.events < 0 or sent < a.events:
        n = a.burst if a.events < 0 else min(a.burst, a.events - sent)
        now = time.time()
        for _ in range(n):
            rec.submit((now, 0, PROMPT_PER_EVENT, GEN_PER_EVENT, 0, ()))
        sent += n
        time.sleep(a.sleep)
    if a.wait_lost:
        deadline = time.monotonic() + 30
        while rec.lost_events_total < sent and time.monotonic() < deadline:
            time.sleep(0.01)
        out(f"LOST {rec.lost_events_total}")
    if a.close:
        clean = rec.close(timeout_s=5.0)
        out(f"CLOSED {clean} {rec.committed_events_total} {rec.lost_events_total}")
        return 0
    while True:  # wait to be killed
        time.sleep(1)


class _GatedWake(threading.Event):
    """The recorder's waker with a gate: closed, the writer parks in its next wait and takes
    nothing in, so what vLLM's loop records stays buffered."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self.parked = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        if not self.gate.is_set():
            self.parked.set()
            self.gate.wait()
        return super().wait(timeout)


def run_plugin(a: argparse.Namespace) -> int:
    """The real plugin class on real vLLM stats; SIGTERM exits the way vLLM's handler does."""
    os.environ["VLLM_LEDGER_DIR"] = a.root
    os.environ["VLLM_LEDGER_RUN_ID"] = a.run_id
    from vllm.config import ParallelConfig, VllmConfig
    from vllm.v1.engine import FinishReason
    from vllm.v1.metrics.stats import FinishedRequestStats, IterationStats, PrefillStats

    from vllm_ledger.plugin import LedgerStatLogger

    orig_start = Recorder.start

    def gated_start(self: Recorder) -> None:
        self.wake = _GatedWake()
        orig_start(self)

    Recorder.start = gated_start  # type: ignore[method-assign]
    holder: dict[str, Any] = {}

    def report_close() -> None:  # registered first, so it runs after the plugin's shutdown
        rec = holder.get("rec")
        if rec is not None:
            out(f"CLOSED {rec._clean} {rec.committed_events_total} {rec.lost_events_total}")

    import atexit

    atexit.register(report_close)
    plugin = LedgerStatLogger(
        VllmConfig(parallel_config=ParallelConfig(_api_process_count=1, _api_process_rank=0)), [0]
    )
    rec = plugin.recorder
    assert rec is not None
    holder["rec"] = rec
    gq: _GatedWake = rec.wake  # type: ignore[assignment]

    def on_term(signum: int, frame: Any) -> None:
        gq.gate.set()
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    out(f"READY {os.getpid()}")
    while rec._span.seq < 1:
        time.sleep(0.01)
    first_ts = math.ceil(rec._span.end_ts)
    while time.time() < first_ts + 0.05:
        time.sleep(0.01)
    gq.gate.clear()
    gq.parked.wait(30)
    sums = {"input": 0, "output": 0, "cached": 0, "requests": 0, "decode_tokens": 0}
    decode_us = 0
    for i in range(a.events):
        it = IterationStats()
        it.iteration_timestamp = first_ts + 0.1 + i * 1e-4
        ps = PrefillStats()
        ps.set(5, 2, 0)
        it.prompt_token_stats.update_from_output(ps)
        it.num_generation_tokens = 1
        sums["input"] += 5
        sums["cached"] += 2
        sums["output"] += 1
        if i % 10 == 0:
            it.finished_requests.append(
                FinishedRequestStats(
                    finish_reason=FinishReason.LENGTH,
                    request_id=f"r{i}",
                    num_generation_tokens=7,
                    decode_time=0.25,
                )
            )
            sums["requests"] += 1
            sums["decode_tokens"] += 6
            decode_us += 250_000
        plugin.record(None, it, engine_idx=0)
    sums["decode_us"] = decode_us
    while time.time() < first_ts + 2.05:  # the events' second is over before the close
        time.sleep(0.01)
    out(f"QUEUED {rec.buffered} {json.dumps(sums)}")
    while True:
        signal.pause()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--run-id", required=True)
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--expected", type=int, default=1)
    p.add_argument("--mode", choices=("recorder", "plugin"), default="recorder")
    p.add_argument("--flush", type=float, default=0.03)
    p.add_argument("--heartbeat", type=float, default=0.1)
    p.add_argument("--integrity", type=float, default=60.0)
    p.add_argument("--events", type=int, default=-1, help="-1: until killed")
    p.add_argument("--burst", type=int, default=20)
    p.add_argument("--sleep", type=float, default=0.002)
    p.add_argument("--close", action="store_true")
    p.add_argument("--wait-lost", action="store_true")
    a = p.parse_args()
    return run_plugin(a) if a.mode == "plugin" else run_recorder(a)


if __name__ == "__main__":
    sys.exit(main())
