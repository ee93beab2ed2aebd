"""Find every ledger file under the roots, each real file once. No file is opened here.

The same file reached twice (a symlinked directory, a second root) has the same device and
inode; one ``stat`` per file is much cheaper than resolving every path, and the stat is kept
for the reader (type and size checks, the summary's size and mtime) so it is taken once.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from vllm_ledger.write import paths


@dataclass(frozen=True)
class Found:
    root: Path
    path: Path
    stat: os.stat_result
    rel: str  # "<run dir>/<file name>": the summary's key
    name: str  # the full path as a string (building it from ``path`` again is not free)


@dataclass(frozen=True)
class Unseen:
    """A directory or file under a root that could not be looked at: it may hide ledgers."""

    path: Path
    error: OSError


def discover(roots: Iterable[Path], unseen: list[Unseen] | None = None) -> list[Found]:
    """Every ledger file under the roots, each real file once, with its stat; what could not
    be listed or stat'ed is appended to ``unseen``."""
    seen: set[tuple[int, int]] = set()
    out: list[Found] = []
    for root in roots:
        root = Path(root)
        blind: list[tuple[Path, OSError]] = []
        for run_name, file_name, full in paths.iter_ledger_entries(root, blind):
            try:
                st = os.stat(full)
            except OSError as exc:
                blind.append((Path(full), exc))
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen:
                continue
            seen.add(key)
            out.append(Found(root, Path(full), st, f"{run_name}/{file_name}", full))
        if unseen is not None:
            unseen.extend(Unseen(p, e) for p, e in blind)
    return out


def discover_paths(roots: Iterable[Path]) -> list[Path]:
    return [f.path for f in discover(roots)]
