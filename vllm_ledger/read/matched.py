"""Whether a view's period matched anything: ``ledgerset.nothing_matched``, and a period that
starts after the cutoff; and where a root with no ledger is one folder off (``root_hint``)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from vllm_ledger.format.paths import parse_ledger_name
from vllm_ledger.read.discovery import discover_runs
from vllm_ledger.read.ledgerset import (
    LedgerSet,
    NothingMatched,
    nothing_matched,
)


def period_matched(
    ls: LedgerSet,
    cutoff_ts: int,
    *,
    instance: int | str | None = None,
    model: str | None = None,
    since_ts: float | None = None,
    until_ts: float | None = None,
    at_ts: float | None = None,
) -> NothingMatched | None:
    """``ledgerset.nothing_matched``, and one case more: a period that starts at or after the
    cutoff (``periods.is_future``: ``--since 2027-01-01``) holds nothing any run can have
    recorded yet, a live one included, so it is ``no_run_in_period`` too (exit 3 and a first
    line saying so, never an empty period and exit 0)."""
    return nothing_matched(
        ls,
        instance=instance,
        model=model,
        since_ts=since_ts,
        until_ts=until_ts,
        at_ts=at_ts,
        cutoff_ts=cutoff_ts,
    )


# A root's sub-folders looked into for ledgers, at most: a hint, not a search.
MAX_FOLDERS_LOOKED = 64
MAX_SUGGESTIONS = 3


def _holds_ledger_files(folder: Path) -> bool:
    """``folder`` itself holds ledger files: it is a run folder, not a root."""
    try:
        with os.scandir(folder) as entries:
            return any(parse_ledger_name(e.name) is not None for e in entries)
    except OSError:
        return False


def _sub_roots(root: Path) -> list[Path]:
    """Sub-folders of ``root`` (by name, the first ``MAX_FOLDERS_LOOKED``) that are roots:
    their run folders hold ledger files."""
    try:
        with os.scandir(root) as entries:
            folders = sorted(e.path for e in entries if e.is_dir(follow_symlinks=False))
    except OSError:
        return []
    found: list[Path] = []
    for folder in folders[:MAX_FOLDERS_LOOKED]:
        if discover_runs([Path(folder)]):
            found.append(Path(folder))
            if len(found) == MAX_SUGGESTIONS:
                break
    return found


def nearby_roots(roots: Iterable[Path]) -> list[Path]:
    """Where the ledgers are when a root holds none: the root's parent when the root is a run
    folder (one level too low), its sub-folders that are roots (one level too high)."""
    out: list[Path] = []
    for root in map(Path, roots):
        if _holds_ledger_files(root):
            out.append(root.resolve().parent)
        else:
            out.extend(_sub_roots(root))
    return out


def root_hint(roots: Iterable[Path]) -> str:
    """``"; did you mean ROOT/x?"`` when a root with no ledger is one folder off (``""``
    otherwise), to follow a "no ledger file under ROOT" line."""
    near = nearby_roots(roots)
    if not near:
        return ""
    return f"; did you mean {' or '.join(f'--root {p}' for p in near)}?"


__all__ = ["nearby_roots", "period_matched", "root_hint"]
