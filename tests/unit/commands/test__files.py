"""Files and folders a command reads or writes (commands/_files.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from vllm_ledger.commands._files import (
    input_file,
    output_dir,
    output_file,
    output_folder,
    wrote_line,
)
from vllm_ledger.errors import BadArgument


def test_an_input_file_is_a_small_readable_regular_file(tmp_path: Path) -> None:
    parse = input_file("--config", "hosts.toml", max_bytes=8)
    (tmp_path / "ok").write_text("1234")
    (tmp_path / "big").write_text("123456789")
    assert parse(str(tmp_path / "ok")) == tmp_path / "ok"
    with pytest.raises(BadArgument, match=r"not found: pass --config hosts.toml"):
        parse(str(tmp_path / "nope"))
    with pytest.raises(BadArgument, match="is larger than 0 KiB"):
        parse(str(tmp_path / "big"))
    with pytest.raises(BadArgument, match="not a regular file"):
        parse(str(tmp_path))


def test_output_files_and_folders(tmp_path: Path) -> None:
    assert output_file("--out", "x.csv", stdout=True)("-") == "-"
    assert output_file("--out", "x.csv")(str(tmp_path / "x.csv")) == str(tmp_path / "x.csv")
    (tmp_path / "f").write_text("")
    parse = output_dir("--output", "out", ("a.yml",))
    assert parse(str(tmp_path / "new")) == tmp_path / "new"
    with pytest.raises(BadArgument, match="is a file, not a folder"):
        parse(str(tmp_path / "f"))


def test_one_folder_given_either_way() -> None:
    assert output_folder(argparse.Namespace(output="d", folder=None)) == Path("d")
    assert output_folder(argparse.Namespace(output="d", folder="d")) == Path("d")
    with pytest.raises(BadArgument, match="no folder given"):
        output_folder(argparse.Namespace(output=None, folder=None))
    with pytest.raises(BadArgument, match="two folders given"):
        output_folder(argparse.Namespace(output="a", folder="b"))


def test_the_wrote_line_is_absolute(tmp_path: Path) -> None:
    assert wrote_line(tmp_path / "x", " (systemd mode)") == f"wrote {tmp_path / 'x'} (systemd mode)"
