"""plan/fleet_read: the instant queries a fleet is read from, and read_fleet asking them, the jobs
and the targets at one instant."""

from __future__ import annotations

from tests.unit.plan.test_fleet import AT, _answer
from vllm_ledger.errors import RemoteError
from vllm_ledger.plan.fleet_read import queries, read_fleet


def test_queries_select_the_window_gauges_and_a_job() -> None:
    q = queries("vllm-ledger", 3600)
    assert q["newest"] == 'timestamp(vllm_ledger_report_ok{job="vllm-ledger"})'
    assert q["seen"] == 'max_over_time(vllm_ledger_report_ok{job="vllm-ledger"}[3600s])'
    assert q["up"] == 'up{job="vllm-ledger"}'
    assert q["windows"].startswith('{__name__=~"vllm_ledger_(report_ok|window_(input_tokens|')
    assert q["windows"].endswith('|problems))",job="vllm-ledger"}')
    assert queries()["up"] == "up"


def test_read_fleet_asks_the_queries_the_jobs_and_the_targets_at_one_instant() -> None:
    asked: list[str] = []

    def fetch(url: str) -> bytes:
        asked.append(url)
        if "/api/v1/label/job/values" in url:
            return b'{"status":"success","data":["vllm-ledger"]}'
        if "/api/v1/targets" in url:
            raise RemoteError(f"cannot read {url}: HTTP 404 Not Found", url)
        return _answer([])

    fleet = read_fleet("http://p:9090", clock=lambda: AT, fetch=fetch)
    assert len(asked) == 8
    assert [u.split("time=")[-1] for u in asked[:6]] == [
        *["1800000000.000"] * 5,
        "1800000300.000",  # the samples stamped ahead of the query's instant
    ]
    assert "start=1799395200.000&end=1800000000.000" in asked[6]  # the jobs of the last 7 days
    assert asked[7] == "http://p:9090/api/v1/targets?state=active"
    assert fleet.at_ts == AT and fleet.hosts == ()
    assert fleet.notes == (
        "/api/v1/targets was not read (cannot read http://p:9090/api/v1/targets?state=active: "
        "HTTP 404 Not Found): hosts come from the series and up only",
    )
    asked.clear()
    read_fleet("http://p:9090", job="vllm-ledger", clock=lambda: AT, fetch=fetch)
    assert not any("/label/" in u for u in asked)  # --job: no jobs to find
