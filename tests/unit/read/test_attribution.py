"""One file's credits read back: by label set and grouped by one label in SQL, the same
numbers; every value judged before it counts; a live writer's new label sets found."""

from __future__ import annotations

import copy
import sqlite3
from pathlib import Path

import pytest

from tests.whose_ledgers import Req, many_users, write_whose_ledger
from vllm_ledger.errors import BadValues
from vllm_ledger.format import attr_reads
from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.read.attribution import (
    ByValue,
    Credited,
    CreditReads,
    FileCredits,
    file_credits,
)
from vllm_ledger.read.open_ledger import open_snapshot
from vllm_ledger.read.windows import Window
from vllm_ledger.write.recorder import Recorder
from vllm_ledger.write.tags import TagBook

# A fixed instant, 10 minutes into an hour of the day (2026-11-30 08:10 UTC): an edge window of
# a minute from T lies in one hour (its seconds are read), and ALL reads T's day by its hours.
T = 1_796_026_200.0
ALL = Window("all", 0, int(T) + 7200)


def _write(root: Path, requests: list[tuple[str, str, str, int]]) -> tuple[Recorder, TagBook]:
    book = TagBook()
    book.consumer = True
    rec = Recorder(
        root,
        WriterIdentity("run-a", 0, 1, pid=1, instance=InstanceInfo(("tiny",), 8000, "h")),
        clock=lambda: T + 10,
        book=book,
    )
    for i, (key, adapter, user, prompt) in enumerate(requests):
        e = book.begin(f"x{i}", judge_abort=True)
        assert e is not None
        book.named(e, key, adapter, user, "")
        fin = ((3, 0.5, f"chatcmpl-x{i}", prompt, 1),)
        rec.submit((T + i, 0, prompt, 3, 1, fin, book.tick()))
    assert rec.pump()
    return rec, book


def _file(root: Path) -> Path:
    return next(root.rglob("*.ledger.sqlite"))


REQS = [("k1", "tiny", "alice", 10), ("k1", "tiny-b", "bob", 20), ("k2", "tiny", "alice", 40)]
_ONE = "dim = (SELECT min(dim) FROM attr_hourly)"  # one row of REQS' three


@pytest.fixture(params=["columns", "rows"])
def read_as(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """A read by one label as it runs (each span a column at a time), and as it runs where
    SQLite cannot give columns (the rows read instead): the two say the same."""
    if request.param == "rows":
        monkeypatch.setattr(attr_reads, "labelled_columns", lambda *a: None)
    return str(request.param)


def test_by_label_set_and_grouped_by_one_label_agree(tmp_path: Path, read_as: str) -> None:
    _write(tmp_path, REQS)
    snap, conn = open_snapshot(_file(tmp_path), now_ts=T + 20)
    assert conn is not None
    full = file_credits(snap, conn, ALL)
    assert full.by_label[("k1", "tiny-b", "bob", "", "")] == Credited(20, 3, 1, 1, 0)
    for by, place in (("key", 0), ("adapter", 1), ("user", 2)):
        grouped = file_credits(snap, conn, ALL, by=by)
        want: dict[str, dict[str, list[int]]] = {}
        for label, c in full.by_label.items():
            got = want.setdefault(label[4], {}).setdefault(label[place], [0] * 5)
            for i, n in enumerate(c.counts()):
                got[i] += n
        assert grouped.by_label == {}
        assert grouped.by_value == want == full.values(place)


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        ("UPDATE attr_hourly SET prompt_tokens = -1", "a negative count"),
        ("UPDATE attr_daily SET requests = 'many'", "not an integer"),
        ("UPDATE attr_seconds SET cached_tokens = prompt_tokens + 1", "more cached than input"),
        ("UPDATE attr_dims SET reason = 'paid'", "not a reason the writer gives"),
        ("UPDATE attr_dims SET user = '" + "u" * 300 + "'", "not short texts"),
        ("UPDATE attr_hourly SET generation_tokens = 9223372036854775807", "more than any"),
        # One row of several, its column's total still sound: judged row by row all the same.
        (f"UPDATE attr_hourly SET generation_tokens = -1 WHERE {_ONE}", r"a negative count \(-1\)"),
        (f"UPDATE attr_hourly SET cached_tokens = prompt_tokens + 1 WHERE {_ONE}", "more cached"),
        (f"UPDATE attr_hourly SET prompt_tokens = 2.5 WHERE {_ONE}", "not an integer"),
        (f"UPDATE attr_hourly SET events = X'00ff' WHERE {_ONE}", "not an integer"),
    ],
)
def test_a_tampered_value_refuses_the_file_in_either_read(
    tmp_path: Path, sql: str, says: str, read_as: str
) -> None:
    _write(tmp_path, REQS)
    with sqlite3.connect(_file(tmp_path)) as w:
        w.execute(sql)
    # Rows are judged where a window reads them: an edge reads the seconds, a whole day its row.
    window = Window("edge", int(T), int(T) + 60) if "attr_seconds" in sql else ALL
    if "attr_daily" in sql:
        window = Window("days", 0, int(T) - int(T) % 86400 + 86400)
    for by in (None, "user"):
        snap, conn = open_snapshot(_file(tmp_path), now_ts=T + 20)
        assert conn is not None
        with pytest.raises(BadValues, match=says):
            file_credits(snap, conn, window, by=by)


