"""The stops declared under the roots, read once per root, and the lines refused."""

from __future__ import annotations

from pathlib import Path

from vllm_ledger.format import declarations
from vllm_ledger.read.declared_stops import load_declarations

T0 = 1_796_000_000


def test_no_file_under_a_root_declares_nothing(tmp_path: Path) -> None:
    assert load_declarations([tmp_path]) == ([], [])


def test_each_roots_declarations_are_read_and_a_bad_line_is_named(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    stop = declarations.Declaration("gpu1:8000", T0, T0 + 600, "upgrade", T0 - 60.0)
    declarations.append(a, stop)
    declarations.path_in(b).write_text("not json\n")
    found, errors = load_declarations([a, b])
    assert found == [stop]
    assert len(errors) == 1
    assert errors[0][0] == declarations.path_in(b)
    assert errors[0][1].startswith("refused ")


def test_a_declarations_path_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    declarations.path_in(tmp_path).mkdir()  # a folder where the file should be
    found, errors = load_declarations([tmp_path])
    assert found == []
    assert [(p, why.startswith("cannot read: ")) for p, why in errors] == [
        (declarations.path_in(tmp_path), True)
    ]
