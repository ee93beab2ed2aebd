"""The part ``export``: a year of hours exported by hour x model x instance as CSV in a fresh
process, its peak RSS against 30 days' (constant memory), its rows' input summed against
``report --since/--until`` for the same year.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

from bench.ledgers import NOW, dataset
from bench.results import row
from bench.timing import ENV, PY, RSS_WRAPPER, report_cmd


def _export_run(root: Path, days: int) -> tuple[float, float, int, int]:
    """(seconds, peak RSS MB, rows, input tokens summed over the rows) of one export of the last
    ``days`` days by hour x model x instance, as CSV, in a fresh process."""
    since = str(NOW - days * 86400)
    argv = ["export", "--root", str(root), "--since", since, "--until", str(NOW), "--tz", "UTC"]
    t = time.perf_counter()
    p = subprocess.run([PY, "-c", RSS_WRAPPER, *argv], capture_output=True, text=True, env=ENV)
    took = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"export failed: {p.stderr[-500:]}")
    lines = p.stdout.splitlines()
    header = lines[0].split(",")
    col = header.index("input")
    total = sum(int(line.split(",")[col]) for line in lines[1:])
    return took, int(p.stderr.strip().splitlines()[-1]) / 1024, len(lines) - 1, total


def bench_export(args: argparse.Namespace) -> None:
    d30 = dataset("w8-d30", writers=8, days=30)
    d365 = dataset("w8-d365", writers=8, days=365)
    s30, rss30, n30, _in30 = _export_run(d30, 30)
    s365, rss365, n365, in365 = _export_run(d365, 365)
    rep = subprocess.run(
        report_cmd(d365, "--since", str(NOW - 365 * 86400), "--until", str(NOW)),
        capture_output=True,
        text=True,
        env=ENV,
    )
    want = json.loads(rep.stdout)["windows"]["period"]["input"]
    row("export, 30 days by hour (CSV rows)", n30, "rows", "-", None, "", None, None)
    row("export, 365 days by hour (CSV rows)", n365, "rows", "-", None, "", None, None)
    row("  export wall time, 365 days", s365, "s", "-", s30, "30 days", s365 / s30, None)
    row(
        "  export peak RSS, 365 days",
        rss365,
        "MB",
        "constant: <= 1.2x 30 days",
        rss30,
        "30 days",
        rss365 / rss30,
        rss365 <= 1.2 * rss30,
    )
    row(
        "  export rows' input summed = report --since/--until",
        in365,
        "tokens",
        "equal",
        want,
        "report",
        in365 / want if want else None,
        in365 == want,
    )
