"""``infile.py``: a small regular file read bounded and without ever blocking (a FIFO, a
directory or a file too large is refused from its ``stat``)."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from vllm_ledger.errors import NotARegularFile
from vllm_ledger.infile import open_regular, read_regular_file, read_regular_text

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


def test_text_is_decoded_and_bad_bytes_are_a_value_error(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes("zone Asia/Shanghai \u00e9".encode())
    assert read_regular_text(path, 100) == "zone Asia/Shanghai \u00e9"
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(ValueError):
        read_regular_text(path, 100)
