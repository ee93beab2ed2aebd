"""The figures per API port at a report's instant: each port's windows as ``report --instance
PORT`` gives them, its writers by state, and at most so many rows, live ports first."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.ledgers import three_ports
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.ports import MAX_PORT_ROWS, port_rows
from vllm_ledger.read.report import build_report

AT = 1_800_000_000.5


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LedgerSet]:
    tmp_path = tmp_path_factory.mktemp("ledgers")
    three_ports(tmp_path, AT - 0.5)
    with LedgerSet.read([tmp_path], clock=lambda: AT) as ls:
        yield ls


def test_each_port_has_its_own_windows_runs_and_writers(ledgers: LedgerSet) -> None:
    report = build_report(ledgers, at_ts=AT)
    rows = port_rows(ledgers, report)
    assert rows.truncated == 0
    assert [(r.port, r.runs, r.writers) for r in rows.rows] == [
        (8000, 1, {"closed": 1}),
        (8001, 1, {"stale": 1}),
        (8002, 1, {"alive": 1}),
    ]
    assert [[w.input_tokens for w in r.windows] for r in rows.rows] == [[100] * 5, [7] * 5, [3] * 5]
    # One instant for the document: every row is cut where the live writer (:8002) has
    # committed, as the report is, even where that port alone would reach its query's second.
    assert report.cutoff_ts == 1_799_999_999
    for row in rows.rows:
        assert {w.cutoff_ts for w in row.windows} == {report.cutoff_ts}
        alone = build_report(ledgers, at_ts=report.cutoff_ts, instance=row.port)
        assert row.windows == alone.windows, row.port


def test_live_ports_then_the_latest_seen_are_kept_and_the_rest_counted(ledgers: LedgerSet) -> None:
    assert MAX_PORT_ROWS == 16
    report = build_report(ledgers, at_ts=AT)
    two = port_rows(ledgers, report, max_rows=2)
    assert ([r.port for r in two.rows], two.truncated) == ([8000, 8002], 1)
    one = port_rows(ledgers, report, max_rows=1)
    assert ([r.port for r in one.rows], one.truncated) == ([8002], 2)


def test_the_reports_filter_chooses_the_ports(ledgers: LedgerSet) -> None:
    by_port = port_rows(ledgers, build_report(ledgers, at_ts=AT, instance=8001))
    assert [(r.port, r.windows[-1].input_tokens) for r in by_port.rows] == [(8001, 7)]
    by_key = port_rows(ledgers, build_report(ledgers, at_ts=AT, instance="testhost:8000"))
    assert [(r.port, r.windows[-1].input_tokens) for r in by_key.rows] == [(8000, 100)]
    by_model = port_rows(ledgers, build_report(ledgers, at_ts=AT, model="c"))
    assert [r.port for r in by_model.rows] == [8002]
