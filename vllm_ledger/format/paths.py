"""Where ledger files live under a root, and how readers find them.

``ROOT/<run_id>/w<rank>.g<generation>.ledger.sqlite``: one directory per run, one file per
writer and generation (a new generation starts when a file is found damaged).
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterator
from pathlib import Path

LEDGER_SUFFIX = ".ledger.sqlite"
SEQ_SUFFIX = ".seq"  # the sequence marker beside each ledger (``smallfiles.write_sequence_marker``)
MISSING_LEDGER = "ledger file missing; its sequence marker remains"
_NAME = re.compile(r"^w(\d{1,4})\.g(\d{1,6})" + re.escape(LEDGER_SUFFIX) + r"$")


def run_dir(root: Path, run_id: str) -> Path:
    return root / run_id


def ledger_name(writer_rank: int, generation: int) -> str:
    return f"w{writer_rank}.g{generation}{LEDGER_SUFFIX}"


def parse_ledger_name(name: str) -> tuple[int, int] | None:
    """(writer rank, generation) from a ledger file name, or None for any other file."""
    m = _NAME.match(name)
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


def iter_ledger_files(root: Path) -> Iterator[Path]:
    """Every ledger file under ``root`` (two levels: run directory, file), symlinks followed."""
    for _run, _name, full in iter_ledger_entries(root):
        yield Path(full)


def iter_ledger_entries(
    root: Path, unseen: list[tuple[Path, OSError]] | None = None
) -> Iterator[tuple[str, str, str]]:
    """``(run directory name, file name, full path)`` of every ledger file under ``root``.

    A directory that cannot be listed (the root or a run directory) is appended to ``unseen``
    with its error, so a reader can say what it could not see instead of skipping it.
    """
    try:
        runs = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as exc:
        if unseen is not None:
            unseen.append((root, exc))
        return
    for entry in runs:
        try:
            if not entry.is_dir():
                continue
            files = sorted(os.scandir(entry.path), key=lambda e: e.name)
        except OSError as exc:
            if unseen is not None:
                unseen.append((Path(entry.path), exc))
            continue
        names = {f.name for f in files}
        for f in files:
            if parse_ledger_name(f.name) is not None:
                yield entry.name, f.name, f.path
            elif (
                f.name.endswith(SEQ_SUFFIX)
                and parse_ledger_name(f.name[: -len(SEQ_SUFFIX)]) is not None
                and f.name[: -len(SEQ_SUFFIX)] not in names
                and unseen is not None
            ):
                # A sequence marker whose ledger is gone (deleted, moved): the commits it
                # counts are somewhere the reader cannot see. Named, never skipped.
                gone = f.path[: -len(SEQ_SUFFIX)]
                unseen.append((Path(gone), FileNotFoundError(errno.ENOENT, MISSING_LEDGER, gone)))
