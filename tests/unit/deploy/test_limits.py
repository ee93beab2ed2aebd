"""deploy/limits.py: path and unit sizes, counted as the kernel and systemd count them.
(tests/test_render_limits.py holds each figure against the real ``systemd-analyze verify``.)"""

from __future__ import annotations

import pytest

from vllm_ledger.deploy.limits import (
    ARG_MAX_BYTES,
    NAME_MAX_BYTES,
    PATH_MAX_BYTES,
    UNIT_LINE_MAX_BYTES,
    arg_problem,
    check_unit_lines,
    check_unit_name,
    logical_lines,
    long_unit_line,
    path_problem,
)
from vllm_ledger.errors import ConfigError


def long_path(size: int) -> str:
    """An absolute path of ``size`` bytes in parts of NAME_MAX bytes."""
    out = ""
    while len(out) < size:
        out += "/" + "p" * min(NAME_MAX_BYTES, size - len(out) - 1)
    return out


def test_figures() -> None:
    assert (PATH_MAX_BYTES, NAME_MAX_BYTES, UNIT_LINE_MAX_BYTES) == (4095, 255, 1_048_575)


def test_path_problem_counts_bytes_and_parts() -> None:
    assert len(long_path(PATH_MAX_BYTES)) == PATH_MAX_BYTES
    assert path_problem(long_path(PATH_MAX_BYTES)) is None
    assert path_problem(long_path(PATH_MAX_BYTES + 1)) == (
        "is 4096 bytes long; at most 4095 (PATH_MAX 4096 with its NUL)"
    )
    assert path_problem("/" + "é" * 2048) == (  # 4097 bytes in 2049 characters
        "is 4097 bytes long; at most 4095 (PATH_MAX 4096 with its NUL)"
    )
    assert path_problem("/srv/" + "a" * 255 + "/x") is None
    assert path_problem("/srv/" + "a" * 256 + "/x") == (
        "has a 256-byte name between slashes; at most 255 (NAME_MAX)"
    )
    assert path_problem("/" + "é" * 128) == (
        "has a 256-byte name between slashes; at most 255 (NAME_MAX)"
    )
    assert path_problem("/srv/a", 5) == (
        "is 6 bytes long; at most 5 (PATH_MAX 4096 with its NUL, leaving room for what goes "
        "below it)"
    )


def test_logical_lines_join_continuations_as_systemd_does() -> None:
    text = "[Service]\nExecStart=/bin/a \\\n  --b c \\\n  d\nUser=x\n"
    assert logical_lines(text) == [
        "[Service]",
        "ExecStart=/bin/a    --b c    d",
        "User=x",
        "",
    ]
    assert logical_lines("A=1 \\") == ["A=1  "]


def test_long_unit_line_finds_the_first_line_over_the_limit() -> None:
    fits = "Environment=A=" + "x" * (UNIT_LINE_MAX_BYTES - 14)
    assert len(fits) == UNIT_LINE_MAX_BYTES
    assert long_unit_line(f"[Service]\n{fits}\n") is None
    assert long_unit_line(f"[Service]\n{fits}x\n") == ("Environment", UNIT_LINE_MAX_BYTES + 1)
    half = "x" * (UNIT_LINE_MAX_BYTES // 2)
    assert long_unit_line(f"ExecStart=/bin/a {half} \\\n  {half}\n") == (
        "ExecStart",
        UNIT_LINE_MAX_BYTES + 20,  # 17, half, ' ', the backslash as a space, '  ', half
    )


def test_check_unit_lines_names_the_keys() -> None:
    text = "ExecStart=/bin/a " + "x" * UNIT_LINE_MAX_BYTES + "\n"
    with pytest.raises(ConfigError) as exc:
        check_unit_lines(text)
    assert str(exc.value) == (
        "model, served_model_name or extra_args: the unit's ExecStart= line would be 1048592 "
        "bytes; systemd reads at most 1048575 (LONG_LINE_MAX): shorten them"
    )
    assert exc.value.key == "model"
    assert check_unit_lines("User=x\n") == "User=x\n"


def test_check_unit_name() -> None:
    check_unit_name("n" * 231)  # n...n-ledger-exporter.service: 255 characters
    with pytest.raises(ConfigError) as exc:
        check_unit_name("n" * 232)
    assert str(exc.value) == (
        "container_name: 232 characters make a unit name of 256 "
        "(NAME-ledger-exporter.service); systemd takes at most 255: give a container_name of "
        "at most 231 characters"
    )


def test_arg_problem_counts_bytes_and_the_room_asked_for() -> None:
    assert ARG_MAX_BYTES == 131071
    assert arg_problem("x" * ARG_MAX_BYTES) is None
    assert arg_problem("x" * (ARG_MAX_BYTES + 1)) == (
        "is 131072 bytes; a program's argument or environment entry is at most 131071 "
        "(MAX_ARG_STRLEN)"
    )
    assert arg_problem("é" * 65536) is not None  # 131072 bytes in 65536 characters
    assert arg_problem("x" * 131000, 71) is None
    assert arg_problem("x" * 131000, 72) == (
        "is 131000 bytes with the 72 bytes put in front of it; a program's argument or "
        "environment entry is at most 131071 (MAX_ARG_STRLEN)"
    )
