"""The recorder's log: a failing write or a fault of its own at most once a minute, counted."""

from __future__ import annotations

import logging

import pytest

from vllm_ledger.write.faultlog import FAILURE_LOG_INTERVAL_S, FaultLog


def test_a_failing_write_is_logged_once_a_minute_with_the_count_since(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = FaultLog()
    with caplog.at_level(logging.ERROR, logger="vllm.ledger.recorder"):
        log.write_failed("OperationalError: disk I/O error", 0.0)
        log.write_failed("OperationalError: disk I/O error", 1.0)
        log.write_failed("OperationalError: disk I/O error", 2.0)
        log.write_failed("OperationalError: disk I/O error", FAILURE_LOG_INTERVAL_S)
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert "write failed (1 time(s)" in messages[0] and "disk I/O error" in messages[0]
    assert "write failed (3 time(s)" in messages[1]


def test_a_fault_of_its_own_is_throttled_apart_from_failing_writes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = FaultLog()
    with caplog.at_level(logging.ERROR, logger="vllm.ledger.recorder"):
        log.write_failed("a", 0.0)
        log.internal_fault("TypeError: b", 0.5)
        log.internal_fault("TypeError: b", 0.6)
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2 and "recorder fault (1 time(s)" in messages[1]


def test_other_warnings_are_logged_once_per_key(caplog: pytest.LogCaptureFixture) -> None:
    log = FaultLog()
    with caplog.at_level(logging.WARNING, logger="vllm.ledger.recorder"):
        for _ in range(3):
            log.once("compact:x", "vllm-ledger: compaction failed: %s", "x")
        log.once("compact:y", "vllm-ledger: compaction failed: %s", "y")
    assert [r.getMessage() for r in caplog.records] == [
        "vllm-ledger: compaction failed: x",
        "vllm-ledger: compaction failed: y",
    ]
