"""``format/smallfiles.py``: small files written whole, the ``.seq`` marker beside each ledger."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.unit.test_infile import returns_within
from vllm_ledger.errors import NotARegularFile
from vllm_ledger.format.smallfiles import (
    MARKER_MAX_BYTES,
    read_sequence_marker,
    write_sequence_marker,
    write_whole,
)

NOW = 1_764_400_000.123456


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


def test_a_small_file_is_written_whole_and_its_temporary_never_stays(tmp_path: Path) -> None:
    write_whole(tmp_path / "f", b"one\n", tmp=tmp_path / "f.tmp")
    write_whole(tmp_path / "f", b"two\n", tmp=tmp_path / "f.tmp")
    assert (tmp_path / "f").read_bytes() == b"two\n"
    (tmp_path / "d").mkdir()  # a rename over a folder fails: the temporary goes
    with pytest.raises(OSError):
        write_whole(tmp_path / "d", b"x", tmp=tmp_path / "d.tmp")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "f"]
