"""The notifier's systemd unit (notify/unit.py, ``notifier --print-unit``): its exact text, paths
that would need quoting refused, and the printed unit passing ``systemd-analyze verify``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.notifier_fakes import write_config
from tests.inproc import run_cli
from vllm_ledger.errors import BadArgument
from vllm_ledger.notify.unit import DEFAULT_ENV_FILE, unit_text


def test_the_unit_runs_the_notifier_and_may_write_only_beside_its_config() -> None:
    text = unit_text("/usr/bin/python3", Path("/etc/notify/private.json"))
    assert DEFAULT_ENV_FILE == "/etc/vllm-ledger/notifier.env"
    lines = text.splitlines()
    assert lines[:3] == [
        "[Unit]",
        "Description=vllm-ledger notifier: bot status, vLLM health and alerts to a chat",
        "After=network-online.target",
    ]
    assert (
        "ExecStart=/usr/bin/python3 -m vllm_ledger notifier --config /etc/notify/private.json"
        in lines
    )
    assert "EnvironmentFile=-/etc/vllm-ledger/notifier.env" in lines
    assert "ReadWritePaths=/etc/notify" in lines
    assert text.endswith("[Install]\nWantedBy=multi-user.target\n")


@pytest.mark.parametrize(
    ("python", "config", "env_file", "what"),
    [
        ("python3", "/etc/n.json", DEFAULT_ENV_FILE, "python 'python3'"),
        (
            "/usr/bin/python3",
            "/etc/my notify.json",
            DEFAULT_ENV_FILE,
            "--config '/etc/my notify.json'",
        ),
        ("/usr/bin/python3", "/etc/n.json", "/etc/$x.env", "env file '/etc/$x.env'"),
    ],
)
def test_a_path_that_would_need_quoting_is_refused(
    python: str, config: str, env_file: str, what: str
) -> None:
    with pytest.raises(BadArgument) as caught:
        unit_text(python, Path(config), env_file)
    assert str(caught.value).startswith(
        f"{what} is not an absolute path of letters, digits and ._+/@,- only: the unit would "
        "need quoting"
    )


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="needs systemd-analyze")
def test_the_printed_unit_passes_systemd_analyze(tmp_path: Path) -> None:
    config = write_config(tmp_path / "private.json", {}, None)
    rc, out, err = run_cli("notifier", "--print-unit", "--config", str(config))
    assert rc == 0, err
    assert f"ExecStart={sys.executable} -m vllm_ledger notifier --config {config}\n" in out
    unit = tmp_path / "vllm-ledger-notifier.service"
    unit.write_text(out)
    r = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "vllm-ledger-notifier.service" not in r.stderr, r.stderr  # no warning about it
