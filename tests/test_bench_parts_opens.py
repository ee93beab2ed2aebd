"""The bench's opens part (bench/parts/opens.py): the paths of open calls in an ``strace -f`` log,
each call once even where another thread's call splits it, and files left named by kind."""

from __future__ import annotations

from bench.parts.opens import _kinds, count_opens

TRACE = """\
101 openat(AT_FDCWD, "/r/a.ledger.sqlite", O_RDONLY|O_CLOEXEC) = 3
102 openat(AT_FDCWD, "/r/b.ledger.sqlite", O_RDONLY <unfinished ...>
101 openat(AT_FDCWD, "/r/a.ledger.sqlite.seq", O_RDONLY) = 4
102 <... openat resumed>) = 5
101 openat(3, "/r/a.ledger.sqlite", O_RDONLY) = 6
"""


def test_each_open_call_counts_once() -> None:
    assert count_opens(TRACE) == {
        "/r/a.ledger.sqlite": 2,
        "/r/b.ledger.sqlite": 1,
        "/r/a.ledger.sqlite.seq": 1,
    }


def test_files_left_in_the_root_are_named_by_kind() -> None:
    left = ["run/a.ledger.sqlite-wal", "run/b.ledger.sqlite-wal", "run/a.ledger.sqlite-shm"]
    assert _kinds(left) == "1 x -shm, 2 x -wal"
    assert _kinds([]) == "nothing"
