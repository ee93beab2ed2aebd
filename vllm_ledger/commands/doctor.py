"""vllm-ledger doctor: the post-upgrade checks (interface, agreement, writers, storage,
attribution, budgets)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from vllm_ledger.commands._ledger_flags import add_roots
from vllm_ledger.commands._values import duration, number, url
from vllm_ledger.commands._zones import add_tz
from vllm_ledger.errors import BadArgument
from vllm_ledger.formats.safe import printable
from vllm_ledger.progress import quiet_stderr, say, when_slow
from vllm_ledger.units import BUDGETS_ENV

if TYPE_CHECKING:
    from vllm_ledger.doctor import DoctorReport

NAME = "doctor"
HELP = (
    "after an upgrade: stats interface, /metrics agreement, writers, storage, attribution, budgets"
)
EPILOG = """examples:
  vllm-ledger doctor --metrics-url http://127.0.0.1:8000/metrics --root /srv/artifacts/usage
  vllm-ledger doctor --only interface --only storage
  vllm-ledger doctor --only attribution --root /srv/artifacts/usage
  vllm-ledger doctor --only budgets --root /srv/artifacts/usage --budgets budgets.toml
  vllm-ledger doctor --only flags --rendered /etc/systemd/system/vllm-primary.service
Run it with the Python that runs vLLM (its venv or image): the interface check imports vLLM,
and the attribution check reads from it whether finished requests can be joined to their
keys. The budgets check says whether hard budgets hold: the enforcer's file fresh, or failing
open (docs/budgets.md). A row that warns (attribution unknown until a request has finished, or
off in a vLLM before 0.32) does not fail the run. With --rendered, the flags row parses that
file's vllm serve flags with this vLLM's own parser (a flag it dropped fails the row).
exit status: 0 every check passes (or warns), 1 a check failed, 2 could not start (a bad flag)
"""

# What each check does: its progress line on stderr once it has run 2 s (interface, agreement
# and writers often take longer; the others are quiet when quick).
CHECK_DOING: dict[str, str] = {
    "interface": "importing vLLM, one record() through the plugin",
    "agreement": "the newest run against /metrics (waits up to --wait)",
    "writers": "watching the heartbeats (up to --heartbeat-wait)",
    "storage": "the recorder over refusing storage, the roots' room",
    "attribution": "whose tokens the newest run credits",
    "budgets": "the budgets file and the enforcer's",
}


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--metrics-url",
        type=url("--metrics-url", "http://127.0.0.1:8000/metrics"),
        metavar="URL",
        help="the /metrics of the vLLM writing the ledger (needed by the agreement check)",
    )
    add_roots(p)
    add_tz(p)
    p.add_argument(
        "--only",
        action="append",
        choices=("interface", "agreement", "writers", "storage", "attribution", "budgets", "flags"),
        metavar="CHECK",
        help="run only this check (repeatable): interface, agreement, writers, storage, "
        "attribution, budgets, flags (needs --rendered)",
    )
    p.add_argument(
        "--rendered",
        type=Path,
        metavar="FILE",
        help="flags: a file vllm-ledger render wrote (script, unit, compose, supervisor, "
        "kubernetes); its vllm serve flags parsed by the vLLM found here",
    )
    p.add_argument(
        "--budgets",
        type=Path,
        metavar="FILE",
        help=f"budgets: the budgets file to check (default: ${BUDGETS_ENV}, the one vLLM's "
        "rank 0 hands its enforcer; none: budgets are off)",
    )
    p.add_argument(
        "--stack",
        type=url("--stack", "http://127.0.0.1:9090"),
        metavar="PROMETHEUS_URL",
        help="the monitoring stack (observability): every target up, vLLM's and the exporter's "
        "among them, and every alert rule loaded, as this Prometheus says; alone, no other "
        "check runs (docs/doctor.md)",
    )
    p.add_argument(
        "--wait",
        type=duration("--wait", 0, 600, "10s"),
        default=10.0,
        metavar="DURATION",
        help="agreement: re-check for up to this long while the ledger catches up (default 10s)",
    )
    p.add_argument(
        "--timeout",
        type=duration("--timeout", 0, 300, "10s", lo_open=True),
        default=10.0,
        metavar="DURATION",
        help="agreement: each read of /metrics, whole, ends within this (default 10s)",
    )
    p.add_argument(
        "--heartbeat-wait",
        type=duration("--heartbeat-wait", 0, 600, "12s"),
        default=12.0,
        metavar="DURATION",
        help="writers: watch this long at most for every heartbeat to move (default 12s)",
    )
    p.add_argument(
        "--expect-writers",
        type=number("--expect-writers", 1, 4096, "8", unit="a count", integer=True),
        metavar="N",
        help="writers: the API process count you launched (often 8)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the rows as JSON (schema 1, docs/json-schema.md); progress stays on stderr",
    )


def run(args: argparse.Namespace) -> int:
    """The checks, a progress line on stderr for one that runs past 2 s, and what vLLM writes
    meanwhile (stderr or stdout) kept out of the table (counted, and its last line shown, on
    stderr after it)."""
    from vllm_ledger.doctor import table
    from vllm_ledger.formats.command_json import doctor_dict, dumps

    with quiet_stderr(NAME) as quiet, contextlib.ExitStack() as slow:

        def on_check(name: str, n: int, of: int) -> None:
            slow.close()  # the check before has ended
            doing = f"[{n}/{of}] {name}: {CHECK_DOING[name]}"
            slow.enter_context(when_slow(NAME, doing, emit=quiet.say))

        report = _report(args, on_check)
        slow.close()
    if args.json:
        sys.stdout.write(dumps(doctor_dict(report, quiet.count)))
    else:
        for line in table(report):
            print(line)
        print(report.summary())
    if quiet.count:
        last = printable(quiet.lines[-1])
        say(
            NAME,
            f"vLLM wrote {quiet.count} line(s) while the checks ran, kept out of the "
            f"table; the last: {last}",
        )
    return 0 if report.ok else 1


def _report(args: argparse.Namespace, on_check: Callable[[str, int, int], None]) -> DoctorReport:
    from vllm_ledger.commands._ledger_flags import roots_of
    from vllm_ledger.commands._zones import zone_of
    from vllm_ledger.doctor import CHECKS, doctor
    from vllm_ledger.read.report import resolve_tz

    checks = tuple(c for c in CHECKS if args.only is None or c in args.only)
    if args.only is not None and "flags" in args.only and args.rendered is None:
        raise BadArgument("the flags check needs --rendered FILE: give a file render wrote")
    if args.stack is not None and args.only is None:  # the monitoring host: the stack alone
        checks = ()
    if "agreement" in checks and args.metrics_url is None:
        raise BadArgument(
            "the agreement check needs --metrics-url: give vLLM's /metrics, e.g. "
            "--metrics-url http://127.0.0.1:8000/metrics, or leave it out with --only"
        )
    roots = roots_of(args) if set(checks) - {"interface"} else []
    tz = resolve_tz(zone_of(args, roots).name)  # the report's rule, for the times rows name
    # vLLM logs its own start-up chatter at INFO; the table is what this command prints.
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    budgets, origin = budgets_of(args)
    report = doctor(
        roots,
        args.metrics_url,
        checks=checks,
        wait_s=args.wait,
        timeout_s=args.timeout,
        heartbeat_wait_s=args.heartbeat_wait,
        expect_writers=args.expect_writers,
        tz=tz,
        budgets=budgets,
        budgets_origin=origin,
        on_check=on_check,
    )
    if args.rendered is not None and (args.only is None or "flags" in args.only):
        from vllm_ledger.doctor import DoctorReport
        from vllm_ledger.doctor.flags import check_flags

        report = DoctorReport((*report.rows, check_flags(args.rendered)))
    if args.stack is not None:
        from vllm_ledger.doctor import DoctorReport
        from vllm_ledger.doctor.stack import stack_rows

        report = DoctorReport((*report.rows, *stack_rows(args.stack)))
    return report


def budgets_of(args: argparse.Namespace) -> tuple[Path | None, str]:
    """The budgets file to check and where it was named: ``--budgets``, else the environment."""
    if args.budgets is not None:
        return args.budgets, "--budgets"
    named = os.environ.get(BUDGETS_ENV, "").strip()
    return (Path(named), f"${BUDGETS_ENV}") if named else (None, "")
