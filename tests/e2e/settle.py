"""Wait until a vLLM server is idle and its counters have stopped moving."""

from __future__ import annotations

import time

from devtools.vllm_server import VllmServer
from vllm_ledger.promtext import parse_samples, sum_metric
from vllm_ledger.read.verify import vllm_counters


def settle(server: VllmServer, timeout_s: float = 60.0) -> dict[str, int]:
    """Counters once nothing is running or waiting and two readings 1 s apart agree."""
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
            return now
        last = now
        time.sleep(1.0)
    raise TimeoutError("vLLM did not settle")
