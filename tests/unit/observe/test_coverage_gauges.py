"""The exporter's coverage and writer gauges (observe/coverage_gauges.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prometheus_client.core import GaugeMetricFamily

from tests.ledgers import ev, write_ledger
from vllm_ledger.names import LEDGER_WINDOW_COMPLETE, LEDGER_WINDOW_PROBLEMS, LEDGER_WRITERS
from vllm_ledger.observe.counters import VanishedRun
from vllm_ledger.observe.coverage_gauges import (
    RUN_VANISHED,
    WRITER_STATES,
    coverage_families,
    writer_families,
)
from vllm_ledger.read.report import build_report

T0 = 1_800_000_000


def _samples(fams: list[Any], name: str) -> list[tuple[dict[str, str], float]]:
    fam = next(f for f in fams if f.name == name)
    return [(dict(s.labels), s.value) for s in fam.samples]


def test_a_vanished_run_is_a_problem_of_the_root_and_of_its_lost_instance(tmp_path: Path) -> None:
    write_ledger(tmp_path, "r1", start_ts=T0, end_ts=T0 + 60, events=[ev(T0 + 5, 40, 7, 16)])
    report = build_report([tmp_path], at_ts=T0 + 61, clock=lambda: T0 + 61, by="instance")
    gone = VanishedRun("r0", T0 - 100, T0 - 50, (0,) * 6, ("gpu9:8000",))
    fams = coverage_families(GaugeMetricFamily, report, [gone])
    problems = _samples(fams, LEDGER_WINDOW_PROBLEMS)
    assert ({"window": "total", "problem": RUN_VANISHED}, 1) in problems
    lost = {"window": "total", "problem": RUN_VANISHED, "ledger_instance": "gpu9:8000"}
    assert (lost, 1.0) in problems
    complete = _samples(fams, LEDGER_WINDOW_COMPLETE)
    assert ({"window": "total", "ledger_instance": "gpu9:8000"}, 0.0) in complete
    assert ({"window": "total"}, 0.0) in complete


def test_writers_per_state_of_each_instance(tmp_path: Path) -> None:
    write_ledger(tmp_path, "r1", start_ts=T0, end_ts=T0 + 60)
    report = build_report([tmp_path], at_ts=T0 + 61, clock=lambda: T0 + 61)
    by_state = _samples(writer_families(GaugeMetricFamily, report), LEDGER_WRITERS)
    assert [labels["state"] for labels, _ in by_state] == list(WRITER_STATES)
    assert sum(v for _, v in by_state) == 1
