"""``vllm-ledger verify`` pointed at the wrong address: a URL without its /metrics path, a page
that is not vLLM's metrics, nothing listening; each one line that says what to give instead.
What verify compares is tests/unit/read/test_verify.py's."""

from __future__ import annotations

from pathlib import Path

from tests.inproc import run_cli
from tests.rawhttp import RawServer, canned, response
from tests.unit.read.test_verify import METRICS, MetricsServer


def test_verify_without_metrics_in_the_url_says_add_metrics(srv: Path) -> None:
    with MetricsServer([METRICS]) as server:
        bare = server.url.removesuffix("/metrics")
        code, out, err = run_cli("verify", "--root", str(srv), "--metrics-url", bare)
    assert (code, out) == (2, "")
    assert err == (
        f"vllm-ledger: error: cannot read {bare}: HTTP 404 Not Found: add /metrics: "
        f"--metrics-url {bare}/metrics\n"
    )


def test_a_url_that_answers_but_not_with_metrics_says_add_metrics(srv: Path) -> None:
    page = response("200 OK", b"<html>vLLM API server</html>", ("Content-Type: text/html",))
    with RawServer(canned(page)) as server:
        code, out, err = run_cli("verify", "--root", str(srv), "--metrics-url", server.url("/"))
    assert (code, out) == (2, "")
    assert err == (
        f"vllm-ledger: error: {server.url('/')} answers, but not with vLLM's metrics: "
        f"add /metrics: --metrics-url {server.url('/metrics')}\n"
    )


def test_nothing_listening_still_asks_whether_vllm_runs(srv: Path) -> None:
    with MetricsServer([METRICS]) as server:
        url = server.url
    code, _out, err = run_cli("verify", "--root", str(srv), "--metrics-url", url)
    assert code == 2 and err.endswith("Connection refused: is vLLM running there?\n"), err