def test_a_live_writers_new_label_sets_are_found_with_the_labels_kept(tmp_path: Path) -> None:
    rec, book = _write(tmp_path, REQS[:1])
    snap, conn = open_snapshot(_file(tmp_path), now_ts=T + 20)
    assert conn is not None
    labels: dict = {}
    first = file_credits(snap, conn, ALL, labels)
    assert set(first.by_label) == {("k1", "tiny", "alice", "", "")}
    conn.close()
    e = book.begin("late", judge_abort=True)
    assert e is not None
    book.named(e, "k9", "tiny", "zoe", "")
    rec.submit((T + 5, 0, 7, 3, 0, ((3, 0.5, "chatcmpl-late", 7, 0),), book.tick()))
    assert rec.pump()
    snap, conn = open_snapshot(_file(tmp_path), now_ts=T + 20)
    assert conn is not None
    again = file_credits(snap, conn, ALL, labels)  # the kept labels lack the new set
    assert again.by_label[("k9", "tiny", "zoe", "", "")] == Credited(7, 3, 0, 1, 0)


def test_nested_windows_widened_ring_by_ring_read_as_each_alone(tmp_path: Path) -> None:
    """``CreditReads``: each window that holds the last one (same cutoff) reads only the span
    before it; its sums and folded names equal a read of the window alone, at starts off the
    hour, before the file's first record, and after a change of cutoff."""
    day = int(T) - int(T) % 86400 - 86400
    reqs = [
        *many_users(day + 3600, users=5000, seconds=3 * 3600),  # past 1,000 an hour: folded
        Req(day + 3700.5, "team-b", "tiny", "u-cut", prompt=30, gen=2, aborted=True),
        Req(day + 7300.5, prompt=7, gen=1, untagged=True),
    ]
    write_whose_ledger(tmp_path, "run-w", start_ts=day + 3000, end_ts=day + 5 * 3600,
                       requests=reqs, heartbeat_s=60.0)  # fmt: skip
    snap, conn = open_snapshot(_file(tmp_path), now_ts=day + 6 * 3600)
    assert conn is not None
    cutoff = day + 4 * 3600 + 1234
    starts = [cutoff - 1000, day + 2 * 3600 + 77, day + 3600 + 5, day + 3601, 0]
    for by in ("user", "key"):
        wide = CreditReads()
        kept: list[tuple[FileCredits, ByValue]] = []
        for cut in (cutoff, cutoff - 4000):
            for start in starts:
                w = Window("w", min(start, cut), cut)
                got = wide.read(snap, conn, w, by)
                alone = file_credits(snap, conn, w, by=by)
                assert (got.by_value, got.folded, got.files) == (
                    alone.by_value,
                    alone.folded,
                    alone.files,
                )
                kept.append((got, copy.deepcopy(got.by_value)))
                assert got.sums == alone.sums == _column_sums(alone.by_value)
        # A widened read (the larger side copied, the smaller walked in) changed no earlier one.
        assert all(read.by_value == then for read, then in kept)
    widest = file_credits(snap, conn, Window("all", 0, cutoff), by="user")
    assert widest.folded["user"] > 0  # the rings' hours met names folded past the bound


def test_folded_names_end_where_asked_even_at_zero(tmp_path: Path) -> None:
    """``folded_end`` 0 counts the names folded before 0 (none), not those before the cutoff:
    the bound is tested against None, never for truth."""
    day = int(T) - int(T) % 86400 - 86400
    write_whose_ledger(tmp_path, "run-f", start_ts=day + 3000, end_ts=day + 2 * 3600,
                       requests=many_users(day + 3600, users=1500, seconds=600),
                       heartbeat_s=60.0)  # fmt: skip
    snap, conn = open_snapshot(_file(tmp_path), now_ts=day + 3 * 3600)
    assert conn is not None
    w = Window("all", 0, day + 2 * 3600)
    for by in ("user", None):
        assert file_credits(snap, conn, w, by=by).folded["user"] == 500
        assert file_credits(snap, conn, w, by=by, folded_end=0).folded == {}


def _column_sums(by_value: ByValue) -> list[int]:
    """Every list of a read by one label added up, column by column."""
    out = [0] * 5
    for values in by_value.values():
        for counts in values.values():
            out = [a + b for a, b in zip(out, counts, strict=True)]
    return out
