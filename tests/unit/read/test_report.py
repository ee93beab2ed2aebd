"""The report (read/report.py): the five windows, the writers, breakdowns, filters, and files
that cannot be read named beside the figures. The window edges themselves: test_windows.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ledgers import ev, write_ledger
from vllm_ledger.errors import BadArgument
from vllm_ledger.read.report import FileStatus, Report, WriterStatus, build_report

AT = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC
H = 3600
DAY = 86400
A, B = "testhost:8000", "testhost:8001"


def _two_instances(root: Path) -> None:
    """:8000 serves model a (run-a: two writers, one per engine, for the last 2 h); :8001
    serves model b (run-b: one writer, for the last hour). Every writer closed at AT; its
    heartbeats 25 s apart keep one unbroken span."""
    for rank, event in (
        (0, ev(AT - 3000, prompt=100, gen=10, cached=50, engine=0)),
        (1, ev(AT - 2000, prompt=200, gen=20, engine=1, finished=[(20, 2.0)])),
    ):
        write_ledger(
            root,
            "run-a",
            start_ts=AT - 2 * H,
            end_ts=AT,
            events=[event],
            rank=rank,
            expected=2,
            port=8000,
            model="a",
            heartbeat_every_s=25,
        )
    write_ledger(
        root,
        "run-b",
        start_ts=AT - H,
        end_ts=AT,
        events=[ev(AT - 1000, prompt=1000, gen=100, engine=0)],
        port=8001,
        model="b",
        heartbeat_every_s=25,
    )


def _report(
    root: Path, *, by: str | None = None, instance: int | None = None, model: str | None = None
) -> Report:
    return build_report(
        [root],
        at_ts=AT + 0.5,
        clock=lambda: AT + 10,
        tz="UTC",
        by=by,
        instance=instance,
        model=model,
    )


def _totals(r: Report) -> dict[str, tuple[int, int, int, bool]]:
    """key -> the total window's (start, input, output, complete), per breakdown row."""
    out = {}
    for row in r.breakdown:
        t = next(w for w in row.windows if w.name == "total")
        out[row.key] = (t.start_ts, t.input_tokens, t.output_tokens, t.complete)
    return out


def test_the_five_windows_and_the_writers(tmp_path: Path) -> None:
    _two_instances(tmp_path)
    r = _report(tmp_path)
    assert (r.schema, r.generated_ts, r.at_ts, r.cutoff_ts, r.tz) == (
        1,
        AT + 10,
        AT + 0.5,
        AT,
        "UTC",
    )
    assert (r.roots, r.runs, r.files, r.breakdown_by, r.breakdown) == (
        (str(tmp_path),),
        2,
        (),
        None,
        (),
    )
    starts = {"today": AT - 8 * H, "24h": AT - DAY, "3d": AT - 3 * DAY, "7d": AT - 7 * DAY}
    starts["total"] = AT - 2 * H  # the first record
    assert [(w.name, w.start_ts, w.cutoff_ts) for w in r.windows] == [
        (name, start, AT) for name, start in starts.items()
    ]
    for w in r.windows:  # every event falls in the last two hours: the same figures in all five
        figures = (w.input_tokens, w.output_tokens, w.cached_tokens, w.requests)
        assert figures == (1300, 130, 50, 1), w.name
        assert (w.decode_tokens, w.decode_seconds, w.gen_speed) == (19, 2.0, 9.5), w.name
        assert w.hit_rate == 50 / 1300 and w.problems == {}, w.name
        # Before the first run nothing vouched: only total is covered end to end.
        assert w.uncovered_seconds == w.wall_seconds - 2 * H, w.name
        assert w.complete is (w.name == "total"), w.name
    assert r.writers == (
        WriterStatus("run-a", 0, 2, A, "closed", AT - 2 * H, AT),
        WriterStatus("run-a", 1, 2, A, "closed", AT - 2 * H, AT),
        WriterStatus("run-b", 0, 1, B, "closed", AT - H, AT),
    )


def test_breakdowns_each_with_its_own_coverage(tmp_path: Path) -> None:
    _two_instances(tmp_path)
    by_instance = _report(tmp_path, by="instance")
    assert by_instance.breakdown_by == "instance"
    # An instance's total starts at its own first record and is complete on its own.
    assert _totals(by_instance) == {
        A: (AT - 2 * H, 300, 30, True),
        B: (AT - H, 1000, 100, True),
    }
    today_b = by_instance.breakdown[1].windows[0]
    assert (today_b.name, today_b.uncovered_seconds) == ("today", 8 * H - H)
    assert _totals(_report(tmp_path, by="model")) == {
        "a": (AT - 2 * H, 300, 30, True),
        "b": (AT - H, 1000, 100, True),
    }
    assert _totals(_report(tmp_path, by="run")) == {
        "run-a": (AT - 2 * H, 300, 30, True),
        "run-b": (AT - H, 1000, 100, True),
    }
    # Engines share the whole report's windows and coverage.
    assert _totals(_report(tmp_path, by="engine")) == {
        "0": (AT - 2 * H, 1100, 110, True),
        "1": (AT - 2 * H, 200, 20, True),
    }
    # The report's own windows are those of the report without a breakdown.
    assert by_instance.windows == _report(tmp_path).windows
    with pytest.raises(BadArgument) as e:
        _report(tmp_path, by="host")
    assert str(e.value) == (
        "by 'host': give a key (instance, model, run, engine), a step (hour, day, month) or one of "
        "each, comma-separated, e.g. day,model"
    )


def test_filters_keep_one_instance_or_model(tmp_path: Path) -> None:
    _two_instances(tmp_path)
    b = _report(tmp_path, instance=8001)
    total = b.window("total")
    assert (total.start_ts, total.input_tokens, total.complete) == (AT - H, 1000, True)
    assert (b.instance_filter, b.model_filter, b.runs) == (8001, None, 1)
    assert [(w.run_id, w.writer_rank) for w in b.writers] == [("run-b", 0)]
    a = _report(tmp_path, model="a")
    assert (a.window("total").input_tokens, a.model_filter, a.runs) == (300, "a", 1)
    assert [(w.run_id, w.writer_rank) for w in a.writers] == [("run-a", 0), ("run-a", 1)]
    # A filter that matches nothing: zero and never complete, but not "no ledger" (there is
    # one; it is someone else's).
    for none in (_report(tmp_path, instance=9999), _report(tmp_path, instance=8000, model="b")):
        assert [(w.input_tokens, w.complete, w.problems) for w in none.windows] == [
            (0, False, {})
        ] * 5
        assert (none.window("total").start_ts, none.runs, none.writers) == (AT, 0, ())


def test_a_file_that_cannot_be_read_is_named_and_no_window_is_complete(tmp_path: Path) -> None:
    _two_instances(tmp_path)
    bad = tmp_path / "run-c" / "w0.g0.ledger.sqlite"
    bad.parent.mkdir()
    bad.write_bytes(b"\0" * 4096)
    r = _report(tmp_path)
    assert r.files == (FileStatus(str(bad), "unreadable", "bad header"),)
    assert r.runs == 2
    # What could be read still counts, and every window says it may not be all.
    assert [(w.input_tokens, w.complete, w.problems) for w in r.windows] == [
        (1300, False, {"ledger_unreadable": 1})
    ] * 5
    # Whose file it is cannot be known: a filter keeps it, and names it.
    b = _report(tmp_path, instance=8001)
    assert b.files == r.files
    assert (b.window("total").input_tokens, b.window("total").complete) == (1000, False)
