"""Find every ledger file under the roots, each real file once. No file is opened here.

``ROOT/<run dir>/w<rank>.g<generation>.ledger.sqlite`` (``format/paths.py``): the root is
listed, then each run directory once. The same file reached twice (a symlinked directory, a
second root) has the same device and inode; one ``stat`` per file is much cheaper than
resolving every path, and the stat is kept for the reader (type and size checks, the summary's
size and mtime) so it is taken once, as is whether a ``-wal`` stands beside the file (from the
directory's listing, without a look of its own). A root of years of restarts holds thousands
of files, so a found file is a plain tuple; its ``Path`` is made only when asked for.

What cannot be looked at is named (``Unseen``), never skipped: a directory that cannot be
listed, a file that cannot be stat'ed, and a sequence marker whose ledger is gone (the commits
it counts are somewhere the reader cannot see).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from vllm_ledger.format.paths import (
    LEDGER_SUFFIX,
    MISSING_LEDGER,
    ledger_of_marker,
    parse_ledger_name,
)

WAL_SUFFIX = "-wal"


class Found(NamedTuple):
    root: Path
    run_name: str  # the run directory's name
    file_name: str
    name: str  # the full path as a string
    stat: os.stat_result
    wal: bool  # a -wal stood beside it when its directory was listed

    @property
    def path(self) -> Path:
        return Path(self.name)

    @property
    def rel(self) -> str:
        """``<run dir>/<file name>``."""
        return f"{self.run_name}/{self.file_name}"


@dataclass(frozen=True)
class Unseen:
    """A directory or file under a root that could not be looked at: it may hide ledgers."""

    path: Path
    error: OSError


def discover(roots: Iterable[Path], unseen: list[Unseen] | None = None) -> list[Found]:
    """Every ledger file under the roots, each real file once, with its stat; what could not
    be listed or stat'ed is appended to ``unseen``. Files come run directory by run directory
    (by name), each directory's by name."""
    return [f for run in discover_runs(roots, unseen) for f in run]


def discover_runs(roots: Iterable[Path], unseen: list[Unseen] | None = None) -> list[list[Found]]:
    """``discover``'s files, one list per run directory."""
    seen: set[tuple[int, int]] = set()
    out: list[list[Found]] = []
    stat = os.stat
    found = tuple.__new__  # a Found without a Python-level call: thousands are made
    # Every run directory holds the same few names: each is judged once (its -wal's name too).
    ledger_names: dict[str, str | None] = {}
    for root in roots:
        root = Path(root)
        blind: list[Unseen] = []
        try:
            runs = sorted(os.scandir(root), key=lambda e: e.name)
        except OSError as exc:
            blind.append(Unseen(root, exc))
            runs = []
        for entry in runs:
            try:
                if not entry.is_dir():
                    continue
                names = sorted(os.listdir(entry.path))
            except OSError as exc:
                blind.append(Unseen(Path(entry.path), exc))
                continue
            listed = set(names)
            run_name = entry.name
            base = f"{entry.path}/"
            files: list[Found] = []
            for name in names:
                if name.endswith(LEDGER_SUFFIX):
                    if name in ledger_names:
                        wal_name = ledger_names[name]
                    else:
                        ok = parse_ledger_name(name) is not None
                        wal_name = ledger_names[name] = name + WAL_SUFFIX if ok else None
                    if wal_name is None:
                        continue
                    full = base + name
                    try:
                        st = stat(full)
                    except OSError as exc:
                        blind.append(Unseen(Path(full), exc))
                        continue
                    key = (st.st_dev, st.st_ino)
                    if key not in seen:
                        seen.add(key)
                        wal = wal_name in listed
                        files.append(found(Found, (root, run_name, name, full, st, wal)))
                elif (gone_name := ledger_of_marker(name, listed)) is not None:
                    # A sequence marker whose ledger is gone (deleted, moved): the commits it
                    # counts are somewhere the reader cannot see. Named, never skipped.
                    gone = base + gone_name
                    blind.append(
                        Unseen(Path(gone), FileNotFoundError(errno.ENOENT, MISSING_LEDGER, gone))
                    )
            if files:
                out.append(files)
        if unseen is not None:
            unseen.extend(blind)
    return out


def discover_paths(roots: Iterable[Path]) -> list[Path]:
    return [f.path for f in discover(roots)]
