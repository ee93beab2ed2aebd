"""``vllm-ledger fleet``: a Prometheus that cannot be read is one line and exit 2 (the fleet's
figures are tests/unit/plan/test_fleet*.py's and tests/e2e/test_fleet.py's)."""

from __future__ import annotations

import pytest

from devtools.vllm_server import free_port
from vllm_ledger import cli


def test_prometheus_down_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    assert cli.main(["fleet", "--prometheus", url]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"vllm-ledger: error: cannot read {url}/api/v1/query?query=")
    assert err.endswith(": Connection refused: check that Prometheus is up and not overloaded\n")
    assert len(err.splitlines()) == 1
