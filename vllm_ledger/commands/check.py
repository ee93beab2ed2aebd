"""vllm-ledger check: an integrity pass over every ledger (quick_check, gaps, clean closes)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vllm_ledger.commands._ledger_flags import add_roots, roots_of
from vllm_ledger.commands._zones import add_tz, zone_of
from vllm_ledger.formats.command_json import check_dict, dumps
from vllm_ledger.formats.safe import printable
from vllm_ledger.formats.table import pad
from vllm_ledger.read.check import check
from vllm_ledger.read.matched import root_hint
from vllm_ledger.read.report import resolve_tz

NAME = "check"
HELP = "integrity pass over every ledger file; exit 1 if anything is wrong (for cron)"
EPILOG = """example:
  vllm-ledger check --root /srv/artifacts/usage
  vllm-ledger check --root /srv/artifacts/usage --json

Each file: quick_check, values, sequence marker, hourly and daily rows against the rows
they add up, clean close. Then every problem of `report`'s total window that no file's
line names (a writer that never wrote a file, dropped or lost events): check passes only
where report's total has no problem (docs/faults.md#check).
exit status: 0 all sound, 1 something is wrong (each file's line says what) or no ledger
file is there at all, 2 a bad flag
"""


def configure(p: argparse.ArgumentParser) -> None:
    add_roots(p)
    add_tz(p)
    p.add_argument("--json", action="store_true", help="print JSON (schema 1, docs/json-schema.md)")


def run(args: argparse.Namespace) -> int:
    roots = roots_of(args)
    verdicts = check(roots, tz=resolve_tz(zone_of(args, roots).name))
    if args.json:
        doc = check_dict(roots, verdicts)
        sys.stdout.write(dumps(doc))
        if not verdicts:
            print(f"check: {no_ledger_line(roots)}", file=sys.stderr)
        return 0 if doc["ok"] else 1
    if not verdicts:  # nothing to vouch for is not "all sound"
        print(f"NO_LEDGER     {no_ledger_line(roots)}")
        return 1
    for v in verdicts:
        verdict = v.verdict.upper() if not v.ok else "ok"
        print(f"{pad(verdict, 13)} {printable(v.path)}  {printable(v.detail)}")
    files = [v for v in verdicts if not v.root]
    bad = sum(1 for v in files if not v.ok)
    beyond = len(verdicts) - len(files)
    more = f"; {beyond} problem(s) beyond the files" if beyond else ""
    print(f"{len(files)} ledger file(s), {bad} with problems{more}")
    return 1 if bad or beyond else 0


def no_ledger_line(roots: list[Path]) -> str:
    """No ledger file under the roots, and the folder beside that holds some, if one does."""
    where = printable(", ".join(map(str, roots)))
    hint = root_hint(roots)
    if hint:
        return f"no ledger files under {where}{printable(hint)}"
    return f"no ledger files under {where}: is the plugin on (VLLM_LEDGER_DIR)?"
