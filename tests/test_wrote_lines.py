"""Every command that writes a file says so on stderr, one `wrote PATH` line per file (the
path absolute, even when given relative, and terminal-safe); stdout stays for what it prints.

`ramp` (it needs a server) is checked in tests/e2e/test_cost_ramp.py; `report --html` and
`export --output` by their own tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, run_cli
from vllm_ledger.commands._files import wrote_line

HOST = REPO / "tests" / "data" / "render" / "cpu-bare.json"


def _wrote(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("wrote ")]


def test_the_line_is_absolute_and_terminal_safe(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    assert wrote_line("run.sh") == f"wrote {tmp_path / 'run.sh'}"
    assert wrote_line(Path("a") / "b.yml", " (x)") == f"wrote {tmp_path / 'a' / 'b.yml'} (x)"
    assert wrote_line("/srv/x\x1b[2Jy") == "wrote /srv/x\\x1b[2Jy"


@pytest.mark.parametrize(
    ("argv", "files"),
    [
        (("render", "--host", str(HOST), "--output", "run.sh", "--mode", "bare"), ["run.sh"]),
        (("render", "--host", str(HOST), "--output", "vllm.service", "--mode", "systemd"),
         ["vllm.service", "vllm.sysusers.conf"]),
        (("render", "--host", str(HOST), "--units", "units"),
         ["units/vllm-8001-ledger-check.service", "units/vllm-8001-ledger-check.timer",
          "units/vllm-8001-ledger-exporter.service"]),
        (("bundle", "--output", "plugin"), ["plugin"]),
        (("observability", "--output", "stack", "--runbook-url", "https://h.example/r.md"),
         ["stack/prometheus.yml", "stack/alerts.yml", "stack/alertmanager.yml",
          "stack/compose.yaml", "stack/grafana/provisioning/datasources/prometheus.yml",
          "stack/grafana/provisioning/dashboards/vllm-ledger.yml",
          "stack/grafana/dashboards/vllm-ledger.json", "stack/alertmanager-token"]),
    ],
    ids=["render-bare", "render-systemd", "render-units", "bundle", "observability"],
)  # fmt: skip
def test_each_written_file_has_its_line(
    tmp_path: Path, monkeypatch: Any, argv: tuple[str, ...], files: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # every path given relative: the lines name them absolute
    code, _out, err = run_cli(*argv)
    assert code == 0, err
    lines = _wrote(err)
    assert sorted(ln.split(" (")[0] for ln in lines) == sorted(
        f"wrote {tmp_path / f}" for f in files
    )
    for f in files:
        assert (tmp_path / f).exists()


def test_bundle_names_its_folder_absolute_in_every_line(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("bundle", "--output", "plugin")
    assert code == 0, err
    assert err.startswith(f"wrote {tmp_path / 'plugin'} (a plugin bundle of ")
    assert out == (
        f"enable with: PYTHONPATH={tmp_path / 'plugin'} VLLM_LEDGER_DIR=/path/to/ledgers "
        "vllm serve ...\n"
    )
