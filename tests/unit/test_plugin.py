"""The entry point vLLM loads (plugin.py): the write side's logger with the rank-0 maintenance
pass switched on, and the enforcer started beside it when a budgets file is named. The logger
against vLLM's real objects is tests/test_plugin.py's."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_ledger import background
from vllm_ledger.plugin import LedgerStatLogger
from vllm_ledger.write.plugin import LedgerStatLogger as WriteSideLogger


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Path, ...]]]:
    calls: list[tuple[str, tuple[Path, ...]]] = []
    monkeypatch.setattr(
        background, "start_background", lambda root: calls.append(("pass", (root,)))
    )
    monkeypatch.setattr(
        background, "start_enforcer", lambda root, cfg: calls.append(("enforcer", (root, cfg)))
    )
    monkeypatch.delenv("VLLM_LEDGER_BUDGETS", raising=False)
    monkeypatch.delenv("VLLM_LEDGER_ENFORCER", raising=False)
    return calls


def test_it_is_the_write_sides_logger() -> None:
    assert issubclass(LedgerStatLogger, WriteSideLogger)


def test_maintenance_starts_the_pass_and_with_budgets_the_enforcer(
    started: list[tuple[str, tuple[Path, ...]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Path("/srv/usage")
    LedgerStatLogger.start_maintenance(root)
    assert started == [("pass", (root,))]
    started.clear()
    monkeypatch.setenv("VLLM_LEDGER_BUDGETS", " /etc/budgets.json ")
    LedgerStatLogger.start_maintenance(root)
    assert started == [("pass", (root,)), ("enforcer", (root, Path("/etc/budgets.json")))]
    started.clear()
    monkeypatch.setenv("VLLM_LEDGER_ENFORCER", "0")  # one runs elsewhere
    LedgerStatLogger.start_maintenance(root)
    assert started == [("pass", (root,))]
