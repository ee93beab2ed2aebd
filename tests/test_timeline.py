"""The timeline: steps that tile a window exactly, and uncovered spans with their causes."""

from __future__ import annotations

import csv
import io
import itertools
import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.conftest import run_cli
from tests.ledgers import FakeClock, ev, write_ledger
from vllm_ledger.errors import BadArgument
from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.formats.timeline import render_json
from vllm_ledger.read import timeline as timeline_module
from vllm_ledger.read.report import build_report
from vllm_ledger.read.timeline import build_timeline
from vllm_ledger.units import whole_duration
from vllm_ledger.write.iteration import IterationEvent
from vllm_ledger.write.recorder import Recorder

SH = ZoneInfo("Asia/Shanghai")
AT = int(datetime(2026, 11, 29, 10, 0, 0, tzinfo=SH).timestamp())  # on the hour
H = 3600
FIGURES = ("input", "output", "cached", "requests", "decode_tokens", "uncovered_seconds")


def _with_reject(
    root: Path,
    run_id: str,
    start_ts: float,
    end_ts: float,
    reject_ts: float,
    events: Sequence[IterationEvent] = (),
) -> None:
    """A clean writer that could not read one input at ``reject_ts``."""
    clock = FakeClock(start_ts)
    rec = Recorder(
        root,
        WriterIdentity(
            run_id, 0, 1, pid=4242, instance=InstanceInfo(("tiny",), 8000, "testhost", "0.32.0")
        ),
        clock=clock,
    )
    rec.pump()
    pending = sorted([*events, ev(reject_ts, prompt=3)], key=lambda e: e[0])
    t = start_ts
    while t < end_ts:
        t = min(end_ts, t + 29)
        while pending and pending[0][0] < t:
            e = pending.pop(0)
            if e[0] == reject_ts:
                rec.reject(reject_ts)
            rec.submit(e)  # a submit hands the fault over to the writer
        clock.t = t
        rec.pump()
    rec.pump(final=True)


def _mixed_history(root: Path) -> None:
    """A day with every cause of an uncovered span, and traffic in most hours."""
    busy = [
        ev(
            AT - 24 * H + 50 + k * 1800,
            prompt=100 + k,
            gen=7 + k % 5,
            cached=32 * (k % 3),
            finished=[(7 + k % 5, 0.25)],
        )
        for k in range(48)
    ]

    def between(a: float, b: float) -> list:
        return [e for e in busy if a <= e[0] < b]

    write_ledger(
        root,
        "a1",
        start_ts=AT - 26 * H,
        end_ts=AT - 20 * H,
        events=between(AT - 26 * H, AT - 20 * H),
        heartbeat_every_s=29,
    )
    # AT-20h .. AT-19h: nothing recording.
    write_ledger(
        root,
        "a2",
        start_ts=AT - 19 * H,
        end_ts=AT - 15 * H,
        clean=False,
        events=between(AT - 19 * H, AT - 15 * H),
        heartbeat_every_s=29,
    )
    # AT-15h .. AT-14h: the tail of a2, which never closed.
    _with_reject(
        root,
        "a3",
        AT - 14 * H,
        AT - 10 * H,
        AT - 12 * H + 30,
        events=between(AT - 14 * H, AT - 10 * H),
    )
    write_ledger(
        root,
        "a4",
        start_ts=AT - 9 * H,
        end_ts=AT - 8 * H,
        expected=2,
        events=between(AT - 9 * H, AT - 8 * H),
        heartbeat_every_s=29,
    )
    # AT-10h .. AT-9h and AT-8h .. AT-6h: nothing recording.
    write_ledger(
        root,
        "a5",
        start_ts=AT - 6 * H,
        end_ts=AT - 2 * H,
        clean=False,
        events=between(AT - 6 * H, AT - 2 * H),
        heartbeat_every_s=29,
    )
    # From AT-2h on a5's heartbeat is stale (it is the instance's latest run).


def test_causes_of_uncovered_spans(tmp_path: Path) -> None:
    _mixed_history(tmp_path)
    tl = build_timeline(
        [tmp_path],
        window="24h",
        step="1h",
        at_ts=AT + 0.5,
        tz="Asia/Shanghai",
        clock=lambda: AT + 0.5,
    )
    spans = [(u.start_ts - AT, u.end_ts - AT, u.cause) for u in tl.uncovered]
    assert spans == [
        (-20 * H, -19 * H, "not_recording"),
        (-15 * H - 1, -14 * H, "unclean_exit"),  # a dead writer's last second is not vouched
        (-12 * H + 30, -12 * H + 31, "rejected_input"),
        (-10 * H, -9 * H, "not_recording"),
        (-9 * H, -8 * H, "writer_missing"),
        (-8 * H, -6 * H, "not_recording"),
        (-2 * H - 1, 0, "heartbeat_stale"),
    ]
    assert sum(u.seconds for u in tl.uncovered) == tl.window.uncovered_seconds == 8 * H + 3
    assert tl.window.problems == {
        "heartbeat_stale": 1,
        "rejected_input": 1,
        "unclean_exit": 1,
        "writer_missing": 1,
    }


