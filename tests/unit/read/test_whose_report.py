"""report --by key|adapter|user|tenant: every window's rows and its not-attributed row add up to
the window's own figures exactly, over ledgers written by the real Recorder and TagBook."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.whose_ledgers import Req, drop_attribution, write_whose_ledger
from vllm_ledger.errors import BadArgument
from vllm_ledger.read.attribution import Credited
from vllm_ledger.read.report import build_report
from vllm_ledger.read.whose import WhoseWindow
from vllm_ledger.read.whose_report import ReportBy, WhoseReport, parse_by, report_by

SH = ZoneInfo("Asia/Shanghai")
T = int(datetime(2026, 11, 30, 10, 0, tzinfo=SH).timestamp())
END = T + 1800
FIGS = ("input_tokens", "output_tokens", "cached_tokens", "requests")

REQUESTS = (
    Req(T + 10.5, "team-a", "tiny", "alice", "acme", prompt=100, gen=10, cached=16),
    Req(T + 20.5, "team-a", "tiny-lora", "bob", "", prompt=50, gen=5, n=2),
    Req(T + 30.5, "key:1a2b3c4d", "tiny", "alice", "", prompt=30, gen=3),
    Req(T + 40.5, "key:1a2b3c4d", "tiny", "carol", "", prompt=40, gen=4, aborted=True),
    Req(T + 50.5, prompt=7, gen=1, untagged=True),
    Req(T + 60.5, prompt=9, gen=2, fault=True),
    Req(T + 1000.5, "", "tiny", "", "", prompt=5, gen=5),
)
SHARED = (
    (Req(T + 70.5, "team-a", prompt=11, gen=1), Req(T + 70.5, "key:1a2b3c4d", prompt=13, gen=2)),
)


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The requests above, written once for the module (readers never write in a root)."""
    path = tmp_path_factory.mktemp("whose-report")
    _ledger(path)
    return path


def _ledger(root: Path) -> None:
    write_whose_ledger(root, "run-w", start_ts=T, end_ts=END, requests=REQUESTS, shared=SHARED)


def _report(root: Path, by: str, **kw: Any) -> WhoseReport:
    got = report_by(
        [root], by=by, at_ts=END + 0.5, tz="Asia/Shanghai", clock=lambda: END + 0.5, **kw
    )
    assert isinstance(got, WhoseReport)
    return got


def _adds_up(ww: WhoseWindow) -> None:
    for fig in FIGS:
        rows = sum(getattr(r, fig) for r in ww.rows)
        assert rows + getattr(ww.not_attributed, fig) == getattr(ww.total, fig), (ww.name, fig)
        reasons = sum(getattr(c, fig) for c in ww.not_attributed.reasons.values())
        assert reasons == getattr(ww.not_attributed, fig), (ww.name, fig)


def _rows(ww: WhoseWindow) -> list[tuple[str, int, int, int, int, int]]:
    return [
        (r.value, r.input_tokens, r.output_tokens, r.cached_tokens, r.requests, r.requests_aborted)
        for r in ww.rows
    ]


def test_rows_add_up_to_every_window_for_every_key(ledger: Path) -> None:
    expected = {
        "key": [
            ("team-a", 150, 20, 16, 3, 0),
            ("key:1a2b3c4d", 30, 3, 0, 1, 1),
            ("", 5, 5, 0, 1, 0),
        ],
        "adapter": [("tiny", 135, 18, 16, 3, 1), ("tiny-lora", 50, 10, 0, 2, 0)],
        "user": [
            ("alice", 130, 13, 16, 2, 0),
            ("bob", 50, 10, 0, 2, 0),
            ("", 5, 5, 0, 1, 0),
            ("carol", 0, 0, 0, 0, 1),
        ],
        "tenant": [("acme", 100, 10, 16, 1, 0), ("", 85, 18, 0, 4, 1)],
    }
    for by, rows in expected.items():
        rep = _report(ledger, by)
        assert [ww.name for ww in rep.whose] == [w.name for w in rep.windows]
        assert rep.whose_by == by
        for ww, w in zip(rep.whose, rep.windows, strict=True):
            assert ww.total is w
            _adds_up(ww)
            assert _rows(ww) == rows, (by, ww.name)
            na = ww.not_attributed
            assert (na.input_tokens, na.output_tokens, na.cached_tokens, na.requests) == (
                130,
                10,
                0,
                4,
            )
            assert na.reasons == {
                "untagged": Credited(16, 3, 0, 2),
                "ambiguous": Credited(24, 3, 0, 2),
                "copies": Credited(50, 0, 0, 0),
                "aborted": Credited(40, 4, 0, 0, 1),
            }
            assert (na.requests_aborted, na.faults) == (1, 1)
            assert (w.input_tokens, w.output_tokens, w.cached_tokens, w.requests) == (
                315,
                38,
                16,
                9,
            )


