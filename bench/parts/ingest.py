"""The part ``ingest``: the recorder's ingest paced at 100,000 events/s against its real
4096-event buffer, its drain rate on a backlog of a million events, and the memory it adds.
"""

from __future__ import annotations

import json
import subprocess

from bench.results import note, row
from bench.timing import PY, REPO

INGEST = r"""
import os, sys, time, tempfile, json, resource
sys.path.insert(0, sys.argv[1])
def rss_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
from vllm_ledger.format.identity import WriterIdentity
from vllm_ledger.write.recorder import Recorder
before = rss_kb()
rec = Recorder(tempfile.mkdtemp(), WriterIdentity("ingest", 0, 1))
rec.start()
time.sleep(0.3)
# Paced producer: 100 000 events/s for 5 s against the real 4096-event queue.
rate, secs = 100_000, 5.0
n = int(rate * secs)
t0 = time.perf_counter()
ev = (time.time(), 0, 100, 10, 50, ((10, 0.1),))
for i in range(n):
    rec.submit(ev)
    if i % 1000 == 999:
        ahead = (i + 1) / rate - (time.perf_counter() - t0)
        if ahead > 0:
            time.sleep(ahead)
produced_s = time.perf_counter() - t0
rec.close()
paced = {"events": n, "seconds": produced_s, "drops": rec.dropped_total}
mid = rss_kb()  # the production buffer (4096 events) has taken 500k events
# Unpaced: how fast the recorder drains a big backlog.
rec2 = Recorder(tempfile.mkdtemp(), WriterIdentity("ingest2", 0, 1), queue_size=10**7)
for _ in range(1_000_000):
    rec2.submit(ev)
t = time.perf_counter()
rec2.start()
rec2.close(timeout_s=120)
drain = 1_000_000 / (time.perf_counter() - t)
after = rss_kb()
print(json.dumps({"paced": paced, "drain_events_per_s": drain,
                  "rss_before_kb": before, "rss_paced_kb": mid, "rss_after_kb": after}))
"""


def bench_ingest() -> None:
    p = subprocess.run([PY, "-c", INGEST, str(REPO)], capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr[-3000:])
        raise SystemExit("ingest bench failed")
    d = json.loads(p.stdout.strip().splitlines()[-1])
    paced = d["paced"]
    rate = paced["events"] / paced["seconds"]
    row(
        "recorder ingest, paced at 100k events/s, 5 s",
        rate,
        "events/s",
        ">= 100000/s, zero drops",
        None,
        "",
        None,
        rate >= 95_000 and paced["drops"] == 0,
    )
    row("  drops in that run", paced["drops"], "events", "0", None, "", None, paced["drops"] == 0)
    row(
        "recorder drain rate (1M queued events)",
        d["drain_events_per_s"],
        "events/s",
        ">= 100000/s",
        None,
        "",
        None,
        d["drain_events_per_s"] >= 100_000,
    )
    # RSS added: measured around a recorder that took 1.5 M events (buffer drained); the
    # second million went through a buffer bounded at 10^7, not the production 4096.
    added_mb = (d["rss_after_kb"] - d["rss_before_kb"]) / 1024
    row(
        "RSS added by the recorder (after 1.5M events)",
        added_mb,
        "MB",
        "<= 10 MB",
        None,
        "",
        None,
        added_mb <= 10,
    )
    paced_mb = (d["rss_paced_kb"] - d["rss_before_kb"]) / 1024
    row(
        "  of which with the production buffer (500k paced events)",
        paced_mb,
        "MB",
        "<= 10 MB",
        None,
        "",
        None,
        paced_mb <= 10,
    )
    note(
        "ingest: the buffer is a deque; a drained deque's blocks (528 bytes each, 64 events) "
        "go back to malloc, not to the OS, so the 1M-event backlog of the drain test (a buffer "
        "bounded at 10^7 for that test) stays in RSS; the production bound of 4096 events is "
        "64 blocks, about 34 KB"
    )
