"""Values vLLM could hand the plugin that the reader would refuse: each is checked against the
one table of bounds (``bounds.py``) before it counts. Every bad event is ``rejected_input``,
every good one in the same batches counts exactly, the recorder thread lives on, and the file
stays readable."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.faults.vllm_stats import iteration, plugin
from vllm_ledger.format import writes as ledger_writes  # what the recorder commits through
from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.read.check import check
from vllm_ledger.read.report import build_report
from vllm_ledger.write.recorder import Recorder

BAD_ENGINES: list[Any] = [-1, 70000, 2**63, "0", True, 1.0, None]
# 1.0 s after the epoch, 1999-12-31, 2477 (a monotonic clock, milliseconds), NaN, 2100-01-01.
BAD_TIMES: list[float] = [1.0, 946_684_000.0, 1.6e10, float("nan"), 4_102_444_800.0]


def _report(root: Path) -> Any:
    at = time.time() + 1
    return build_report([root], at_ts=at, clock=lambda: at).window("total")


def test_bad_engines_and_times_are_rejected_and_good_events_beside_them_count(
    ledger_env: Path,
) -> None:
    p = plugin()
    rec = p.recorder
    assert rec is not None
    now = time.time() - 3
    good = 0
    for engine in BAD_ENGINES:
        # A good event before and after each bad one, in the same second and batch.
        p.record(None, iteration(now, prompt=100, gen=1), engine_idx=0)
        p.record(None, iteration(now, prompt=400, cached=10, gen=2), engine_idx=engine)
        p.record(None, iteration(now + 1, prompt=1, gen=1, finished=((1, 0.5),)), engine_idx=0)
        good += 2
    for ts in BAD_TIMES:
        p.record(None, iteration(ts, prompt=400, gen=2), engine_idx=0)
    bad = len(BAD_ENGINES) + len(BAD_TIMES)
    assert p.faults_total == bad
    assert rec.alive
    p.shutdown()
    assert rec.rejected_total == bad and rec.internal_faults_total == 0
    total = _report(ledger_env)
    n = len(BAD_ENGINES)
    assert (total.input_tokens, total.output_tokens, total.cached_tokens) == (101 * n, 2 * n, 0)
    assert total.requests == n
    assert total.problems == {"rejected_input": bad}
    assert total.complete is False
    # The file reads whole (no writer refused as bad_values or unreadable); what check names
    # for the root is the rejected input, and only that.
    verdicts = check([ledger_env], clock=lambda: time.time() + 1)
    assert [(v.verdict, v.ok) for v in verdicts if not v.root] == [("ok", True)]
    assert [v.verdict for v in verdicts if v.root] == ["rejected_input"]


def _recorder(root: Path) -> Recorder:
    ident = WriterIdentity("run-r", 0, 1, (0,), 1, InstanceInfo(("m",), 8000, "h"))
    return Recorder(root, ident)


@pytest.mark.parametrize("engine", [-1, 70000, 2**63, "0", True])
def test_the_recorder_refuses_what_the_plugin_would_have_wherever_it_comes_from(
    tmp_path: Path, engine: Any
) -> None:
    """``submit`` is public: an event past the bounds never reaches a row or kills a flush."""
    rec = _recorder(tmp_path)
    now = time.time() - 2
    rec.submit((now, 0, 200, 1, 0, ()))
    rec.submit((now, engine, 400, 1, 0, ()))
    rec.submit((now, 0, 200, 1, 0, ((3, 0.25),)))
    assert rec.pump(final=True)
    assert rec.rejected_total == 1
    total = _report(tmp_path)
    assert (total.input_tokens, total.output_tokens, total.requests) == (400, 2, 1)
    assert total.problems == {"rejected_input": 1}
    with sqlite3.connect(next(tmp_path.rglob("*.ledger.sqlite"))) as conn:
        engines = {e for (e,) in conn.execute("SELECT DISTINCT engine FROM buckets")}
    assert engines == {0}


def test_the_recorder_thread_survives_a_fault_in_a_flush_and_keeps_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception no check foresaw (here: the batch writer raising OverflowError once) is
    counted and logged; the thread goes on, the batch is retried and nothing is lost."""
    real = ledger_writes.commit_batch
    calls = {"n": 0}
    committed = threading.Event()

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OverflowError("Python int too large to convert to SQLite INTEGER")
        out = real(*args, **kwargs)
        if kwargs.get("seconds"):
            committed.set()
        return out

    monkeypatch.setattr(ledger_writes, "commit_batch", flaky)
    rec = _recorder(tmp_path)
    rec.start()
    now = time.time()
    rec.submit((now, 0, 123, 4, 0, ()))
    assert committed.wait(30), rec.last_error
    assert rec.alive
    assert rec.internal_faults_total == 1 and rec.commit_failures_total == 1
    rec.submit((time.time(), 0, 7, 1, 0, ()))
    assert rec.close()
    total = _report(tmp_path)
    assert (total.input_tokens, total.output_tokens) == (130, 5)
    assert "lost_events" not in total.problems


def test_a_fault_while_an_event_is_taken_in_rejects_that_event_only(tmp_path: Path) -> None:
    rec = _recorder(tmp_path)
    now = time.time() - 2
    rec.submit((now, 0, 10, 1, 0, ()))
    rec.buffer.append(("faults", None))  # a hand-over that is not one: the take-in raises
    rec.buffer.append(object())  # not an event at all
    rec.submit((now, 0, 10, 1, 0, ()))
    assert rec.pump(final=True)
    assert rec.internal_faults_total == 2 and rec.rejected_total == 2
    total = _report(tmp_path)
    assert (total.input_tokens, total.output_tokens) == (20, 2)
    assert total.problems == {"rejected_input": 2}


def test_a_wall_clock_outside_2000_2100_commits_nothing_a_reader_would_refuse(
    tmp_path: Path,
) -> None:
    ident = WriterIdentity("run-c", 0, 1, (0,), 1, InstanceInfo(("m",), 8000, "h"))
    clock = {"now": 5.0}  # a machine whose clock was never set
    rec = Recorder(tmp_path, ident, clock=lambda: clock["now"], max_retries=5)
    now = time.time() - 2
    rec.submit((now, 0, 10, 1, 0, ()))
    rec.submit((now, -1, 10, 1, 0, ()))  # rejected while the clock reads 1970
    assert not rec.pump()
    assert "outside 2000-2100" in (rec.last_error or "")
    assert list(tmp_path.rglob("*.ledger.sqlite")) == []
    clock["now"] = time.time()  # the clock is set: the batch is kept and committed
    assert rec.pump(final=True)
    total = _report(tmp_path)
    assert (total.input_tokens, total.output_tokens) == (10, 1)
    assert total.problems == {"rejected_input": 1}
    assert all(v.ok for v in check([tmp_path], clock=lambda: time.time() + 1) if not v.root)
