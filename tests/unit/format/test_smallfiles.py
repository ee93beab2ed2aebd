"""``format/smallfiles.py``: small files written whole, the ``.seq`` marker beside each ledger."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import pytest

from tests.unit.test_infile import returns_within
from vllm_ledger.errors import NotARegularFile
from vllm_ledger.format.smallfiles import (
    MARKER_MAX_BYTES,
    MARKER_RECORD_BYTES,
    MarkerWriter,
    marker_record,
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
    body = f"42 {NOW + 1!r}"
    want = f"{body} {zlib.crc32(body.encode()):08x}".ljust(MARKER_RECORD_BYTES - 1) + "\n"
    assert Path(f"{ledger}.seq").read_text() == want
    assert sorted(os.listdir(tmp_path)) == ["w0.g0.ledger.sqlite.seq"]  # no temp file left


def test_an_earlier_writers_marker_of_two_fields_is_read(tmp_path: Path) -> None:
    ledger = tmp_path / "w0.g0.ledger.sqlite"
    Path(f"{ledger}.seq").write_text(f"7 {NOW!r}\n")
    assert read_sequence_marker(ledger) == (7, NOW)


def test_the_writer_keeps_it_open_and_writes_over_it_in_place(tmp_path: Path) -> None:
    ledger = tmp_path / "w0.g0.ledger.sqlite"
    marker = MarkerWriter()
    marker.write(ledger, 9_223_372_036_854_775_807, NOW)  # the widest sequence number
    inode = os.stat(f"{ledger}.seq").st_ino
    for seq in range(1, 200):
        marker.write(ledger, seq, NOW + seq)
        assert read_sequence_marker(ledger) == (seq, NOW + seq)
    assert os.stat(f"{ledger}.seq").st_ino == inode  # the same file: never renamed over
    assert os.path.getsize(f"{ledger}.seq") == MARKER_RECORD_BYTES
    rotated = tmp_path / "w0.g1.ledger.sqlite"
    marker.write(rotated, 1, NOW)  # a new file after a rotation: its own marker
    assert read_sequence_marker(rotated) == (1, NOW)
    assert read_sequence_marker(ledger) == (199, NOW + 199)
    marker.close()


def test_a_record_met_halfway_through_a_write_is_no_marker(tmp_path: Path) -> None:
    """Bytes of the next record over the first half of the last one: the checksum fails."""
    ledger = tmp_path / "w0.g0.ledger.sqlite"
    old, new = marker_record(199, NOW), marker_record(200, NOW + 1)
    for cut in range(1, MARKER_RECORD_BYTES - 1):
        torn = new[:cut] + old[cut:]
        Path(f"{ledger}.seq").write_bytes(torn)
        assert read_sequence_marker(ledger) in (None, (199, NOW), (200, NOW + 1))


def test_a_link_or_fifo_in_place_of_the_marker_is_replaced_never_written_through(
    tmp_path: Path,
) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("precious\n")
    ledger = tmp_path / "w0.g0.ledger.sqlite"
    os.symlink(target, f"{ledger}.seq")
    other = tmp_path / "w1.g0.ledger.sqlite"
    os.mkfifo(f"{other}.seq")
    marker = MarkerWriter()
    marker.write(ledger, 3, NOW)
    assert target.read_text() == "precious\n"  # not written through the link
    assert read_sequence_marker(ledger) == (3, NOW)  # the link itself replaced by a file
    returns_within(5.0, lambda: marker.write(other, 4, NOW))  # a FIFO is never waited on
    assert read_sequence_marker(other) == (4, NOW)
    marker.close()


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


def test_a_link_in_place_of_the_temporary_is_never_written_through(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(b"keep\n")
    (tmp_path / "f.tmp").symlink_to(elsewhere)  # left there, or put there
    write_whole(tmp_path / "f", b"new\n", tmp=tmp_path / "f.tmp")
    assert (tmp_path / "f").read_bytes() == b"new\n" and not (tmp_path / "f").is_symlink()
    assert elsewhere.read_bytes() == b"keep\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "f"]
