"""``format/smallfiles.py``: a small regular file read bounded and without ever blocking (a FIFO,
a directory or a file too large is refused from its ``stat``), and the ``.seq`` marker beside
each ledger."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from vllm_ledger.errors import NotARegularFile
from vllm_ledger.format.smallfiles import (
    MARKER_MAX_BYTES,
    open_regular,
    read_regular_file,
    read_sequence_marker,
    write_sequence_marker,
)

NOW = 1_764_400_000.123456


def returns_within(seconds: float, call: object) -> BaseException | object:
    """Run ``call`` on a thread: what it returned or raised, failing the test if it blocks."""
    out: list[BaseException | object] = []

    def run() -> None:
        try:
            out.append(call())  # type: ignore[operator]
        except BaseException as exc:
            out.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "blocked"
    return out[0]


def test_a_regular_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    assert read_regular_file(path, 10) == b"0123456789"
    assert read_regular_file(str(path), 100) == b"0123456789"
    with open_regular(path, 10) as (fd, st):
        assert st.st_size == 10 and os.pread(fd, 4, 2) == b"2345"
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(fd)  # closed on leaving


def test_a_file_larger_than_the_bound_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 11)
    with pytest.raises(OSError) as info:
        read_regular_file(path, 10)
    assert (info.value.errno, info.value.strerror, info.value.filename) == (
        errno.EFBIG,
        "larger than 10 bytes",
        str(path),
    )
    with pytest.raises(OSError) as opened:
        with open_regular(path, 10):
            pass
    assert opened.value.errno == errno.EFBIG


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # an open() of it for reading would wait for a writer
    got = returns_within(5.0, lambda: read_regular_file(fifo, 100))
    assert isinstance(got, NotARegularFile)
    assert (got.errno, got.strerror, got.filename) == (
        errno.EINVAL,
        "not a regular file",
        str(fifo),
    )


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotARegularFile) as info:
        with open_regular(tmp_path, 100):
            pass
    assert info.value.filename == str(tmp_path)
    assert isinstance(info.value, OSError)


def test_a_missing_file_is_a_plain_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / "absent", 100)


def test_the_sequence_marker_round_trips(tmp_path: Path) -> None:
    ledger = tmp_path / "w0.g0.ledger.sqlite"
    assert read_sequence_marker(ledger) is None  # none yet
    write_sequence_marker(ledger, 41, NOW)
    write_sequence_marker(ledger, 42, NOW + 1)
    assert read_sequence_marker(ledger) == (42, NOW + 1)
    assert Path(f"{ledger}.seq").read_text() == f"42 {NOW + 1!r}\n"
    assert sorted(os.listdir(tmp_path)) == ["w0.g0.ledger.sqlite.seq"]  # no temp file left


@pytest.mark.parametrize(
    "content",
    [b"", b"garbage", b"42", b"42 1.5 extra", b"4x2 1.5", b"\xff\xfe 1", b"9" * 300],
)
def test_a_marker_that_cannot_be_read_is_none(tmp_path: Path, content: bytes) -> None:
    ledger = tmp_path / "w0.g0.ledger.sqlite"
    Path(f"{ledger}.seq").write_bytes(content)
    assert read_sequence_marker(ledger) is None
    assert len(b"9" * 300) > MARKER_MAX_BYTES


def test_a_fifo_or_directory_in_place_of_the_marker_is_raised(tmp_path: Path) -> None:
    ledger = tmp_path / "w0.g0.ledger.sqlite"
    os.mkfifo(f"{ledger}.seq")
    got = returns_within(5.0, lambda: read_sequence_marker(ledger))
    assert isinstance(got, NotARegularFile) and got.filename == f"{ledger}.seq"
    other = tmp_path / "w1.g0.ledger.sqlite"
    os.mkdir(f"{other}.seq")
    with pytest.raises(NotARegularFile):
        read_sequence_marker(other)
