"""Deployment hosts for the budgets, digest and usage tests: ledgers with whose tokens at real
instants (the status command reads them at its own clock), a zone in which now is near
midday (so "today" has hours behind it and ahead), and a stand-in ``ssh`` that runs the
remote command here, as a host reached over SSH without a forced command would.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from tests.conftest import REPO
from tests.credited_ledgers import Call, write_credited_ledger
from vllm_ledger.format.zonefile import record_zone


def midday_zone(now_ts: float | None = None) -> str:
    """An ``Etc/GMT`` zone whose clock shows 11:00-12:59 now."""
    hour = time.gmtime(time.time() if now_ts is None else now_ts).tm_hour
    east = 12 - hour  # UTC+east shows about noon
    if east > 14:
        east -= 24
    if east < -12:
        east += 24
    return "Etc/GMT" if east == 0 else f"Etc/GMT{-east:+d}"


def yesterday_noon_ts(zone: str, now_ts: float | None = None) -> float:
    """Noon of yesterday in ``zone``."""
    tz = ZoneInfo(zone)
    today = datetime.fromtimestamp(time.time() if now_ts is None else now_ts, tz).date()
    return datetime.combine(today - timedelta(days=1), datetime.min.time(), tz).timestamp() + 43200


def write_host_root(root: Path, run_id: str, calls: Sequence[Call], *, zone: str = "UTC") -> None:
    """One closed writer on port 19001 crediting ``calls`` (real instants), the root's zone
    recorded as ``zone`` (the host's "today" and "yesterday")."""
    root.mkdir(parents=True, exist_ok=True)
    record_zone(root, zone)
    start = min(c.ts for c in calls) - 5
    end = max(c.ts for c in calls) + 5
    write_credited_ledger(
        root, run_id, start_ts=start, end_ts=end, calls=calls, port=19001, heartbeat_every_s=3600
    )


def local_ssh(folder: Path) -> Path:
    """A stand-in ``ssh`` client: runs the command it was asked to run (its last argument)
    here, with ``sh -c``, as sshd would for a key without a forced command."""
    path = folder / "ssh"
    path.write_text('#!/bin/sh\nfor last; do :; done\nexec /bin/sh -c "$last"\n')
    path.chmod(0o755)
    return path


def usage_entry(root: Path, budgets: Path | None = None) -> dict[str, str]:
    """A usage config entry for the host of ``root``, run with this interpreter."""
    entry = {"target": "local", "code_dir": str(REPO), "data_dir": str(root),
             "python": sys.executable}  # fmt: skip
    if budgets is not None:
        entry["budgets"] = str(budgets)
    return entry


__all__ = [
    "Call",
    "local_ssh",
    "midday_zone",
    "usage_entry",
    "write_host_root",
    "yesterday_noon_ts",
]
