"""The notifier's state file: its place beside the config, the files refused before SQLite
opens them, and the name of each SQLite fault."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from vllm_ledger.notify.state_file import (
    StateFileError,
    StoreUnavailable,
    check_state_file,
    fault_of,
    state_path,
)


def test_the_state_file_lies_beside_the_config() -> None:
    assert state_path(Path("/etc/x/private.json")) == Path("/etc/x/private.notifier.sqlite")


def test_a_missing_file_passes_and_a_fifo_or_read_only_file_is_refused(tmp_path: Path) -> None:
    check_state_file(tmp_path / "absent.sqlite")
    fifo = tmp_path / "fifo.sqlite"
    os.mkfifo(fifo)
    with pytest.raises(StateFileError, match="is not a regular file"):
        check_state_file(fifo)
    ro = tmp_path / "ro.sqlite"
    ro.write_bytes(b"")
    ro.chmod(0o444)
    with pytest.raises(StateFileError, match="is read-only") as caught:
        check_state_file(ro)
    assert caught.value.path == ro


@pytest.mark.parametrize(
    ("text", "fault"),
    [
        ("database is locked", "locked"),
        ("attempt to write a readonly database", "read_only"),
        ("database or disk is full", "disk_full"),
        ("database disk image is malformed", "damaged"),
        ("file is not a database", "damaged"),
        ("disk I/O error", "io"),
    ],
)
def test_each_sqlite_fault_is_named(text: str, fault: str) -> None:
    assert fault_of(sqlite3.OperationalError(text)) == fault
    err = StoreUnavailable(fault_of(sqlite3.OperationalError(text)), text)
    assert err.reason == fault and str(err).startswith("the notifier's state file is ")
