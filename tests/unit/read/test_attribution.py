"""One file's credits read back: by label set and grouped by one label in SQL, the same
numbers; every value judged before it counts; a live writer's new label sets found."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from vllm_ledger.errors import BadValues
from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.read.attribution import Credited, file_credits
from vllm_ledger.read.snapshot import open_snapshot
from vllm_ledger.read.windows import Window
from vllm_ledger.write.recorder import Recorder
from vllm_ledger.write.tags import TagBook

T = float(int(time.time()) - 7200)
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


def test_by_label_set_and_grouped_by_one_label_agree(tmp_path: Path) -> None:
    _write(tmp_path, REQS)
    snap, conn = open_snapshot(_file(tmp_path), now_ts=T + 20)
    assert conn is not None
    full = file_credits(snap, conn, ALL)
    assert full.by_label[("k1", "tiny-b", "bob", "", "")] == Credited(20, 3, 1, 1, 0)
    for by, place in (("key", 0), ("adapter", 1), ("user", 2)):
        grouped = file_credits(snap, conn, ALL, by=by)
        want: dict[str, Credited] = {}
        for label, c in full.by_label.items():
            want.setdefault(label[place], Credited()).add(c)
        assert {k[place]: v for k, v in grouped.by_label.items()} == want


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        ("UPDATE attr_hourly SET prompt_tokens = -1", "a negative count"),
        ("UPDATE attr_daily SET requests = 'many'", "not an integer"),
        ("UPDATE attr_seconds SET cached_tokens = prompt_tokens + 1", "more cached than input"),
        ("UPDATE attr_dims SET reason = 'paid'", "not a reason the writer gives"),
        ("UPDATE attr_dims SET user = '" + "u" * 300 + "'", "not short texts"),
        ("UPDATE attr_hourly SET generation_tokens = 9223372036854775807", "more than any"),
    ],
)
def test_a_tampered_value_refuses_the_file_in_either_read(
    tmp_path: Path, sql: str, says: str
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
