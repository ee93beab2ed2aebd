"""Wait until a vLLM server is idle and its counters have stopped moving."""

from __future__ import annotations

import math
import time
from pathlib import Path

from devtools.vllm_server import VllmServer
from vllm_ledger.promtext import parse_samples, sum_metric
from vllm_ledger.read.report import build_report
from vllm_ledger.read.verify import vllm_counters
from vllm_ledger.write.tags import SETTLE_S


def settle(
    server: VllmServer, timeout_s: float = 60.0, *, aborts_judged: bool = False
) -> dict[str, int]:
    """Counters once nothing is running or waiting and two readings 1 s apart agree, and the
    ledger has proven that instant. ``aborts_judged``: proven ``SETTLE_S`` and 1 s past it,
    so a request cut just before (whose entry the recorder judges aborted that long after its
    end, in the second it does) is counted too."""
    deadline = time.monotonic() + timeout_s
    last: dict[str, int] | None = None
    while time.monotonic() < deadline:
        text = server.metrics_text()
        samples = parse_samples(text)
        busy = sum_metric(samples, "vllm:num_requests_running") + sum_metric(
            samples, "vllm:num_requests_waiting"
        )
        now = vllm_counters(text)
        if busy == 0 and now == last:
            ledger = server.env.get("VLLM_LEDGER_DIR")
            if ledger:
                extra_s = SETTLE_S + 1.0 if aborts_judged else 0.0
                caught_up(Path(ledger), time.time() + extra_s, deadline)
            return now
        last = now
        time.sleep(1.0)
    raise TimeoutError("vLLM did not settle")


def caught_up(root: Path, since_ts: float, deadline_mono: float) -> None:
    """Wait until a live report's cutoff (the writers' watermark) reaches ``since_ts``.

    A report is exact up to the instant every alive writer has proven; after traffic stops the
    writers prove once more within about 2 s, so the report then holds every event.
    """
    while time.monotonic() < deadline_mono:
        if build_report([root]).cutoff_ts >= math.floor(since_ts):
            return
        time.sleep(0.5)
    raise TimeoutError(f"the ledger's watermark did not reach {since_ts:.0f}")
