"""Flags shared by several commands."""

from __future__ import annotations

import argparse
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


def parse_at(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        # Python 3.10's fromisoformat does not take a trailing Z.
        dt = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
    except ValueError as exc:
        raise BadArgument(
            f"--at {value!r} is not a time: "
            "give Unix seconds or ISO 8601 like 2026-11-29T08:00:00+08:00"
        ) from exc
    if dt.tzinfo is None:
        raise BadArgument(f"--at {value!r} has no UTC offset: add one, e.g. +08:00")
    return dt.timestamp()
