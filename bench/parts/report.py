"""The part ``report``: a fresh ``report --json`` on 1-, 30- and 365-day ledgers of 8 writers,
against python's bare start with the same imports, and against the ledger's age.
"""

from __future__ import annotations

import argparse

from bench.ledgers import dataset
from bench.results import note, row
from bench.timing import PY, interleaved, med_ms, peak_rss_mb, report_cmd, spread

BASELINE_IMPORTS = "import sqlite3, json, zoneinfo, argparse, datetime"


def bench_report(args: argparse.Namespace) -> None:
    d1 = dataset("w8-d1", writers=8, days=1)
    d30 = dataset("w8-d30", writers=8, days=30)
    d365 = dataset("w8-d365", writers=8, days=365)
    t = interleaved(
        {
            "python_imports": [PY, "-c", BASELINE_IMPORTS],
            "report_1d": report_cmd(d1),
            "report_30d": report_cmd(d30),
            "report_365d": report_cmd(d365),
        },
        args.repeats,
    )
    base, t1 = med_ms(t["python_imports"]), med_ms(t["report_1d"])
    t30, t365 = med_ms(t["report_30d"]), med_ms(t["report_365d"])
    row(f'python -c "{BASELINE_IMPORTS}"', base, "ms", "(baseline)", None, "", None, None)
    row(
        "report --json, 8 writers, 1-day ledger (fresh process)",
        t1,
        "ms",
        "<= 4x python + imports",
        base,
        "python + the imports",
        t1 / base,
        t1 / base <= 4,
    )
    row("report --json, 8 writers, 30-day ledger", t30, "ms", "-", t1, "1-day", t30 / t1, None)
    row(
        "report --json, 8 writers, 365-day ledger",
        t365,
        "ms",
        "<= 100 ms, <= 1.3x 1-day",
        t1,
        "1-day",
        t365 / t1,
        t365 <= 100 and t365 / t1 <= 1.3,
    )
    rss = peak_rss_mb(d365)
    row("  report peak RSS, 365 days", rss, "MB", "<= 100 MB", None, "", None, rss <= 100)
    note(
        f"report: medians of {args.repeats} fresh processes each, interleaved round by round, "
        f"all on {PY}; no summary of finished files in these roots"
    )
    for name, xs in t.items():
        note(spread(name, xs))
