"""Output files the CLI writes (outfile.py): only ever regular files, written whole; a
directory, a FIFO or a missing folder refused in one line before anything is opened."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from vllm_ledger.errors import BadArgument
from vllm_ledger.outfile import check_target, kind_of, write_file, writing

FLAG, EXAMPLE = "--output", "run.sh"


def test_kinds_name_what_is_not_a_regular_file() -> None:
    assert kind_of(stat.S_IFDIR) == "a directory"
    assert kind_of(stat.S_IFIFO) == "a FIFO"
    assert kind_of(stat.S_IFCHR) == "a character device"
    assert kind_of(stat.S_IFBLK) == "a block device"
    assert kind_of(stat.S_IFSOCK) == "a socket"
    assert kind_of(stat.S_IFLNK) == "not a regular file"


def test_what_is_refused_before_anything_is_opened(tmp_path: Path) -> None:
    with pytest.raises(BadArgument) as caught:
        check_target(tmp_path, flag=FLAG, example=EXAMPLE)
    assert str(caught.value) == (
        f"--output {tmp_path} is a directory, not a regular file: give a file name, e.g. run.sh"
    )
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(BadArgument, match=r"is a FIFO, not a regular file"):
        write_file(fifo, b"x", flag=FLAG, example=EXAMPLE)
    with pytest.raises(BadArgument) as caught:
        check_target(tmp_path / "missing" / "run.sh", flag=FLAG, example=EXAMPLE)
    assert str(caught.value) == (
        f"--output {tmp_path / 'missing' / 'run.sh'}: folder {tmp_path / 'missing'} does not "
        "exist; create it first"
    )
    with pytest.raises(BadArgument) as caught:
        check_target("", flag=FLAG, example=EXAMPLE)
    assert str(caught.value) == "--output '' is not a file name: give one, e.g. run.sh"


def test_a_file_is_written_whole_through_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "real.sh"
    link = tmp_path / "link.sh"
    link.symlink_to(target)
    assert write_file(link, b"echo hi\n", flag=FLAG, example=EXAMPLE, mode=0o755) == target
    assert target.read_bytes() == b"echo hi\n" and link.is_symlink()
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.sh", "real.sh"]  # no temp left


def test_a_stream_appears_only_when_it_ends_without_an_error(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    with pytest.raises(RuntimeError), writing(path, flag=FLAG, example=EXAMPLE) as f:
        f.write("<html>")
        raise RuntimeError("cut")
    assert list(tmp_path.iterdir()) == []
    with writing(path, flag=FLAG, example=EXAMPLE) as f:
        f.write("<html></html>\n")
    assert path.read_text() == "<html></html>\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_bytes_and_text_land_whole_with_their_mode(tmp_path: Path) -> None:
    out = write_file(tmp_path / "a.sh", b"#!/bin/sh\n", flag="--output", example="a.sh", mode=0o755)
    assert out.read_bytes() == b"#!/bin/sh\n"
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    with writing(tmp_path / "b.csv", flag="--csv", example="b.csv") as f:
        f.write("a,b\r\n1,2\n")
    assert (tmp_path / "b.csv").read_bytes() == b"a,b\r\n1,2\n"
    assert stat.S_IMODE((tmp_path / "b.csv").stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.sh", "b.csv"]


def test_a_failed_stream_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    (tmp_path / "b.csv").write_text("old\n")
    with pytest.raises(RuntimeError), writing(tmp_path / "b.csv", flag="--csv", example="b") as f:
        f.write("half")
        raise RuntimeError("stop")
    assert (tmp_path / "b.csv").read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["b.csv"]


def test_a_fifo_is_refused_before_anything_is_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "f")
    with pytest.raises(BadArgument, match=r"--output .* is a FIFO, not a regular file"):
        write_file(tmp_path / "f", b"x", flag="--output", example="out.html")