def _json(root: Path, *args: str) -> dict:
    code, out, err = run_cli(*args, "--root", str(root), "--json", "--tz", "Asia/Shanghai")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("at_offset", [0.5, 1234.75])
def test_steps_sum_exactly_to_the_window(tmp_path: Path, at_offset: float) -> None:
    _mixed_history(tmp_path)
    at = str(AT + at_offset)
    tl = _json(tmp_path, "timeline", "--at", at)
    rep = _json(tmp_path, "report", "--at", at)
    window, steps = tl["window"], tl["steps"]
    assert window["name"] == "7d"
    # A step nobody knows anything of is null (unknown), never 0: the others add up.
    known = [s for s in steps if s["figures"] != "unknown"]
    assert all(s[key] is None for s in steps if s not in known for key in FIGURES[:-1])
    for key in FIGURES[:-1]:
        assert sum(s[key] for s in known) == window[key] == rep["windows"]["7d"][key], key
    uncovered = sum(s["uncovered_seconds"] for s in steps)
    assert uncovered == window["uncovered_seconds"] == rep["windows"]["7d"]["uncovered_seconds"]
    assert window["input"] > 0 and window["uncovered_seconds"] > 0
    assert sum(u["seconds"] for u in tl["uncovered_spans"]) == window["uncovered_seconds"]
    assert sum(s["decode_seconds"] for s in known) == pytest.approx(window["decode_seconds"])
    # The steps tile the window: contiguous, on the hour inside, partial at the ends.
    cutoff = int(AT + at_offset)
    assert steps[0]["start"] == window["start"] == cutoff - 7 * 86400
    assert steps[-1]["cutoff"] == window["cutoff"] == cutoff
    assert all(a["cutoff"] == b["start"] for a, b in itertools.pairwise(steps))
    assert all(s["start"] % H == 0 for s in steps[1:])
    if at_offset < 1:
        assert len(steps) == 168 and all(s["wall_seconds"] == H for s in steps)
    else:
        assert len(steps) == 169
        assert (steps[0]["wall_seconds"], steps[-1]["wall_seconds"]) == (H - 1234, 1234)
    # A step's hit rate and speed are its own figures, not the window's.
    s = next(s for s in steps if s["input"])
    assert s["hit_rate"] == round(s["cached"] / s["input"], 6)
    assert s["avg_speed"] == round(s["output"] / s["wall_seconds"], 6)


def test_the_timeline_matches_every_window_of_the_report(tmp_path: Path) -> None:
    _mixed_history(tmp_path)
    rep = build_report([tmp_path], at_ts=AT + 0.5, clock=lambda: AT + 0.5)
    for name in ("today", "24h", "3d", "total"):
        tl = build_timeline(
            [tmp_path], window=name, step="1h", at_ts=AT + 0.5, clock=lambda: AT + 0.5
        )
        w = rep.window(name)
        assert (tl.window.start_ts, tl.window.cutoff_ts) == (w.start_ts, w.cutoff_ts)
        assert sum(s.input_tokens for s in tl.steps) == w.input_tokens
        assert sum(s.output_tokens for s in tl.steps) == w.output_tokens
        assert sum(s.cached_tokens for s in tl.steps) == w.cached_tokens
        assert sum(s.uncovered_seconds for s in tl.steps) == w.uncovered_seconds


def test_durations() -> None:
    assert [whole_duration(s, argument="step") for s in ("90m", "1h", "7d", "2w", "15s")] == [
        5400,
        3600,
        604800,
        1209600,
        15,
    ]
    for bad in ("0h", "h", "1y", "-1h", ""):
        with pytest.raises(BadArgument, match="is not a duration"):
            whole_duration(bad, argument="step")


def test_csv_has_every_step(tmp_path: Path) -> None:
    _mixed_history(tmp_path)
    code, out, err = run_cli(
        "timeline",
        "--root",
        str(tmp_path),
        "--csv",
        "--at",
        str(AT),
        "--window",
        "24h",
        "--step",
        "3h",
    )
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 9  # 10:00-12:00, then every 3 h on the local clock, then 09:00-10:00
    assert [r["start"][11:16] for r in rows[:3]] == ["10:00", "12:00", "15:00"]
    rep = build_report([tmp_path], at_ts=AT, clock=lambda: AT)
    w = rep.window("24h")
    assert sum(int(r["input"] or 0) for r in rows) == w.input_tokens  # unknown: empty
    assert all(r["input"] == "" for r in rows if r["figures"] == "unknown")
    assert sum(int(r["uncovered_seconds"]) for r in rows) == w.uncovered_seconds
    # 10:00-12:00 holds events k = 0..3: prompts 100..103, cached 0+32+64+0, 4 requests
    # of 7..10 tokens decoded in 0.25 s each.
    assert rows[0]["input"] == "406" and rows[0]["cached"] == "96"
    assert rows[0]["hit_rate"] == str(round(96 / 406, 6)) and rows[0]["gen_speed"] == "30.0"
    # The last hour had no traffic, and a stale heartbeat vouches for none of it: its figures
    # are blank (unknown), never 0.
    assert (rows[-1]["input"], rows[-1]["hit_rate"], rows[-1]["figures"]) == ("", "", "unknown")
    # An hour vouched for with no traffic is 0, its ratios blank (over zero).
    quiet = [r for r in rows if r["complete"] == "true" and r["input"] == "0"]
    assert all((r["hit_rate"], r["gen_speed"]) == ("", "") for r in quiet)


