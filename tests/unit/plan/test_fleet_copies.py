"""Copies of one series (plan/fleet_copies.py), pure: one exporter under several ``instance``
spellings of one host is one exporter; two exporters of a host, and the same ledger instances on
two hosts, are not; copies taken once with the spellings merged."""

from __future__ import annotations

from vllm_ledger.plan.fleet_copies import Spelling, one_exporter, series_key, take_once

Sample = tuple[dict[str, str], float]


def _served(host: str, instance: str, ledger_instances: list[str], value: float) -> list[Sample]:
    """An exporter's window gauge per ledger instance, and the root's coverage (none)."""
    base = {"host": host, "instance": instance, "job": "j", "window": "7d"}
    out: list[Sample] = [
        ({**base, "__name__": "vllm_ledger_window_input_tokens", "ledger_instance": li}, value)
        for li in ledger_instances
    ]
    out.append(({**base, "__name__": "vllm_ledger_window_complete"}, 1.0))
    return out


def test_spellings_of_one_host_serving_the_same_ledger_instances_are_one_exporter() -> None:
    samples = [
        *_served("gpu1", "localhost:9464", ["gpu1:8000", "gpu1:8001"], 5.0),
        *_served("gpu1", "127.0.0.1:9464", ["gpu1:8001", "gpu1:8000"], 5.0),
        *_served("gpu1", "[::1]:9464", ["gpu1:8000", "gpu1:8001"], 5.0),
        *_served("gpu1", "127.0.0.1:9465", ["gpu1:8002"], 1.0),  # another exporter of gpu1
        *_served("gpu2", "gpu2:9464", ["gpu1:8000", "gpu1:8001"], 5.0),  # another host
        *_served("gpu3", "a:9464", [], 0.0),  # nothing tells these two apart: left apart
        *_served("gpu3", "b:9464", [], 0.0),
    ]
    exporters, spellings = one_exporter(samples)
    assert spellings == [
        Spelling(
            "gpu1",
            ("127.0.0.1:9464", "[::1]:9464", "localhost:9464"),
            ("gpu1:8000", "gpu1:8001"),
        )
    ]
    assert exporters == {
        ("gpu1", "127.0.0.1:9464"): "127.0.0.1:9464",
        ("gpu1", "[::1]:9464"): "127.0.0.1:9464",
        ("gpu1", "localhost:9464"): "127.0.0.1:9464",
    }
    assert spellings[0].note() == (
        "127.0.0.1:9464, [::1]:9464 and localhost:9464 are one exporter of host gpu1 (the "
        "same ledger_instance labels under 3 instance spellings): counted once"
    )
    once, dups, differ, conflicts = take_once(samples, exporters)
    # gpu1's first exporter: 2 gauges and its coverage, each seen three times, taken once.
    assert (len(once), dups, differ, conflicts) == (3 + 2 + 3 + 1 + 1, 3, {"instance"}, [])
    assert [labels["instance"] for labels, _v in once if labels["host"] == "gpu1"] == [
        "localhost:9464",  # the first copy seen is kept, whatever its spelling
        "localhost:9464",
        "localhost:9464",
        "127.0.0.1:9465",
        "127.0.0.1:9465",
    ]


def test_without_the_spellings_each_instance_is_its_own_series() -> None:
    samples = [
        *_served("gpu1", "localhost:9464", ["gpu1:8000"], 5.0),
        *_served("gpu1", "127.0.0.1:9464", ["gpu1:8000"], 5.0),
    ]
    assert take_once(samples)[1] == 0
    labels = samples[0][0]
    assert series_key(labels) != series_key(samples[2][0])
    exporters = {("gpu1", "localhost:9464"): "127.0.0.1:9464"}
    assert series_key(labels, exporters) == series_key(samples[2][0], exporters)
