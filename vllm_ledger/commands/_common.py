"""Flags shared by several commands."""

from __future__ import annotations

import argparse
import math
import os
from datetime import datetime
from pathlib import Path

from vllm_ledger.errors import BadArgument
from vllm_ledger.read.windows import DEFAULT_TZ
from vllm_ledger.write.identity import default_root


def add_roots(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--root",
        action="append",
        type=Path,
        metavar="DIR",
        help="ledger root (repeatable); default: $VLLM_LEDGER_DIR or ~/.local/share/vllm-ledger",
    )


def roots_of(args: argparse.Namespace) -> list[Path]:
    roots = args.root or [default_root(os.environ)]
    for r in roots:
        if not r.is_dir():
            raise BadArgument(
                f"ledger root {r} is not a directory: pass --root DIR where the ledgers are"
            )
    return roots


def add_time(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tz",
        default=DEFAULT_TZ,
        metavar="ZONE",
        help=f"time zone for 'today' (default {DEFAULT_TZ})",
    )
    p.add_argument(
        "--at", metavar="TIME", help="report as of TIME: Unix seconds or ISO 8601 (default: now)"
    )


EARLIEST_AT = 946_684_800.0  # 2000-01-01T00:00:00Z: no ledger is older
LATEST_AT = 4_102_444_800.0  # 2100-01-01T00:00:00Z


def parse_at(value: str | None) -> float | None:
    """``--at``: Unix seconds or ISO 8601 with an offset, between 2000 and 2100."""
    if value is None:
        return None
    example = "give Unix seconds or ISO 8601, e.g. --at 2026-11-29T08:00:00+08:00"
    try:
        ts = float(value)
    except ValueError:
        ts = _iso_seconds(value, example)
    if not math.isfinite(ts):
        raise BadArgument(f"--at {value!r} is not a time: {example}")
    if ts > LATEST_AT and ts / 1000 <= LATEST_AT:
        raise BadArgument(
            f"--at {value!r} looks like milliseconds: give seconds, e.g. --at {ts / 1000:.0f}"
        )
    if not EARLIEST_AT <= ts <= LATEST_AT:
        raise BadArgument(f"--at {value!r} is outside 2000-2100: {example}")
    return ts


def _iso_seconds(value: str, example: str) -> float:
    try:
        # Python 3.10's fromisoformat does not take a trailing Z.
        dt = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
    except ValueError as exc:
        raise BadArgument(f"--at {value!r} is not a time: {example}") from exc
    if dt.tzinfo is None:
        raise BadArgument(f"--at {value!r} has no UTC offset: add one, e.g. +08:00")
    return dt.timestamp()
