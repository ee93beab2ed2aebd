"""The part ``whose`` of ``bench/run.py``: ``report --by user`` on a root where 100,000 distinct
end users sent a request each in one day, through one ledger file, against plain ``report`` on
the same root, in the same run (fresh processes, interleaved round by round).

The root is written once under ``bench/out/whose-100k`` by the project's own Recorder, the
requests tagged by a real ``TagBook`` as the middleware tags them (``tests/whose_ledgers.py``);
the writer keeps 1,000 users by name per hour and folds the rest into ``other``. The report
asks the morning after (06:00 UTC), so ``today`` holds nothing, ``24h`` cuts the day and
``3d``, ``7d`` and ``total`` hold all of it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DAY = int(datetime(2026, 11, 29, tzinfo=timezone.utc).timestamp())
AT = DAY + 86400 + 6 * 3600
USERS = 100_000
TARGET = 1.5


def dataset(out: Path) -> Path:
    """The root of 100,000 users in one day, made once (about 20 s)."""
    from tests.whose_ledgers import many_users, write_whose_ledger

    root = out / "whose-100k"
    done = root / ".complete"
    if not done.exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        t = time.monotonic()
        write_whose_ledger(
            root,
            "run-users",
            start_ts=DAY,
            end_ts=DAY + 86400,
            requests=many_users(DAY, USERS),
            heartbeat_s=25.0,
        )
        done.write_text(json.dumps({"users": USERS, "day": DAY}))
        print(f"  (wrote whose-100k in {time.monotonic() - t:.0f} s)", flush=True)
    return root


def bench_whose(
    args: argparse.Namespace,
    out: Path,
    py: str,
    env: dict[str, str],
    row: Callable[..., None],
    note: Callable[[str], None],
    interleaved: Callable[[dict[str, list[str]], int], dict[str, list[float]]],
) -> None:
    root = dataset(out)
    base = [py, "-m", "vllm_ledger", "report", "--root", str(root), "--at", str(AT), "--tz", "UTC"]
    t = interleaved(
        {
            "whose_report": base,
            "whose_report_by_user": [*base, "--by", "user"],
            "whose_report_json": [*base, "--json"],
            "whose_report_by_user_json": [*base, "--by", "user", "--json"],
        },
        args.repeats,
    )
    med = {k: sorted(v)[len(v) // 2] * 1000 for k, v in t.items()}
    plain, by_user = med["whose_report"], med["whose_report_by_user"]
    row(
        "report --by user, 100,000 users in a day (one file)",
        by_user,
        "ms",
        f"<= {TARGET:g}x report",
        plain,
        "report, same root",
        by_user / plain,
        by_user / plain <= TARGET,
    )
    pj, uj = med["whose_report_json"], med["whose_report_by_user_json"]
    row(
        "  the same with --json (every row of every window)",
        uj,
        "ms",
        "-",
        pj,
        "report --json",
        uj / pj,
        None,
    )
    doc = _json(env, [*base, "--by", "user", "--json", "--window", "24h"])
    ww = doc["whose"]["windows"]["24h"]
    named = sum(1 for r in ww["rows"] if r["value"] != "other")
    when = f"{datetime.fromtimestamp(AT, timezone.utc):%Y-%m-%d %H:%M}"
    note(
        f"whose: {USERS:,} users, one request each (10 prompt, 1 generated token), evenly over "
        f"one UTC day through one file; report at {when} UTC "
        f"(the morning after): the 24h window names {named:,} users and folds {ww['folded']:,} "
        f"into other; medians of {args.repeats} fresh processes each, interleaved"
    )
    note(
        "whose: past report's own time, report --by user reads each span's rows with their "
        "label a column at a time (SQLite gathers each column into a JSON array, Python's JSON "
        "reader makes it a list), judges them a column at a time and sums them per reason and "
        "value in Python (read/attribution.py, read/attr_judge.py; SQLite's GROUP BY sorted "
        "every row and cost more); windows of one cutoff that nest (today, 24h, 3d, ...) are "
        "read ring by ring, each row once (CreditReads), with the column sums the judging made; "
        "windows that read the same of every file share their rows (read/whose_report.py); "
        "about 24,000 label sets a day here"
    )
    for name, xs in t.items():
        q = sorted(xs)
        note(f"{name}: median {med[name]:.1f} ms, min {q[0] * 1000:.1f}, max {q[-1] * 1000:.1f}")


def _json(env: dict[str, str], argv: list[str]) -> dict[str, Any]:
    p = subprocess.run(argv, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{p.stderr[-2000:]}")
    doc: dict[str, Any] = json.loads(p.stdout)
    return doc
