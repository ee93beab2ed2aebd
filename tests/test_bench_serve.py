"""The serving bench's analysis of A/B pairs (bench/serve.py): medians of the pair ratios and
what the spread is made of, from hand-made servers."""

from __future__ import annotations

from typing import Any

from bench.serve import analyse


def _server(tokens_per_s: float, api_cpu: float, other: float) -> dict[str, Any]:
    return {
        "tokens_per_s": tokens_per_s,
        "api_cpu_ms_per_1k_tokens": api_cpu,
        "api_ctx_switches_per_1k_tokens": 100.0,
        "api_cpu_ms_per_s": api_cpu,
        "api_ctx_switches_per_s": 50.0,
        "quarters_tokens_per_s": [tokens_per_s] * 4,
        "other_work_cores": other,
        "seconds": 40.0,
        "start_s": 30.0,
        "tokens": 40_960,
    }


def _pair(i: int, off: dict[str, Any], on: dict[str, Any]) -> dict[str, Any]:
    order = "off on" if i % 2 == 0 else "on off"
    return {
        "pair": i + 1,
        "order": order,
        "off": off,
        "on": on,
        "ratio": on["tokens_per_s"] / off["tokens_per_s"],
        "api_cpu_ratio": on["api_cpu_ms_per_1k_tokens"] / off["api_cpu_ms_per_1k_tokens"],
        "ctx_ratio": 1.0,
    }


def test_the_medians_of_the_pair_ratios_and_the_spread() -> None:
    pairs = [
        _pair(0, _server(1000, 100, 0.1), _server(900, 110, 0.2)),
        _pair(1, _server(1000, 100, 0.3), _server(1100, 100, 0.4)),
        _pair(2, _server(1000, 100, 0.5), _server(1000, 120, 0.6)),
    ]
    a = analyse(pairs)
    t = a["tokens_per_s"]
    assert (t["ratio_median"], t["ratio_min"], t["ratio_max"]) == (1.0, 0.9, 1.1)
    assert (t["off"], t["on"]) == (1000, 1000)
    assert t["between_servers_cv"]["off"] == 0.0
    assert a["api_cpu_ms_per_1k_tokens"]["ratio_median"] == 1.1
    assert a["ratio_when_on_first"] == 1.1 and a["ratio_when_off_first"] == 0.95
    assert a["within_server_cv"] == 0.0
    assert a["other_work_cores_range"] == [0.1, 0.6]
    assert a["tokens_per_server"] == 40_960
