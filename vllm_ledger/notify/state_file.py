"""The notifier's state file itself: where it lies beside the config, what makes it unusable
at start (``StateFileError``), and how a SQLite fault is named (``StoreUnavailable``, with a
``reason``)."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from typing import Literal

from vllm_ledger.errors import LedgerError

Fault = Literal["locked", "read_only", "disk_full", "damaged", "io"]


class StoreUnavailable(LedgerError):
    """The state file refused a transaction (``.reason``: locked, read_only, disk_full,
    damaged, io); nothing of it was written."""

    def __init__(self, reason: Fault, detail: str) -> None:
        super().__init__(f"the notifier's state file is {reason.replace('_', ' ')}: {detail}")
        self.reason: Fault = reason


class StateFileError(LedgerError):
    """The state file cannot be used at start (``.path``): damaged, read-only, not a file."""

    def __init__(self, path: Path, what: str) -> None:
        super().__init__(
            f"the notifier's state file {path} {what}",
            hint=f"move it aside (mv {path} {path}.bad) and start again: the notifier starts "
            "fresh, losing the command cursor and the message ids seen in the last day "
            '(docs/notifier.md, "A damaged state file")',
        )
        self.path = path


def fault_of(exc: sqlite3.Error) -> Fault:
    """What kind of fault a SQLite error is."""
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return "locked"
    if "readonly" in text or "read-only" in text:
        return "read_only"
    if "full" in text:
        return "disk_full"
    if "malformed" in text or "not a database" in text or "corrupt" in text:
        return "damaged"
    return "io"


def state_path(config: Path) -> Path:
    """The state file beside the config: ``private.json`` -> ``private.notifier.sqlite``."""
    return config.with_name(config.stem + ".notifier.sqlite")


def check_state_file(path: Path) -> None:
    """Refuse, before SQLite opens it, a state file that is a FIFO, socket, device or folder,
    or one without write permission (even for root: a file made read-only on purpose)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StateFileError(path, f"cannot be read ({exc.strerror})") from exc
    if not stat.S_ISREG(st.st_mode):
        raise StateFileError(path, "is not a regular file")
    if st.st_mode & 0o222 == 0 or not os.access(path, os.R_OK | os.W_OK):
        raise StateFileError(path, "is read-only")


__all__ = [
    "Fault",
    "StateFileError",
    "StoreUnavailable",
    "check_state_file",
    "fault_of",
    "state_path",
]
