"""The entry point vLLM loads (plugin.py): the write side's logger with the rank-0 maintenance
pass switched on, and the enforcer started beside it when a budgets file is named; the deploy_usage
alias of the writers' count read by the real class. Importing the plugin imports vLLM (about
10 s of CPU), so these tests are here and not in the fast unit lane. The logger against vLLM's
real objects is tests/test_plugin.py's."""

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


def test_the_plugin_reads_the_alias_and_notes_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The real plugin class on vLLM's real config: LLMDEPLOY_USAGE_WRITERS=8 sets 8 expected
    writers, with one log line per process however many writers start; a bad value never
    raises (the writer keeps the API process count)."""
    pytest.importorskip("vllm")
    from vllm.config import ParallelConfig, VllmConfig

    from vllm_ledger.write import plugin as adapter
    from vllm_ledger.write.plugin import LedgerStatLogger

    monkeypatch.setattr(adapter, "_alias_noted", set())
    monkeypatch.setenv("VLLM_LEDGER_DIR", str(tmp_path / "ledger"))
    monkeypatch.setenv("VLLM_LEDGER_RUN_ID", "run-a")
    monkeypatch.delenv("VLLM_LEDGER_DISABLE", raising=False)
    monkeypatch.delenv("VLLM_LEDGER_WRITERS", raising=False)
    monkeypatch.setenv("LLMDEPLOY_USAGE_WRITERS", "8")
    caplog.set_level("INFO", logger="vllm.ledger.plugin")

    def config(count: int, rank: int) -> VllmConfig:
        return VllmConfig(
            parallel_config=ParallelConfig(_api_process_count=count, _api_process_rank=rank)
        )

    expected = []
    for rank in (0, 1):
        p = LedgerStatLogger(config(2, rank), [0, 1])
        assert p.recorder is not None
        expected.append(p.recorder.identity.expected_writers)
        p.shutdown()
    assert expected == [8, 8]
    notes = [r.getMessage() for r in caplog.records if "LLMDEPLOY_USAGE_WRITERS" in r.getMessage()]
    assert notes == [
        "vllm-ledger: LLMDEPLOY_USAGE_WRITERS=8 read as VLLM_LEDGER_WRITERS (the deploy_usage "
        "name still works; docs/migrating-from-deploy-usage.md)"
    ]

    caplog.clear()
    monkeypatch.setattr(adapter, "_alias_noted", set())
    monkeypatch.setenv("LLMDEPLOY_USAGE_WRITERS", "\u00b2")
    p = LedgerStatLogger(config(2, 0), [0, 1])
    assert p.recorder is not None and p.recorder.identity.expected_writers == 2
    p.shutdown()
    (warning,) = [r for r in caplog.records if "LLMDEPLOY_USAGE_WRITERS" in r.getMessage()]
    assert warning.levelname == "WARNING"
    assert "is not a whole number from 1 to 4096: ignored" in warning.getMessage()
