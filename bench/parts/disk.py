"""The part ``disk``: a year of 8 busy writers on disk, against per-second rows kept forever,
and how fast it grows after the first 8 days.
"""

from __future__ import annotations

import argparse

from bench.ledgers import dataset, size_mb
from bench.results import row


def bench_disk(args: argparse.Namespace) -> None:
    d8 = dataset("w8-d8", writers=8, days=8.5)
    d365 = dataset("w8-d365", writers=8, days=365)
    # One year of 8 busy writers against naive per-second rows kept forever.
    s365, s8 = size_mb(d365), size_mb(d8)
    per_second_row_bytes = s8 * 1e6 / (8 * 8.5 * 86400)
    naive_year = per_second_row_bytes * 8 * 365 * 86400 / 1e6
    growth = (s365 - s8) / ((365 - 8.5) / 365)
    row(
        "disk, 8 busy writers, one year",
        s365,
        "MB",
        "<= 300 MB",
        naive_year,
        "per-second rows kept",
        s365 / naive_year,
        s365 <= 300,
    )
    row(
        "  disk growth after the first 8 days",
        growth,
        "MB/year",
        "<= 20 MB/year",
        None,
        "",
        None,
        growth <= 20,
    )
