"""deploy/ledger_units.py: the ledger's own units beside vLLM's (systemd-analyze verifies them
in tests/unit/deploy/test_units.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_ledger.deploy.host import Host
from vllm_ledger.deploy.ledger_units import CHECK_CALENDAR, ledger_units, notifier_unit
from vllm_ledger.errors import ConfigError

HOST = Host(model="m", port=8001, artifacts_dir="/srv/a", user="svc", log_format="json")


def test_the_exporter_check_and_its_timer_named_after_the_vllm_unit() -> None:
    units = ledger_units(HOST, listen="127.0.0.1:9464")
    assert [u.name for u in units] == [
        "vllm-8001-ledger-exporter.service",
        "vllm-8001-ledger-check.service",
        "vllm-8001-ledger-check.timer",
    ]
    exporter, check, timer = (u.text for u in units)
    assert "ExecStart=/usr/bin/env vllm-ledger exporter --root /srv/a/usage --listen" in exporter
    assert "User=svc\n" in exporter and "Environment=VLLM_LEDGER_LOG_FORMAT=json\n" in exporter
    assert "ExecStart=/usr/bin/env vllm-ledger check --root /srv/a/usage\n" in check
    assert f"OnCalendar={CHECK_CALENDAR}\n" in timer
    assert "Unit=vllm-8001-ledger-check.service\n" in timer


def test_the_notifier_runs_the_ledgers_python_with_its_code() -> None:
    config = Path("/etc/vllm-ledger/notifier.json")
    units = ledger_units(HOST, listen="127.0.0.1:9464", notifier_config=config)
    assert units[-1].name == "vllm-ledger-notifier.service"
    coded = Host(model="m", ledger_code_dir="/opt/code", ledger_python="/opt/py/bin/python")
    text = notifier_unit(coded, config)
    assert text.startswith("# The notifier (bot) service, rendered by vllm-ledger ")
    assert "[Service]\nEnvironment=PYTHONPATH=/opt/code\n" in text
    assert "/opt/py/bin/python" in text


def test_the_units_need_the_ledgers_folder() -> None:
    with pytest.raises(ConfigError, match=r"^artifacts_dir: required with usage"):
        ledger_units(Host(model="m"), listen="127.0.0.1:9464")
