"""What every doctor check shares (doctor/base.py): a row's result word, the ledger's log lines
collected while a check drives the plugin, and the newest run of a report's writers."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

from vllm_ledger.doctor.base import Row, newest_run, quiet_ledger_log


def test_a_rows_result_is_pass_warn_or_fail() -> None:
    assert Row("storage", True, "ok").result == "pass"
    assert Row("storage", True, "limited", fix="upgrade", warn=True).result == "warn"
    assert Row("storage", False, "full", fix="free space", warn=True).result == "FAIL"


def test_the_ledgers_warnings_are_collected_not_printed() -> None:
    log = logging.getLogger("vllm.ledger")
    before = (log.propagate, list(log.handlers))
    with quiet_ledger_log() as collected:
        assert log.propagate is False
        log.warning("vllm-ledger: %d events rejected", 3)
        log.info("not kept: below WARNING")
        log.error("a write failed")
    assert collected.lines == ["vllm-ledger: 3 events rejected", "a write failed"]
    assert (log.propagate, list(log.handlers)) == before


def _writer(run_id: str, first_ts: float | None) -> Any:
    return SimpleNamespace(run_id=run_id, first_ts=first_ts)


def test_the_newest_run_is_the_one_whose_first_writer_started_last() -> None:
    assert newest_run([]) is None
    assert newest_run([_writer("a", None)]) is None
    writers = [_writer("a", 100.0), _writer("b", 200.0), _writer("b", 50.0), _writer("c", 150.0)]
    assert newest_run(writers) == "c"  # b's first writer started at 50
