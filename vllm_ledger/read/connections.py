"""The read-only connections a ``LedgerSet`` holds open, least recently used first: at most
``max_open``, the oldest closed past that and reopened when asked again."""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from pathlib import Path

from vllm_ledger.read.open_ledger import reopen


class Connections:
    """The open read-only connections, least recently used first."""

    def __init__(self, busy_timeout_s: float, max_open: int) -> None:
        self.busy_timeout_s = busy_timeout_s
        self.max_open = max_open
        self._open: OrderedDict[Path, sqlite3.Connection] = OrderedDict()
        self.opens = 0

    def adopt(self, path: Path, conn: sqlite3.Connection) -> None:
        self.opens += 1
        self._open[path] = conn
        self._trim()

    def get(self, path: Path) -> sqlite3.Connection:
        conn = self._open.get(path)
        if conn is not None:
            self._open.move_to_end(path)
            return conn
        conn = reopen(path, self.busy_timeout_s)
        self.adopt(path, conn)
        return conn

    def _trim(self) -> None:
        while len(self._open) > self.max_open:
            _path, conn = self._open.popitem(last=False)
            conn.close()

    def close(self) -> None:
        while self._open:
            _path, conn = self._open.popitem()
            conn.close()
