"""vllm-ledger declare-stop: record that an instance was stopped on purpose.

The report then counts that stretch as declared idle for that instance (shown apart from
covered and uncovered time; ``report --strict`` ignores declarations). Refused where the ledger
holds tokens or proven spans of that instance in the stretch: a declaration never hides data.
"""

from __future__ import annotations

import argparse
import getpass
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from zoneinfo import ZoneInfo

from vllm_ledger.commands._ledger_flags import add_roots, roots_of
from vllm_ledger.commands._refusals import flagged
from vllm_ledger.commands._times import TIME_FLAG_HELP, resolve_flag, since_until_flags, time_flag
from vllm_ledger.commands._values import text
from vllm_ledger.commands._zones import add_tz, zone_of
from vllm_ledger.errors import BadArgument, BadDeclaration
from vllm_ledger.format import declarations
from vllm_ledger.formats.safe import printable
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.periods import reversed_range
from vllm_ledger.read.snapshot import LedgerSnapshot
from vllm_ledger.read.windows import Window
from vllm_ledger.units import format_instant

NAME = "declare-stop"
HELP = "record that an instance was stopped on purpose: the report shows that time as declared"
EPILOG = """example (a planned upgrade, stopped cleanly at 02:00 and started again at 02:40):
  vllm-ledger declare-stop --root /srv/artifacts/usage --instance gpu1:19001 \\
      --from 2026-11-30T02:00:00+08:00 --until 2026-11-30T02:40:00+08:00 \\
      --reason "upgrade vLLM 0.32 -> 0.33"
  vllm-ledger declare-stop --root /srv/artifacts/usage --instance gpu1:19001 \\
      --from "2026-11-30 02:00" --until "2026-11-30 02:40" --reason "upgrade"
The declaration is appended to ROOT/declared-stops.jsonl. Refused when the ledger holds
tokens or heartbeats of that instance in the stretch, when the stretch is in the future or
starts before the instance's first recorded second, or when no ledger knows the instance.
Times take the forms of report --since (a local time is read in the zone) and are echoed
in the zone of the one rule (--tz, $VLLM_LEDGER_TZ, ROOT/zone, Asia/Shanghai;
docs/ledger.md). `report --strict` ignores every declaration.
exit status: 0 recorded, 2 a bad flag or a stop that cannot be declared (the line says why)
"""


def configure(p: argparse.ArgumentParser) -> None:
    add_roots(p)
    p.add_argument(
        "--instance",
        required=True,
        type=text("--instance", "gpu1:8000"),
        metavar="HOST:PORT",
        help="the instance, exactly as `report --by instance` prints it",
    )
    p.add_argument(
        "--from",
        dest="from_ts",
        required=True,
        type=time_flag("--from"),
        metavar="TIME",
        help=f"when it stopped: {TIME_FLAG_HELP}",
    )
    p.add_argument(
        "--until",
        dest="until_ts",
        required=True,
        type=time_flag("--until"),
        metavar="TIME",
        help="when it was serving again (not in the future), in the same forms",
    )
    p.add_argument(
        "--reason",
        required=True,
        type=text("--reason", '"upgrade to 0.33"', max_len=declarations.MAX_REASON_CHARS),
        help="why (shown in the report's declarations)",
    )
    add_tz(p, "the times it echoes")


def run(args: argparse.Namespace, clock: Callable[[], float] = time.time) -> int:
    roots = roots_of(args)
    if len(roots) != 1:
        raise BadArgument("declare-stop writes into one root: pass --root DIR once")
    root: Path = roots[0]
    zone = zone_of(args, roots).name
    tz = ZoneInfo(zone)

    def when(ts: float) -> str:
        return format_instant(ts, tz)

    now = clock()
    from_ts = resolve_flag(args.from_ts, "--from", zone, now)
    until_ts = resolve_flag(args.until_ts, "--until", zone, now)
    assert from_ts is not None and until_ts is not None  # both required
    if until_ts <= from_ts:
        with since_until_flags():
            raise reversed_range(from_ts, until_ts, tz, ("from", "until"))
    lo, hi = math.ceil(from_ts), math.floor(until_ts)
    if hi > now:
        raise BadArgument(f"--until {when(hi)} is in the future: declare a stop once it is over")
    decl = declarations.Declaration(
        instance=args.instance,
        from_ts=lo,
        until_ts=hi,
        reason=args.reason,
        declared_ts=now,
        by=_user(),
    )
    try:
        declarations.check(decl)
    except BadDeclaration as exc:
        said = flagged(exc, "--instance") if exc.argument == "instance" else exc
        raise BadArgument(f"cannot declare this stop: {said}") from None
    with LedgerSet.read([root], clock=lambda: now) as ls:
        mine = [s for s in ls.snapshots if s.ok and s.instance.key == args.instance]
        if not mine:
            known = sorted({s.instance.key for s in ls.snapshots if s.ok})
            raise BadArgument(
                f"no ledger under {printable(root)} knows instance {printable(args.instance)}: "
                f"use one `report --by instance` prints ({', '.join(map(printable, known[:8]))})"
            )
        first = first_recorded_second(mine)
        if first is not None and lo < first:
            raise BadArgument(
                f"--from {when(lo)} is before the first recorded second of "
                f"{printable(args.instance)} ({when(first)}): a declared stop covers time it was "
                f"stopped, not before it ever ran; give --from {when(first)} or later"
            )
        for s in mine:
            for a, b in s.spans:  # the whole seconds it vouches for: [ceil(a), floor(b))
                if math.ceil(a) < hi and math.floor(b) > lo:
                    raise BadArgument(
                        f"run {printable(s.run_id)} of {printable(args.instance)} was recording "
                        f"from {when(a)} to {when(b)}: a declared stop may not overlap what the "
                        "ledger proves (declare only the stretch it was down)"
                    )
        total, _imprecise = ls.total(mine, Window("declared", lo, hi))
        if total.input_tokens or total.output_tokens or total.requests:
            raise BadArgument(
                f"the ledger holds {total.input_tokens} input and {total.output_tokens} output "
                f"tokens of {printable(args.instance)} in that stretch: it was not stopped"
            )
    path = declarations.append(root, decl)
    print(
        f"declared: {printable(args.instance)} stopped {when(lo)} -> {when(hi)} "
        f"({hi - lo} s): {printable(args.reason)}; in {printable(path)}"
    )
    return 0


def first_recorded_second(snapshots: Sequence[LedgerSnapshot]) -> int | None:
    """The first whole second any of ``snapshots`` (one instance's files) recorded: the
    earliest of their spans, first counted seconds and creation times; None if none says."""
    starts = [a for s in snapshots for a, _b in s.spans]
    starts += [s.first_bucket_ts for s in snapshots if s.first_bucket_ts is not None]
    starts += [s.created_ts for s in snapshots if s.created_ts is not None]
    return math.floor(min(starts)) if starts else None


def _user() -> str:
    try:
        return getpass.getuser()[:100]
    except (OSError, KeyError):
        return ""
