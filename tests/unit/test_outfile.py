"""Output files written whole, only as regular files (outfile.py)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from vllm_ledger.errors import BadArgument
from vllm_ledger.outfile import write_file, writing


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
