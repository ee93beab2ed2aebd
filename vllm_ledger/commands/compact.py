"""vllm-ledger compact: compact finished ledgers and refresh the summary of finished files."""

from __future__ import annotations

import argparse

from vllm_ledger import maintenance
from vllm_ledger.commands._ledger_flags import add_roots, roots_of
from vllm_ledger.progress import when_slow

NAME = "compact"
HELP = "drop per-second rows older than 8 days from finished ledgers; refresh the summary"
EPILOG = """Lossless for every report: hourly rows, coverage spans and fault seconds are kept.
The writer of API rank 0 runs the same pass a minute after start and every 6 hours. A pass
that runs past 2 s says so on stderr (and again every 10 s), never on stdout.

example:
  vllm-ledger compact --root /srv/artifacts/usage
exit status: 0 done (or another pass was running: nothing done), 2 a bad flag, 1
the system refused a write (a full disk, a denied folder)
"""


def configure(p: argparse.ArgumentParser) -> None:
    add_roots(p)


def run(args: argparse.Namespace) -> int:
    for root in roots_of(args):
        with when_slow(NAME, f"{root}: compacting finished ledgers, refreshing the summary"):
            result = maintenance.run(root)
        if result.skipped_locked:
            print(f"{root}: another maintenance pass is running; nothing done")
            continue
        compacted = [c for c in result.compacted if c.status == "compacted"]
        skipped = [c for c in result.compacted if c.status == "skipped"]
        rows = sum(c.rows_deleted for c in compacted)
        print(
            f"{root}: compacted {len(compacted)} file(s) ({rows:,} per-second rows dropped), "
            f"summary holds {result.summary_entries} finished file(s)"
        )
        for c in skipped:
            print(f"  skipped {c.path}: {c.detail}")
    return 0
