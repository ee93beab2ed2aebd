"""Whether a view's period matched anything (``nothing_matched``: and if not, why, and what the
roots do hold), a period that starts after the cutoff among it; and where a root with no
ledger is one folder off (``root_hint``)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from vllm_ledger.format.identity import model_label
from vllm_ledger.format.paths import parse_ledger_name
from vllm_ledger.read.discovery import discover_runs
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.periods import is_future
from vllm_ledger.read.snapshot import LedgerSnapshot

MatchReason = Literal["no_ledger", "never_committed", "no_match", "no_run_in_period"]
MAX_KNOWN_NAMES = 20  # names listed of each kind; the rest are counted


@dataclass(frozen=True)
class NothingMatched:
    """Why a view over the roots holds nothing at all, and what the roots do hold.

    ``reason``: ``no_ledger`` (no ledger file, nothing unreadable: the plugin is off or the
    root is wrong), ``never_committed`` (ledger files, each created by a writer that never
    committed to it: a full disk, no permission, a crash before the first commit), ``no_match``
    (ledgers, none of the instance or model asked for) or ``no_run_in_period`` (none of the
    matching runs recorded in the period asked for).
    ``models`` and ``instances``: every model and instance the readable ledgers name (at most
    ``MAX_KNOWN_NAMES`` of each, ``more_models``/``more_instances`` counting the rest);
    ``unreadable``: files or folders that could not be read (they may hold what was asked);
    ``never_committed``: of those, files their writer created and never committed to, and
    ``never_since_ts`` the earliest of their creations (None: unknown); ``starting``: files
    created moments ago with no commit yet (not counted elsewhere: a writer starting)."""

    reason: MatchReason
    roots: tuple[str, ...]
    instance: int | str | None
    model: str | None
    since_ts: float | None
    until_ts: float | None
    models: tuple[str, ...]
    instances: tuple[str, ...]
    more_models: int = 0
    more_instances: int = 0
    unreadable: int = 0
    never_committed: int = 0
    never_since_ts: float | None = None
    starting: int = 0


def nothing_matched(
    ls: LedgerSet,
    *,
    instance: int | str | None = None,
    model: str | None = None,
    since_ts: float | None = None,
    until_ts: float | None = None,
    at_ts: float | None = None,
    cutoff_ts: int | None = None,
) -> NothingMatched | None:
    """None when the roots hold a readable ledger of ``instance`` and ``model`` (each None:
    any) with a run that recorded in ``[since_ts, until_ts)`` (None: no bound); else why not.
    With ``cutoff_ts``, a period that starts at or after it (``periods.is_future``) holds
    nothing any run can have recorded yet, a live one and unreadable files included.

    The one decision every view's command makes before it prints figures that would all be
    zero for no reason the figures show (``report``, ``timeline``, ``export``, ``cost``,
    ``status``). A run counts from its first proof to its last (a live or stale one: on to
    the end of time); a file that could not be read never makes it "nothing"."""
    every = ls.sources()
    readable = [s for s in every if s.ok]
    unreadable = len(every) - len(readable)
    never = [s for s in every if isinstance(s, LedgerSnapshot) and s.status == "never_committed"]
    births = [s.created_ts for s in never if s.created_ts is not None]
    models = sorted({model_label(s.instance.served_model_names) for s in readable})
    instances = sorted({s.instance.key for s in readable})

    def made(reason: MatchReason) -> NothingMatched:
        return NothingMatched(
            reason=reason,
            roots=tuple(str(r) for r in ls.roots),
            instance=instance,
            model=model,
            since_ts=since_ts,
            until_ts=until_ts,
            models=tuple(models[:MAX_KNOWN_NAMES]),
            instances=tuple(instances[:MAX_KNOWN_NAMES]),
            more_models=max(0, len(models) - MAX_KNOWN_NAMES),
            more_instances=max(0, len(instances) - MAX_KNOWN_NAMES),
            unreadable=unreadable,
            never_committed=len(never),
            never_since_ts=min(births, default=None),
            starting=ls.starting,
        )

    if ls.no_ledger:
        return made("no_ledger")
    if never and len(never) == unreadable:
        # Files, and not one commit in any: whatever the writers saw is unknown.
        return made("never_committed")
    chosen = ls.sources(instance, model)
    if (instance is not None or model is not None) and not any(s.ok for s in chosen):
        return made("no_match")
    if since_ts is None and until_ts is None:
        return None
    if cutoff_ts is not None and since_ts is not None and is_future(since_ts, cutoff_ts):
        return made("no_run_in_period")
    if unreadable:  # it may hold the period
        return None
    lo = -math.inf if since_ts is None else since_ts
    hi = math.inf if until_ts is None else until_ts
    model_ = ls.coverage(chosen, ls.now_ts if at_ts is None else at_ts)
    return None if model_.recorded_in(lo, hi) else made("no_run_in_period")


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
    """``nothing_matched``, and one case more: a period that starts at or after the
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


__all__ = [
    "MAX_KNOWN_NAMES",
    "MatchReason",
    "NothingMatched",
    "nearby_roots",
    "nothing_matched",
    "period_matched",
    "root_hint",
]
