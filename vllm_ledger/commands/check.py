"""vllm-ledger check: an integrity pass over every ledger (quick_check, gaps, clean closes)."""

from __future__ import annotations

import argparse

from vllm_ledger.commands._common import add_roots, roots_of
from vllm_ledger.formats.safe import printable
from vllm_ledger.read.check import check

NAME = "check"
HELP = "integrity pass over every ledger file; exit 1 if anything is wrong (for cron)"
EPILOG = """example:
  vllm-ledger check --root /srv/artifacts/usage
exit status: 0 all sound, 1 something is wrong (each file's line says what) or no ledger
file is there at all
"""


def configure(p: argparse.ArgumentParser) -> None:
    add_roots(p)


def run(args: argparse.Namespace) -> int:
    roots = roots_of(args)
    verdicts = check(roots)
    if not verdicts:  # nothing to vouch for is not "all sound"
        where = ", ".join(map(str, roots))
        print(
            f"NO_LEDGER     no ledger files under {printable(where)}:"
            " is the plugin on (VLLM_LEDGER_DIR)?"
        )
        return 1
    for v in verdicts:
        verdict = v.verdict.upper() if not v.ok else "ok"
        print(f"{verdict:<13} {printable(v.path)}  {printable(v.detail)}")
    bad = sum(1 for v in verdicts if not v.ok)
    print(f"{len(verdicts)} ledger file(s), {bad} with problems")
    return 1 if bad else 0
