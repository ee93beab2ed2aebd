"""Fixtures for the fault suite: an isolated ledger root for the in-process plugin."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def ledger_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ledger"
    monkeypatch.setenv("VLLM_LEDGER_DIR", str(root))
    monkeypatch.setenv("VLLM_LEDGER_RUN_ID", "run-a")
    monkeypatch.setenv("VLLM_LEDGER_MAINTENANCE", "0")
    monkeypatch.delenv("VLLM_LEDGER_DISABLE", raising=False)
    monkeypatch.delenv("VLLM_LEDGER_WRITERS", raising=False)
    return root
