"""End to end: a real vLLM server whose ledger directory is a tiny tmpfs that fills up.
Requests keep succeeding; the report stops vouching, then names the lost writes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from devtools.traffic import send_mix
from tests.e2e.settle import settle
from tests.faults.helpers import fill_disk, tmpfs
from vllm_ledger.read.report import build_report

pytestmark = pytest.mark.e2e


def _totals(root: Path, at: float) -> tuple[dict[str, int], dict[str, int], bool]:
    t = build_report([root], at_ts=at, clock=lambda: at).window("total")
    figures = {"input": t.input_tokens, "output": t.output_tokens, "requests": t.requests}
    return figures, t.problems, t.complete


def test_vllm_serves_on_while_the_ledger_disk_is_full(vllm_server) -> None:
    # Room for the first part: a new ledger file with the attribution tables holds about 190 KB
    # (WAL and shared memory) before its first commit, about 280 KB after one mix of traffic,
    # and its heartbeat adds about 2.5 KB a second; then the test fills the rest.
    with tmpfs("1m") as mnt:
        root = mnt / "ledger"
        s = vllm_server(root)
        try:
            first = send_mix(s.url, "tiny")
            assert first.ok == first.sent - first.disconnected
            c1 = settle(s)
            time.sleep(2.2)
            figures, problems, _ = _totals(root, time.time())
            assert figures == {k: c1[k] for k in figures}
            assert problems == {}

            filler = fill_disk(mnt)
            second = send_mix(s.url, "tiny", rounds=2)
            assert second.ok == second.sent - second.disconnected  # vLLM saw nothing
            c2 = settle(s)
            time.sleep(8)  # three failed commits a second apart, then the batch is given up
            at = time.time() + 31
            during, problems, complete = _totals(root, at)
            assert during == {k: c1[k] for k in during}  # nothing new reached the disk
            assert complete is False and problems.get("heartbeat_stale") == 1

            filler.unlink()
            deadline = time.monotonic() + 120  # the retry's failure, however loaded the machine
            while time.monotonic() < deadline:
                figures, problems, complete = _totals(root, time.time())
                if problems.get("write_failed"):
                    break
                time.sleep(1)
            assert problems.get("write_failed", 0) > 0, problems
            assert complete is False
            assert figures["input"] < c2["input"]  # smaller, and the report says so
            third = send_mix(s.url, "tiny")
            assert third.ok == third.sent - third.disconnected
        finally:
            s.stop()
