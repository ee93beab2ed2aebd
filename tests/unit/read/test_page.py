"""The HTML page's model: the report, a 7-day hourly timeline with the report's instant and
filters, and the breakdown by instance (the report's own, or one built for the page)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.ledgers import three_ports
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.page import PAGE_STEP, PAGE_WINDOW, build_page
from vllm_ledger.read.report import build_report
from vllm_ledger.read.timeline import build_timeline

AT = 1_800_000_000.5
INSTANCES = ["testhost:8000", "testhost:8001", "testhost:8002"]


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LedgerSet]:
    tmp_path = tmp_path_factory.mktemp("ledgers")
    three_ports(tmp_path, AT - 0.5)
    with LedgerSet.read([tmp_path], clock=lambda: AT) as ls:
        yield ls


def test_the_page_holds_the_report_a_week_by_the_hour_and_each_instance(
    ledgers: LedgerSet,
) -> None:
    assert (PAGE_WINDOW, PAGE_STEP) == ("7d", "1h")
    report = build_report(ledgers, at_ts=AT)
    page = build_page(ledgers, report)
    assert page.report is report
    assert page.timeline == build_timeline(ledgers, window="7d", step="1h", at_ts=AT, tz=report.tz)
    assert page.timeline.window.input_tokens == 110
    assert [r.key for r in page.instances] == INSTANCES
    assert [r.windows[-1].input_tokens for r in page.instances] == [100, 7, 3]


def test_a_breakdown_by_instance_is_reused_and_any_other_is_not(ledgers: LedgerSet) -> None:
    by_instance = build_report(ledgers, at_ts=AT, by="instance")
    assert build_page(ledgers, by_instance).instances == by_instance.breakdown
    by_model = build_report(ledgers, at_ts=AT, by="model")
    assert [r.key for r in by_model.breakdown] == ["a", "b", "c"]
    assert [r.key for r in build_page(ledgers, by_model).instances] == INSTANCES


def test_the_reports_filters_hold_for_the_whole_page(ledgers: LedgerSet) -> None:
    report = build_report(ledgers, at_ts=AT, instance=8001)
    page = build_page(ledgers, report)
    assert page.timeline.window.input_tokens == 7
    assert [r.key for r in page.instances] == ["testhost:8001"]
    page = build_page(ledgers, build_report(ledgers, at_ts=AT, model="a"))
    assert page.timeline.window.input_tokens == 100
    assert [r.key for r in page.instances] == ["testhost:8000"]
