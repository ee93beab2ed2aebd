"""The span a writer vouches for: extended by each commit, new after a gap, a step back or a
new file; each commit takes the next sequence number and writes the marker beside the file."""

from __future__ import annotations

from pathlib import Path

from vllm_ledger.format import smallfiles
from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.write.batch import Batch
from vllm_ledger.write.ledgerfile import LedgerFile
from vllm_ledger.write.span import Span
from vllm_ledger.write.tags import TagBook

NOW = 1_800_000_000.0
IDENT = WriterIdentity(
    "run-a", 0, 1, pid=7, instance=InstanceInfo(("tiny",), 8000, "testhost", "0.32.0")
)


def _commit(span: Span, f: LedgerFile, batch: Batch, ts: float) -> None:
    span.commit(f.connection(ts), batch, f, ts, final=False)
    batch.committed()


def _spans(f: LedgerFile) -> list[tuple[float, float]]:
    assert f.conn is not None
    return list(f.conn.execute("SELECT start_ts, end_ts FROM spans ORDER BY start_ts"))


def test_commits_extend_one_span_until_a_gap_a_step_back_or_a_break(tmp_path: Path) -> None:
    f = LedgerFile(tmp_path, IDENT, integrity_check_interval_s=60.0, first_check_mono=60.0)
    batch = Batch(TagBook(), lambda: NOW)
    span = Span(break_s=30.0)
    batch.accumulate((NOW + 0.5, 0, 10, 2, 4, ()))
    _commit(span, f, batch, NOW + 1)
    _commit(span, f, batch, NOW + 5)
    assert _spans(f) == [(NOW + 1, NOW + 5)]
    _commit(span, f, batch, NOW + 50)  # past the 30 s break
    _commit(span, f, batch, NOW + 45)  # the clock stepped back
    span.broken()
    _commit(span, f, batch, NOW + 46)
    assert _spans(f) == [
        (NOW + 1, NOW + 5),
        (NOW + 45, NOW + 45),
        (NOW + 46, NOW + 46),
        (NOW + 50, NOW + 50),
    ]
    assert span.seq == 5 and span.end_ts == NOW + 46
    assert f.path is not None and smallfiles.read_sequence_marker(f.path) == (5, NOW + 46)
    span.new_file()
    assert (span.seq, span.span_id) == (0, None)
