"""The open read-only connections of a set: at most ``max_open``, least recently used first."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.ledgers import ev, write_ledger
from vllm_ledger.read.connections import Connections
from vllm_ledger.read.discovery import discover_paths

T0 = 1_796_000_000.0


def _ledgers(root: Path, n: int) -> list[Path]:
    for i in range(n):
        write_ledger(root, f"run-{i}", start_ts=T0, end_ts=T0 + 60, events=[ev(T0 + 5)])
    return sorted(discover_paths([root]))


def test_past_max_open_the_least_recently_used_is_closed_and_reopened(tmp_path: Path) -> None:
    a, b, c = _ledgers(tmp_path, 3)
    conns = Connections(busy_timeout_s=1.0, max_open=2)
    first = sqlite3.connect(a)
    conns.adopt(a, first)
    conns.adopt(b, sqlite3.connect(b))
    assert conns.get(a) is first  # a is now the most recently used
    conns.adopt(c, sqlite3.connect(c))  # b goes
    assert conns.get(a) is first
    assert conns.opens == 3
    again = conns.get(b)  # reopened, read-only
    assert conns.opens == 4
    assert again.execute("SELECT 1").fetchone() == (1,)
    conns.close()


def test_close_closes_every_connection(tmp_path: Path) -> None:
    (a,) = _ledgers(tmp_path, 1)
    conns = Connections(busy_timeout_s=1.0, max_open=4)
    conn = sqlite3.connect(a)
    conns.adopt(a, conn)
    conns.close()
    try:
        conn.execute("SELECT 1")
    except sqlite3.ProgrammingError:
        pass
    else:
        raise AssertionError("the connection is still open")
