"""make bench: every figure beside its baseline, measured in the same run.

Prints a table and writes bench/results.json and bench/results.md (the README's table is
pasted from results.md). Synthetic ledgers are made by tests/generate.py (through the
project's own Recorder) under bench/out/, reused when present (about 6 minutes the first time).

    python bench/run.py                       # every part (about 25 minutes once generated)
    python bench/run.py --only report,opens   # some parts; the others' rows are kept
    python bench/run.py --skip serve,profile  # everything but the real-vLLM parts
    python bench/run.py --list                # the parts and what each measures

Parts: see PARTS below, each a module of bench/parts/; the rows, notes and the two files are
bench/results.py's. Report timings are medians of fresh processes, each command
and its baseline interleaved round by round, so machine noise falls on both alike.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench import results  # noqa: E402
from bench.ledgers import OUT  # noqa: E402
from bench.parts import (  # noqa: E402
    attribution,
    disk,
    export,
    fleet,
    hotpath,
    ingest,
    opens,
    profile,
    report,
    runs,
    serve,
    whose,
)
from bench.results import DETAILS, note, row  # noqa: E402
from bench.timing import ENV, PY, interleaved  # noqa: E402

PARTS: dict[str, tuple[Callable[[argparse.Namespace], None], str]] = {
    "hotpath": (
        lambda a: hotpath.bench_hot_path(),
        "record() per call against PrometheusStatLogger",
    ),
    "join": (
        lambda a: attribution.bench_join(PY, row, note, DETAILS),
        "record() with the attribution join (batch 256, 8 finished) against PrometheusStatLogger",
    ),
    "middleware": (
        lambda a: attribution.bench_middleware(PY, row, note, DETAILS),
        "the attribution middleware's CPU per request (1 KB, 400 KB) against the app alone",
    ),
    "attrdisk": (
        lambda a: attribution.bench_attrdisk(row, note, DETAILS),
        "a ledger's growth in a day of 1,000 keys x 1,000 users, against no attribution",
    ),
    "ingest": (lambda a: ingest.bench_ingest(), "recorder ingest, drain rate and memory"),
    "report": (report.bench_report, "report --json on 1/30/365-day ledgers against python's start"),
    "whose": (
        lambda a: whose.bench_whose(a, OUT, PY, ENV, row, note, interleaved),
        "report --by user on 100,000 users in a day (one file) against report",
    ),
    "export": (
        export.bench_export,
        "export a year of hours: peak RSS against 30 days, sums = report",
    ),
    "disk": (disk.bench_disk, "disk use of a year of 8 busy writers"),
    "runs": (runs.bench_runs, "report --json on 8 writers x 1000 runs against the same in 8 files"),
    "opens": (opens.bench_opens, "opens per ledger file of report --html and timeline (strace)"),
    "serve": (
        serve.bench_serve,
        "a real vLLM with the ledger on against no plugin, every pair (~18 min)",
    ),
    "profile": (profile.bench_profile, "py-spy and probe profile of the API process (~2 min)"),
    "fleet": (fleet.bench_fleet, "fleet over 200 hosts x 2 HA replicas in a real VictoriaMetrics"),
}


def _names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in PARTS]
    if bad:
        raise SystemExit(f"unknown part(s) {', '.join(bad)}: choose from {', '.join(PARTS)}")
    return names


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--only", metavar="NAME[,NAME]", help="run only these parts")
    ap.add_argument("--skip", metavar="NAME[,NAME]", default="", help="skip these parts")
    ap.add_argument("--no-serve", action="store_true", help="same as --skip serve,profile")
    ap.add_argument("--list", action="store_true", help="list the parts and exit")
    ap.add_argument("--repeats", type=int, default=15, help="timed runs per report command (15)")
    ap.add_argument("--pairs", type=int, default=5, help="A/B serving pairs, one API process (5)")
    ap.add_argument(
        "--pairs-dp2",
        type=int,
        default=3,
        help="A/B serving pairs at --data-parallel-size 2 --api-server-count 2 (3; 0: none)",
    )
    ap.add_argument(
        "--serve-tokens",
        type=int,
        default=40_960,
        help="generated tokens per server's measured load, in requests of 64 (40960)",
    )
    ap.add_argument(
        "--serve-concurrency", type=int, default=32, help="requests in flight while serving (32)"
    )
    ap.add_argument("--fleet-repeats", type=int, default=5, help="timed runs per fleet (5)")
    ap.add_argument("--profile-seconds", type=float, default=80, help="profile window (80 s)")
    ap.add_argument("--profile-hz", type=int, default=100, help="py-spy sampling rate (100)")
    ap.add_argument(
        "--profile-spy",
        choices=("blocking", "nonblocking", "off"),
        default="blocking",
        help="py-spy pauses the process per sample (blocking, the default: whole stacks), or "
        "not (cheaper, stacks can be torn), or is not used (the probe's figures alone)",
    )
    args = ap.parse_args()
    if args.list:
        for name, (_, what) in PARTS.items():
            print(f"{name:<11} {what}")
        return
    chosen = _names(args.only) if args.only else list(PARTS)
    skip = set(_names(args.skip)) | ({"serve", "profile"} if args.no_serve else set())
    chosen = [n for n in PARTS if n in chosen and n not in skip]
    if not chosen:
        raise SystemExit("no part left to run: see --list")
    OUT.mkdir(parents=True, exist_ok=True)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"vllm-ledger benchmarks on {machine}: {', '.join(chosen)}")
    print(results.header())
    t0 = time.monotonic()
    ran: dict[str, dict[str, Any]] = {}
    for name in chosen:
        results.begin(name)
        t = time.monotonic()
        PARTS[name][0](args)
        ran[name] = {"date": time.strftime("%Y-%m-%d %H:%M"), "wall_s": time.monotonic() - t}
    total = time.monotonic() - t0
    results.write(machine, PY, ran, total, list(PARTS))
    walls = ", ".join(f"{n} {r['wall_s']:.0f} s" for n, r in ran.items())
    print(f"wrote bench/results.json and bench/results.md; wall time {total:.0f} s ({walls})")


if __name__ == "__main__":
    main()