def test_a_covered_window_is_complete_and_the_report_beneath_is_the_plain_one(
    ledger: Path,
) -> None:
    rep = _report(ledger, "key", since=T, until=END)
    (ww,) = rep.whose
    assert ww.name == "period" and ww.complete and ww.files_without == 0
    plain = build_report(
        [ledger], at_ts=END + 0.5, tz="Asia/Shanghai", since=T, until=END, clock=lambda: END + 0.5
    )
    assert rep.windows == plain.windows and rep.writers == plain.writers
    assert rep.breakdown_by is None and rep.calendar is None
    # Before the second request had finished: its rows only, and still adding up.
    (early,) = _report(ledger, "key", since=T, until=T + 25).whose
    assert _rows(early) == [("team-a", 150, 20, 16, 3, 0)]
    assert early.not_attributed.reasons["copies"] == Credited(50, 0, 0, 0)
    _adds_up(early)


def test_by_day_and_key_over_two_days(tmp_path: Path) -> None:
    d1 = int(datetime(2026, 11, 29, 10, 0, tzinfo=SH).timestamp())
    write_whose_ledger(
        tmp_path,
        "run-1",
        start_ts=d1,
        end_ts=d1 + 600,
        requests=[
            Req(d1 + 10.5, "team-a", "tiny", prompt=100, gen=1),
            Req(d1 + 20.5, "team-b", "tiny", prompt=7, gen=2),
        ],
    )
    write_whose_ledger(
        tmp_path,
        "run-2",
        start_ts=T,
        end_ts=T + 600,
        requests=[
            Req(T + 10.5, "team-b", "tiny", prompt=300, gen=3),
            Req(T + 11.5, prompt=1, gen=1, untagged=True),
        ],
    )
    midnight = int(datetime(2026, 11, 29, tzinfo=SH).timestamp())
    rep = _report(tmp_path, "day,key", since=midnight, until=midnight + 2 * 86400)
    assert rep.calendar == "day"
    assert [ww.name for ww in rep.whose] == ["2026-11-29", "2026-11-30", "total"]
    day1, day2, total = rep.whose
    assert _rows(day1) == [("team-a", 100, 1, 0, 1, 0), ("team-b", 7, 2, 0, 1, 0)]
    assert _rows(day2) == [("team-b", 300, 3, 0, 1, 0)]
    assert day2.not_attributed.reasons["untagged"] == Credited(1, 1, 0, 1)
    assert _rows(total) == [("team-b", 307, 5, 0, 2, 0), ("team-a", 100, 1, 0, 1, 0)]
    for ww in rep.whose:
        _adds_up(ww)
        assert not ww.complete  # each day is mostly uncovered
    assert (total.total.input_tokens, total.total.requests) == (408, 4)


