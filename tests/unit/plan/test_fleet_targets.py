"""How a fleet's hosts are known and why a target is down (plan/fleet_targets.py), pure: the
jobs whose targets are hosts, a host's first down target named with its job, a target up with
no ledger series not a host, whether a host's target is up now."""

from __future__ import annotations

from vllm_ledger.plan.fleet_targets import Known, LedgerTargets
from vllm_ledger.plan.prom import Target


def _labels(instance: str, job: str = "vllm-ledger", **extra: str) -> dict[str, str]:
    return {"instance": instance, "job": job, **extra}


def test_hosts_from_series_up_and_targets_and_why_each_is_down() -> None:
    known = Known.of(None, ["old-job"])
    known.add({**_labels("a:9464", host="gpu1"), "__name__": "vllm_ledger_report_ok"}, "series")
    known.add({**_labels("b:9464"), "__name__": "vllm_ledger_report_ok"}, "series")
    assert known.jobs == {"old-job", "vllm-ledger"}
    up = [
        (_labels("a:9464", host="gpu1"), 1.0),
        (_labels("localhost:9464", host="gpu1"), 0.0),  # gpu1's second target: down
        (_labels("b:9464"), 1.0),
        (_labels("idle:9464"), 1.0),  # up, no ledger series: not a host
        (_labels("node:9100", job="node"), 0.0),  # not a ledger job
    ]
    scrape = [Target(_labels("localhost:9464", host="gpu1"), "down", "connection refused")]
    targets = LedgerTargets.of(up, [], scrape, known)
    assert targets.admit(known) == ["vllm-ledger/idle:9464"]
    assert sorted(known.found) == ["b:9464", "gpu1"]
    assert known.sources("gpu1") == ("series", "up", "targets")
    assert targets.host_down("gpu1", known) == (
        "its target is down (up == 0): connection refused (job vllm-ledger)"
    )
    assert targets.host_down("b:9464", known) is None
    assert (targets.host_up("gpu1", known), targets.host_up("b:9464", known)) == (True, True)


def test_with_job_only_its_targets_are_hosts() -> None:
    known = Known.of("vllm-ledger", None)
    known.add({**_labels("a:9464", job="other"), "__name__": "vllm_ledger_report_ok"}, "series")
    assert known.jobs == {"vllm-ledger"}
    targets = LedgerTargets.of([(_labels("a:9464", job="other"), 0.0)], [], None, known)
    assert targets.up_now == {} and targets.admit(known) == []
    assert targets.host_down("a:9464", known) is None
    assert targets.host_up("a:9464", known) is False
