"""Where ledger files live under a root and how their names read (read/discovery.py walks them).

``ROOT/<run_id>/w<rank>.g<generation>.ledger.sqlite``: one directory per run, one file per
writer and generation (a new generation starts when a file is found damaged).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

LEDGER_SUFFIX = ".ledger.sqlite"
SEQ_SUFFIX = ".seq"  # the sequence marker beside each ledger (``smallfiles.write_sequence_marker``)
MISSING_LEDGER = "ledger file missing; its sequence marker remains"
_NAME = re.compile(r"w([0-9]{1,4})\.g([0-9]{1,6})" + re.escape(LEDGER_SUFFIX))


def run_dir(root: Path, run_id: str) -> Path:
    return root / run_id


def ledger_name(writer_rank: int, generation: int) -> str:
    return f"w{writer_rank}.g{generation}{LEDGER_SUFFIX}"


def parse_ledger_name(name: str) -> tuple[int, int] | None:
    """(writer rank, generation) from a ledger file name, or None for any other file."""
    m = _NAME.fullmatch(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def claim_new_ledger(directory: Path, writer_rank: int) -> tuple[int, Path]:
    """Create the next unused generation's file with O_EXCL, so no two writers share one."""
    generation = 0
    while True:
        path = directory / ledger_name(writer_rank, generation)
        try:
            fd = os.open(str(path), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            generation += 1
            continue
        os.close(fd)
        return generation, path


def ledger_of_marker(name: str, listed: set[str] | frozenset[str]) -> str | None:
    """The ledger file name a sequence marker ``name`` stands beside when that ledger is not in
    ``listed`` (deleted, moved: the commits it counts are somewhere a reader cannot see), else
    None (not a marker, or its ledger is there)."""
    if not name.endswith(SEQ_SUFFIX):
        return None
    ledger = name[: -len(SEQ_SUFFIX)]
    if ledger in listed or parse_ledger_name(ledger) is None:
        return None
    return ledger