def test_terminal_chart_fits_80_columns(tmp_path: Path) -> None:
    _mixed_history(tmp_path)
    code, out, err = run_cli("timeline", "--root", str(tmp_path), "--at", str(AT))
    assert code == 0, err
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert (
        lines[0] == "vLLM tokens: 7d in 1 h steps, as of 2026-11-29 10:00:00 +08:00 (Asia/Shanghai)"
    )
    chart = {line[:8].strip(): line[9:] for line in lines[3:7]}
    assert set(chart) == {"input", "output", "cached", "uncov."}
    # Seven days of hours in 3 h columns: 56 columns, traffic only in the last 8 of them.
    assert len(chart["input"].split("  max")[0]) == 56
    assert chart["input"][:48].strip() == ""
    assert chart["uncov."][:47] == "█" * 47  # before the first run nothing vouches
    assert "heartbeat_stale" in out and "INCOMPLETE" in out
    code, out, _ = run_cli("timeline", "--root", str(tmp_path), "--at", str(AT), "--window", "6h")
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 80
    assert "step start" in out  # short timelines list every step


def _two_ports(root: Path) -> None:
    """:8000 (model a) for the last 6 h and :8001 (model b) for the last 3 h, one root."""
    write_ledger(
        root,
        "run-a",
        start_ts=AT - 6 * H,
        end_ts=AT,
        events=[ev(AT - 5 * H + 10, prompt=100, gen=10), ev(AT - H + 10, prompt=5, gen=1)],
        port=8000,
        model="a",
    )
    write_ledger(
        root,
        "run-b",
        start_ts=AT - 3 * H,
        end_ts=AT,
        events=[ev(AT - 2 * H + 10, prompt=40, gen=4, cached=20)],
        port=8001,
        model="b",
    )


def test_by_rows_share_the_steps_and_add_up_to_the_whole(tmp_path: Path) -> None:
    _two_ports(tmp_path)
    for by, keys in (
        ("instance", ["testhost:8000", "testhost:8001"]),
        ("model", ["a", "b"]),
        ("run", ["run-a", "run-b"]),
    ):
        tl = build_timeline([tmp_path], window="6h", step="1h", at_ts=AT, tz="UTC", by=by)
        assert [r.key for r in tl.breakdown] == keys and tl.breakdown_by == by
        for i, step in enumerate(tl.steps):
            rows = [r.steps[i] for r in tl.breakdown]
            assert all((s.start_ts, s.cutoff_ts) == (step.start_ts, step.cutoff_ts) for s in rows)
            assert sum(s.input_tokens for s in rows) == step.input_tokens
            assert sum(s.cached_tokens for s in rows) == step.cached_tokens
        b = tl.breakdown[1]
        # :8001 vouches for its own 3 h: the 3 h before it are its uncovered time.
        assert b.window.uncovered_seconds == 3 * H and b.window.input_tokens == 40
        assert [u.cause for u in b.uncovered] == ["not_recording"]
    doc = json.loads(render_json(build_timeline([tmp_path], window="6h", at_ts=AT, by="model")))
    assert [r["key"] for r in doc["breakdown"]["rows"]] == ["a", "b"]
    assert doc["breakdown"]["by"] == "model" and "filter" not in doc
    plain = json.loads(render_json(build_timeline([tmp_path], window="6h", at_ts=AT)))
    assert "breakdown" not in plain and "filter" not in plain  # schema 1 as it was


def test_by_and_filters_are_refused_or_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _two_ports(tmp_path)
    with pytest.raises(BadArgument, match="unknown breakdown 'engine'"):
        build_timeline([tmp_path], window="6h", at_ts=AT, by="engine")
    # Within MAX_STEPS per row is not enough: keys x steps must stay within MAX_ROW_STEPS.
    monkeypatch.setattr(timeline_module, "MAX_STEPS", 10**6)
    with pytest.raises(BadArgument, match="makes 2 rows of 43200 steps"):
        build_timeline([tmp_path], window="12h", step="1s", at_ts=AT, by="instance")
    only_b = build_timeline([tmp_path], window="6h", at_ts=AT, instance="testhost:8001")
    assert only_b.window.input_tokens == 40 and only_b.instance_filter == "testhost:8001"
    assert build_timeline([tmp_path], window="6h", at_ts=AT, model="a").window.input_tokens == 105
