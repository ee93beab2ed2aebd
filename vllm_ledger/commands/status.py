"""vllm-ledger status: the bounded status JSON the bot reads over SSH (one line, < 4 KiB)."""

from __future__ import annotations

import argparse
import sys

from vllm_ledger.commands._common import add_roots, add_tz, roots_of
from vllm_ledger.formats import status as status_format
from vllm_ledger.read.report import build_report

NAME = "status"
HELP = "print the bounded status JSON for the bot (numbers only, < 4 KiB)"
EPILOG = """example:
  vllm-ledger status --root /srv/artifacts/usage

This is the only command the poller runs remotely; see `vllm-ledger ssh-key-line`.
"""


def configure(p: argparse.ArgumentParser) -> None:
    add_roots(p)
    add_tz(p)


def run(args: argparse.Namespace) -> int:
    report = build_report(roots_of(args), tz=args.tz)
    sys.stdout.write(status_format.render(report))
    return 0