def test_model_and_instance_filters_credit_only_what_they_keep(tmp_path: Path) -> None:
    write_whose_ledger(
        tmp_path,
        "run-q",
        start_ts=T,
        end_ts=END,
        model="qwen",
        port=8000,
        requests=[Req(T + 10.5, "team-a", "qwen", prompt=100, gen=1)],
    )
    write_whose_ledger(
        tmp_path,
        "run-l",
        start_ts=T,
        end_ts=END,
        model="llama",
        port=8001,
        requests=[
            Req(T + 10.5, "team-a", "llama", prompt=20, gen=2),
            Req(T + 12.5, "team-b", "llama", prompt=3, gen=3),
        ],
    )
    (ww,) = _report(tmp_path, "key", since=T, until=END, model="llama").whose
    assert _rows(ww) == [("team-a", 20, 2, 0, 1, 0), ("team-b", 3, 3, 0, 1, 0)]
    assert ww.total.input_tokens == 23 and ww.complete
    (ww,) = _report(tmp_path, "adapter", since=T, until=END, instance=8000).whose
    assert _rows(ww) == [("qwen", 100, 1, 0, 1, 0)]
    (ww,) = _report(tmp_path, "key", since=T, until=END).whose
    assert _rows(ww) == [("team-a", 120, 3, 0, 2, 0), ("team-b", 3, 3, 0, 1, 0)]


def test_a_file_written_before_attribution_credits_nobody_and_is_not_complete(
    tmp_path: Path,
) -> None:
    _ledger(tmp_path)
    assert drop_attribution(tmp_path) == 1
    (ww,) = _report(tmp_path, "user", since=T, until=END).whose
    assert ww.rows == () and ww.files_without == 1
    assert ww.total.complete and not ww.complete
    assert ww.not_attributed.reasons["aborted"] == Credited(315, 38, 16, 9)
    _adds_up(ww)


def test_plain_keys_give_the_plain_report(ledger: Path) -> None:
    for by in (None, "model", "day", "day,instance", "engine"):
        got = report_by([ledger], by=by, at_ts=END + 0.5, clock=lambda: END + 0.5)
        want = build_report([ledger], by=by, at_ts=END + 0.5, clock=lambda: END + 0.5)
        assert type(got) is type(want) and got.windows == want.windows
        assert got.breakdown == want.breakdown


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (None, ReportBy()),
        ("key", ReportBy(whose="key")),
        ("day,user", ReportBy(grain="day", whose="user")),
        ("tenant, month", ReportBy(grain="month", whose="tenant")),
        ("adapter", ReportBy(whose="adapter")),
        ("model", ReportBy(breakdown="model")),
        ("day,model", ReportBy(grain="day", breakdown="model")),
    ],
)
def test_parse_by(text: str | None, want: ReportBy) -> None:
    assert parse_by(text) == want


@pytest.mark.parametrize("text", ["key,user", "model,key", "day,month,key", "keys", "", "key,"])
def test_parse_by_refuses(text: str) -> None:
    with pytest.raises(BadArgument) as got:
        parse_by(text)
    assert "key, adapter, user, tenant" in (got.value.hint or "")


def test_a_file_from_before_attribution_counts_only_in_windows_it_reaches(tmp_path: Path) -> None:
    old = tmp_path / "old"
    write_whose_ledger(
        old,
        "run-old",
        start_ts=T - 86400,
        end_ts=T - 86400 + 600,
        requests=[Req(T - 86400 + 10.5, "team-a", prompt=700, gen=7)],
    )
    assert drop_attribution(old) == 1
    _ledger(tmp_path / "new")
    roots = [old, tmp_path / "new"]
    (today,) = _report_roots(roots, "key", since=T, until=END).whose
    assert today.files_without == 0 and today.complete
    assert _rows(today)[0] == ("team-a", 150, 20, 16, 3, 0)
    (both,) = _report_roots(roots, "key", since=T - 86400, until=END).whose
    assert both.files_without == 1 and not both.complete
    assert both.not_attributed.reasons["aborted"] == Credited(40 + 700, 4 + 7, 0, 1, 1)
    _adds_up(both)


def _report_roots(roots: list[Path], by: str, **kw: Any) -> WhoseReport:
    got = report_by(
        roots, by=by, at_ts=END + 0.5, tz="Asia/Shanghai", clock=lambda: END + 0.5, **kw
    )
    assert isinstance(got, WhoseReport)
    return got
