"""Whether hard budgets hold now: the enforcer's over-budget file, fresh or not, as the
exporter and ``doctor`` say it (docs/budgets.md#fail-open).

The middleware refuses only while the enforcer's file (``format/overbudget.py``) is fresh:
written less than its own ``fresh_s`` ago (30 s: six missed rounds at the 5 s cadence). A file
that is missing, cannot be used, or is older than that refuses nothing: enforcement *fails
open*. ``look_at`` reads the file the way the middleware does (a regular file of at most
``MAX_FILE_BYTES``, parsed by ``overbudget.parse``); ``judge_file`` is the pure verdict.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from vllm_ledger.format import overbudget

FileState = Literal["fresh", "stale", "missing", "unusable"]
FILE_STATES: tuple[FileState, ...] = ("fresh", "stale", "missing", "unusable")


@dataclass(frozen=True)
class EnforcerLook:
    """The over-budget file of one root at ``at_ts``. ``age_s`` is ``at_ts - written_ts``
    (None where the file gave no time); ``problem`` says why nothing is refused (None: fresh)."""

    root: Path
    state: FileState
    at_ts: float
    written_ts: float | None = None
    fresh_s: float | None = None
    over: int = 0  # labels the file refuses (while fresh)
    problem: str | None = None

    @property
    def age_s(self) -> float | None:
        return None if self.written_ts is None else self.at_ts - self.written_ts

    @property
    def enforcing(self) -> bool:
        return self.state == "fresh"


def judge_file(
    root: Path, data: bytes | None, at_ts: float, why: str | None = None
) -> EnforcerLook:
    """The verdict on the file's bytes (None: there is no file, or ``why`` it could not be
    read). Pure."""
    name = overbudget.OVER_BUDGET_FILE
    if data is None:
        if why is not None:
            return EnforcerLook(root, "unusable", at_ts, problem=f"{name} cannot be read: {why}")
        return EnforcerLook(
            root, "missing", at_ts, problem=f"no {name}: the enforcer has not published one"
        )
    try:
        written_ts, fresh_s, over = overbudget.parse(data)
    except (ValueError, RecursionError) as exc:
        shown = str(exc)[:100] if isinstance(exc, ValueError) else "nested too deep"
        return EnforcerLook(root, "unusable", at_ts, problem=f"{name} cannot be used: {shown}")
    age = at_ts - written_ts
    if age > fresh_s:
        return EnforcerLook(
            root,
            "stale",
            at_ts,
            written_ts,
            fresh_s,
            len(over),
            f"{name} was written {age:.0f} s ago (stale after {fresh_s:g} s): the enforcer stopped",
        )
    return EnforcerLook(root, "fresh", at_ts, written_ts, fresh_s, len(over))


def read_file(path: Path) -> tuple[bytes | None, str | None]:
    """``(bytes, None)``, ``(None, None)`` where there is no file, or ``(None, why)``: only a
    regular file of at most ``overbudget.MAX_FILE_BYTES`` is read (never a FIFO)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, exc.strerror or type(exc).__name__
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > overbudget.MAX_FILE_BYTES:
            return None, "not a regular file of at most 1 MiB"
        try:
            return f.read(overbudget.MAX_FILE_BYTES + 1), None
        except OSError as exc:
            return None, exc.strerror or type(exc).__name__


def look_at(root: Path, at_ts: float) -> EnforcerLook:
    """The over-budget file of ``root`` at ``at_ts``."""
    data, why = read_file(overbudget.path_in(root))
    return judge_file(root, data, at_ts, why)


__all__ = ["FILE_STATES", "EnforcerLook", "FileState", "judge_file", "look_at", "read_file"]
