"""Whose tokens read for the exporter: one file's counts per label set, the credits kept by
the chosen labels, the closed files kept between reads, and the windows by each label."""

from __future__ import annotations

from pathlib import Path

from tests.credited_ledgers import Call, write_credited_ledger
from vllm_ledger.observe.whose_read import ClosedFiles, file_parts, projected, whose_windows
from vllm_ledger.read.attribution import Credited, FileCredits
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.report import WindowReport, build_report
from vllm_ledger.read.snapshot import LedgerSnapshot

T0 = 1_800_000_000  # 2027-01-15 08:00 UTC


def _window(input: int = 0, output: int = 0, cached: int = 0, requests: int = 0) -> WindowReport:
    return WindowReport("total", 0, 86400, input, output, cached, requests, 0, 0.0, 0, True)


def test_a_files_rest_is_held_at_zero_where_it_would_be_negative() -> None:
    # A request begun in the writer's previous file and credited in this one: more credited
    # than the file counted.
    credits = FileCredits(
        by_label={
            ("team-a", "tiny", "", "", ""): Credited(100, 10, 0, 1),
            ("", "", "", "", "untagged"): Credited(5, 1, 0, 1),
            ("", "", "", "", "fault"): Credited(events=2),
        },
        files=1,
    )
    parts = dict(file_parts(_window(input=60, output=20, requests=2), credits, ("key",)))
    assert parts == {
        ("credited", "team-a"): (100, 10, 0, 1, 0),
        ("fault",): (0, 0, 0, 0, 2),
        ("not_attributed", "aborted"): (0, 9, 0, 0, 0),
        ("not_attributed", "untagged"): (5, 1, 0, 1, 0),
    }


def test_projected_keeps_the_chosen_labels_and_every_reason() -> None:
    credits = FileCredits(
        by_label={
            ("team-a", "tiny", "alice", "", ""): Credited(10, 1, 0, 1),
            ("team-a", "tiny", "bob", "", ""): Credited(5, 2, 1, 1),
            ("team-b", "tiny", "alice", "", "aborted"): Credited(events=1),
        },
        folded={"user": 3},
        files=2,
        without=1,
    )
    by_key = projected(credits, {0})
    assert by_key.by_label == {
        ("team-a", "", "", "", ""): Credited(15, 3, 1, 2),
        ("team-b", "", "", "", "aborted"): Credited(events=1),
    }
    assert (by_key.folded, by_key.files, by_key.without) == ({"user": 3}, 2, 1)
    assert credits.by_label[("team-a", "tiny", "alice", "", "")] == Credited(10, 1, 0, 1)


def test_closed_files_are_stamped_and_the_oldest_let_go(tmp_path: Path) -> None:
    kept = ClosedFiles(most=2)
    path = tmp_path / "w0.g0.ledger.sqlite"
    path.write_bytes(b"x" * 10)
    st = path.stat()
    closed = LedgerSnapshot(path, "ok", clean_close_ts=1.0)
    assert kept.stamp(closed) == (10, st.st_mtime_ns, st.st_ino)
    assert kept.stamp(LedgerSnapshot(path, "ok")) is None  # still written
    assert kept.stamp(LedgerSnapshot(tmp_path / "gone", "ok", clean_close_ts=1.0)) is None
    assert kept.stamp("not a snapshot") is None
    for name in ("a", "b", "c"):
        kept.keep(Path(name), (1, 2, 3), FileCredits())
    assert list(kept.got) == [Path("b"), Path("c")]
    kept.keep(Path("b"), (4, 5, 6), FileCredits())
    assert list(kept.got) == [Path("c"), Path("b")]


def test_the_windows_by_each_label_are_what_report_by_label_shows(tmp_path: Path) -> None:
    calls = [
        Call(T0 + 10, "team-a", "tiny", prompt=100, gen=10, cached=16),
        Call(T0 + 20, "team-b", "tiny-b", prompt=50, gen=5),
        Call(T0 + 30, prompt=7, gen=1, untagged=True),
    ]
    write_credited_ledger(tmp_path, "run-1", start_ts=T0, end_ts=T0 + 60, calls=calls)
    closed = ClosedFiles()
    with LedgerSet.read([tmp_path], clock=lambda: T0 + 61) as ls:
        report = build_report(ls, at_ts=T0 + 61, tz="UTC")
        got = whose_windows(ls, report, ("key", "adapter"), closed)
    assert list(got) == ["key", "adapter"]
    assert [w.name for w in got["key"]] == [w.name for w in report.windows]
    total = got["key"][-1]
    assert [(r.value, r.input_tokens, r.output_tokens) for r in total.rows] == [
        ("team-a", 100, 10),
        ("team-b", 50, 5),
    ]
    assert (total.not_attributed.input_tokens, total.not_attributed.output_tokens) == (7, 1)
    assert [r.value for r in got["adapter"][-1].rows] == ["tiny", "tiny-b"]
    assert [p.parent.name for p in closed.got] == ["run-1"]  # whole, closed: kept
