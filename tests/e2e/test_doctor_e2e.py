"""`vllm-ledger doctor` against a real vLLM 0.32 on CPU with the ledger and the attribution
middleware on: all six checks pass (budgets: off, no budgets file).

One vLLM start. The same live ledger is then compared with another server's /metrics: the
real server's own /metrics text, captured, served from a local HTTP server on 127.0.0.1 with
its ``_created`` samples an hour later (a second real vLLM would add a minute of start-up).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from devtools.traffic import send_mix
from tests.conftest import run_cli
from tests.e2e.settle import settle
from tests.unit.read.test_verify import MetricsServer, counters_created_ts, created_at

pytestmark = pytest.mark.e2e


def test_doctor_passes_all_six_against_a_real_vllm(vllm_server, tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    s = vllm_server(root, extra_args=("--middleware", "vllm_ledger.middleware.LedgerMiddleware"))
    send_mix(s.url, "tiny", rounds=1)
    counters = settle(s)
    code, out, err = run_cli(
        "doctor", "--metrics-url", s.url + "/metrics", "--root", str(root),
        env={"VLLM_LEDGER_BUDGETS": ""},
    )  # fmt: skip
    assert code == 0, out + err
    lines = out.splitlines()
    assert [ln.split()[:2] for ln in lines[1:7]] == [
        ["interface", "pass"],
        ["agreement", "pass"],
        ["writers", "pass"],
        ["storage", "pass"],
        ["attribution", "pass"],
        ["budgets", "pass"],
    ], out
    assert lines[1].startswith("interface    pass    vLLM 0.32.0: the 8 stats fields")
    figures = f"input {counters['input']:,}, output {counters['output']:,}"
    assert figures in lines[2] and lines[2].endswith(f"equal to {s.url}/metrics")
    assert ", 1 expected writer: w0 alive (heartbeat " in lines[3]
    assert lines[6].endswith(
        "off: no budgets file (--budgets or $VLLM_LEDGER_BUDGETS); nothing is refused"
    )
    assert lines[-1] == "6 of 6 checks pass"

    # The real server's counters were made with the run (what `verify` relies on).
    live = s.metrics_text()
    created = counters_created_ts(live)
    assert created is not None and abs(created - time.time()) < 600

    with MetricsServer([created_at(live, created + 3600)]) as other:
        code, out, _ = run_cli(
            "doctor", "--only", "agreement", "--metrics-url", other.url, "--root", str(root)
        )
    assert code == 1
    row = out.splitlines()[1]
    assert row.startswith("agreement  FAIL    run ")
    assert "/metrics is another server's (or another launch's)" in row
    # An hour after the counters were made, the run started about with them: some 3,600 s.
    assert re.search(r", 3,[56]\d\d s after this run started \(", row), row
