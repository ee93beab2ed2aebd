"""The part ``runs``: ``report --json`` on 8 writers x 1000 runs (8000 files) against the same
data in 8 files, both roots compacted first as the rank-0 maintenance pass does.
"""

from __future__ import annotations

import argparse
import subprocess
import time

from bench.ledgers import dataset, summary_present
from bench.results import note, row
from bench.timing import ENV, PY, interleaved, med_ms, peak_rss_mb, report_cmd, spread


def bench_runs(args: argparse.Namespace) -> None:
    runs = dataset("w8-r1000", writers=8, days=1000, runs=1000)
    one = dataset("w8-d1000", writers=8, days=1000)
    for root in (runs, one):  # the pass the rank-0 writer runs in the background
        started = time.monotonic()
        p = subprocess.run(
            [PY, "-m", "vllm_ledger", "compact", "--root", str(root)],
            env=ENV,
            capture_output=True,
            text=True,
        )
        if p.returncode != 0:
            raise SystemExit(f"compact {root} failed:\n{p.stderr[-3000:]}")
        note(f"compact {root.name} in {time.monotonic() - started:.1f} s: {p.stdout.strip()}")
    has = {r.name: summary_present(r) for r in (runs, one)}
    t = interleaved(
        {"report_8000_files": report_cmd(runs), "report_8_files": report_cmd(one)}, args.repeats
    )
    tr, to = med_ms(t["report_8000_files"]), med_ms(t["report_8_files"])

    def tag(name: str) -> str:
        return "summary present" if has[name] else "no summary"

    row(
        f"report --json, 8 writers x 1000 runs ({tag(runs.name)})",
        tr,
        "ms",
        "<= 400 ms",
        to,
        f"same data in 8 files ({tag(one.name)})",
        tr / to,
        tr <= 400,
    )
    rss = peak_rss_mb(runs)
    row("  report peak RSS, 8000 files", rss, "MB", "-", None, "", None, None)
    note(
        "runs: both roots get `vllm-ledger compact` first (the rank-0 maintenance pass), which "
        f"writes the summary of finished files; summary present: {has}; medians of "
        f"{args.repeats} interleaved fresh processes"
    )
    for name, xs in t.items():
        note(spread(name, xs))
