"""The declared-stops file (format/declarations.py): a declaration checked field by field,
written as one sorted JSON line, appended whole, and read back with one error per refused line.
What a declaration does to a report is tests/test_declared_stops.py's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from vllm_ledger.errors import BadDeclaration
from vllm_ledger.format.declarations import (
    DECLARATIONS_NAME,
    Declaration,
    append,
    check,
    parse,
    path_in,
    to_line,
)

T0 = 1_796_000_000
GOOD = Declaration("gpu1:8000", T0, T0 + 600, "upgrade", T0 + 700.12345, "ops")


def test_a_declaration_is_one_sorted_json_line_read_back_as_written(tmp_path: Path) -> None:
    assert to_line(GOOD) == (
        '{"by": "ops", "declared_at": 1796000700.123, "from": 1796000000, '
        '"instance": "gpu1:8000", "reason": "upgrade", "until": 1796000600}\n'
    )
    assert append(tmp_path, GOOD) == path_in(tmp_path) == tmp_path / DECLARATIONS_NAME
    append(tmp_path, replace(GOOD, instance="gpu2:8000"))
    found, errors = parse(path_in(tmp_path).read_bytes())
    assert errors == []
    assert found == [
        replace(GOOD, declared_ts=T0 + 700.123),
        replace(GOOD, instance="gpu2:8000", declared_ts=T0 + 700.123),
    ]


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"instance": "gpu1"}, "instance 'gpu1' is not HOST:PORT"),
        ({"from_ts": 1}, "from 1 is not whole Unix seconds between 2000 and 2100"),
        ({"until_ts": T0}, f"until {T0} is not after from {T0}"),
        ({"until_ts": T0 + 366 * 86400 + 1}, "31622401 s is longer than a year: split it"),
        ({"reason": ""}, "reason must be 1 to 200 characters"),
        ({"declared_ts": float("nan")}, "declared_at nan is not a time"),
        ({"by": "x" * 101}, "by must be at most 100 characters"),
    ],
)
def test_each_field_is_checked(change: dict[str, object], says: str, tmp_path: Path) -> None:
    bad = replace(GOOD, **change)  # type: ignore[arg-type]
    with pytest.raises(BadDeclaration) as caught:
        check(bad)
    assert str(caught.value).startswith(says)
    with pytest.raises(BadDeclaration):
        append(tmp_path, bad)
    assert not path_in(tmp_path).exists()  # nothing written


def test_refused_lines_are_named_by_number() -> None:
    data = b"not json\n\n" + to_line(GOOD).encode() + b'{"instance": "gpu1:8000"}\n'
    found, errors = parse(data)
    assert found == [replace(GOOD, declared_ts=T0 + 700.123)]
    assert [e.split(":")[0] for e in errors] == ["line 1", "line 4"]
    assert errors[1] == "line 4: not a declaration object"
