"""``format/paths.py``: ``ROOT/<run_id>/w<rank>.g<generation>.ledger.sqlite``: the names, a new
generation claimed with O_EXCL, and the ledger a sequence marker stands for."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_ledger.format.paths import (
    claim_new_ledger,
    ledger_name,
    ledger_of_marker,
    parse_ledger_name,
    run_dir,
)


def test_a_name_and_its_parse_round_trip() -> None:
    assert ledger_name(0, 0) == "w0.g0.ledger.sqlite"
    assert ledger_name(3, 12) == "w3.g12.ledger.sqlite"
    assert parse_ledger_name("w3.g12.ledger.sqlite") == (3, 12)
    assert parse_ledger_name(ledger_name(9999, 999999)) == (9999, 999999)
    assert parse_ledger_name("w007.g01.ledger.sqlite") == (7, 1)


@pytest.mark.parametrize(
    "name",
    [
        "w0.g0.ledger.sqlite-wal",
        "w0.g0.ledger.sqlite-shm",
        "w0.g0.ledger.sqlite.seq",
        "w10000.g0.ledger.sqlite",  # five digits of rank
        "w0.g1000000.ledger.sqlite",  # seven digits of generation
        "w-1.g0.ledger.sqlite",
        "w0.ledger.sqlite",
        "x0.g0.ledger.sqlite",
        "w0.g0.ledgerXsqlite",
        "w0.g0.ledger.sqlite\n",  # a trailing newline is another name
        "",
    ],
)
def test_any_other_name_is_not_a_ledger(name: str) -> None:
    assert parse_ledger_name(name) is None


def test_run_dir(tmp_path: Path) -> None:
    assert run_dir(tmp_path, "20261130-abc") == tmp_path / "20261130-abc"


def test_each_claim_takes_the_next_unused_generation(tmp_path: Path) -> None:
    assert claim_new_ledger(tmp_path, 2) == (0, tmp_path / "w2.g0.ledger.sqlite")
    assert claim_new_ledger(tmp_path, 2) == (1, tmp_path / "w2.g1.ledger.sqlite")
    (tmp_path / "w2.g2.ledger.sqlite").write_bytes(b"someone else's")
    assert claim_new_ledger(tmp_path, 2) == (3, tmp_path / "w2.g3.ledger.sqlite")
    assert claim_new_ledger(tmp_path, 5) == (0, tmp_path / "w5.g0.ledger.sqlite")
    assert (tmp_path / "w2.g2.ledger.sqlite").read_bytes() == b"someone else's"
    assert (tmp_path / "w2.g3.ledger.sqlite").stat().st_size == 0


def test_a_marker_names_its_ledger_only_when_that_ledger_is_not_listed() -> None:
    assert ledger_of_marker("w0.g0.ledger.sqlite.seq", set()) == "w0.g0.ledger.sqlite"
    listed = frozenset({"w0.g0.ledger.sqlite", "w0.g0.ledger.sqlite.seq"})
    assert ledger_of_marker("w0.g0.ledger.sqlite.seq", listed) is None  # its ledger is there
    assert ledger_of_marker("w1.g2.ledger.sqlite.seq", listed) == "w1.g2.ledger.sqlite"
    assert ledger_of_marker("other.seq", set()) is None  # no ledger's marker
    assert ledger_of_marker("w0.g0.ledger.sqlite", set()) is None  # not a marker
    assert ledger_of_marker("w0.g0.ledger.sqlite.seq.tmp", set()) is None
