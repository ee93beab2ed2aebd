"""``--tz``: the zone a command reads its days in, by the one rule (docs/ledger.md)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from zoneinfo import ZoneInfo

from vllm_ledger.commands._refusals import flag_names
from vllm_ledger.commands._values import tz_name
from vllm_ledger.errors import BadArgument
from vllm_ledger.formats.safe import printable
from vllm_ledger.read.windows import DEFAULT_TZ
from vllm_ledger.read.zone import (
    ZONE_FILE,
    ZoneChoice,
    machine_zone,
    resolve_zone,
    zone_hint,
    zone_info,
    zone_problem,
)
from vllm_ledger.units import ZONE_ENV


def add_tz(p: argparse.ArgumentParser, what: str = "'today'") -> None:
    p.add_argument(
        "--tz",
        type=tz_name(),
        default=None,
        metavar="ZONE",
        help=f"time zone for {what} (default: ${ZONE_ENV}, else the zone recorded in the "
        f"root's '{ZONE_FILE}' file, else {DEFAULT_TZ}; see docs/ledger.md)",
    )


def zone_of(args: argparse.Namespace, roots: Sequence[Path]) -> ZoneChoice:
    """The zone by the one rule (``--tz``, ``$VLLM_LEDGER_TZ``, the roots' zone file, the
    default); a zone file that was ignored is one warning line on stderr."""
    try:
        with flag_names(tz="--tz"):
            zone = resolve_zone(args.tz, os.environ, roots)
    except BadArgument as exc:
        if exc.argument != "roots":
            raise
        raise BadArgument(
            exc.what, hint=f"pass --tz ZONE (or set {ZONE_ENV}) to choose one"
        ) from None
    for line in zone.warnings:
        print(f"vllm-ledger: warning: {printable(line)}", file=sys.stderr)
    return zone


def add_local_tz(p: argparse.ArgumentParser, what: str) -> None:
    """``--tz`` for a command that reads no ledger root (``local_zone_of``)."""
    p.add_argument(
        "--tz",
        type=tz_name(),
        default=None,
        metavar="ZONE",
        help=f"time zone for {what} (default: ${ZONE_ENV}, else this machine's zone: $TZ, "
        "else /etc/localtime, else UTC; see docs/ledger.md)",
    )


def local_zone_of(args: argparse.Namespace) -> tuple[ZoneInfo, str]:
    """The zone of a command without a ledger root, and its name: ``--tz``, else
    ``$VLLM_LEDGER_TZ``, else this machine's zone (``read.zone.machine_zone``)."""
    name = getattr(args, "tz", None) or os.environ.get(ZONE_ENV, "").strip()
    if name:
        problem = zone_problem(name)
        if problem is not None:  # only the environment's value can be refused here
            raise BadArgument(
                f"{ZONE_ENV} {name[:70]!r} {problem}: {zone_hint(name)}, "
                f"e.g. {ZONE_ENV}=Asia/Shanghai (or unset it)"
            )
        return zone_info(name), name
    return machine_zone(os.environ)
