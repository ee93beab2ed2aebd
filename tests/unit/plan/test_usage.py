"""What the cost model measures: busy seconds narrowed from hours to seconds, the average
power from Prometheus (with what the store said of each answer: a partial one is named, the
power not complete), and one window's tokens, busy seconds and power together."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.ledgers import ev, write_ledger
from vllm_ledger.errors import BadArgument, RemoteError
from vllm_ledger.plan.prom import Said
from vllm_ledger.plan.usage import busy_seconds, measure, prometheus_power
from vllm_ledger.units import format_duration
from vllm_ledger.write import compaction

EMPTY = b'{"status":"success","data":{"resultType":"vector","result":[]}}'
DCGM_1H = "sum(avg_over_time(DCGM_FI_DEV_POWER_USAGE[3600s]))"


def test_busy_seconds_counts_seconds_with_output(tmp_path: Path) -> None:
    t0 = 1_800_000_000  # an hour boundary
    events = [
        ev(t0 + 5.1, prompt=10, gen=3),
        ev(t0 + 5.7, gen=2),
        ev(t0 + 61.2, gen=1),
        ev(t0 + 62.5, prompt=40),
        ev(t0 + 3700.5, gen=4, engine=1),
    ]
    write_ledger(tmp_path, "run-a", start_ts=t0, end_ts=t0 + 3720, events=events)
    # seconds t0+5, t0+61, t0+3700 had output; t0+62 only prompt
    assert busy_seconds([tmp_path], t0, t0 + 3720, at_ts=t0 + 3720) == (3, 1)
    assert busy_seconds([tmp_path], t0 + 6, t0 + 3720, at_ts=t0 + 3720) == (2, 1)
    # Too many busy minutes for the second pass: whole busy minutes count (resolution 60).
    assert busy_seconds([tmp_path], t0, t0 + 3720, at_ts=t0 + 3720, max_second_windows=100) == (
        180,
        60,
    )


def test_busy_seconds_in_compacted_hours_count_whole(tmp_path: Path) -> None:
    t0 = 1_800_000_000
    events = [ev(t0 + 5.1, gen=3), ev(t0 + 7200 + 30.5, gen=2)]
    write_ledger(tmp_path, "run-a", start_ts=t0, end_ts=t0 + 7300, events=events)
    assert busy_seconds([tmp_path], t0, t0 + 7300, at_ts=t0 + 7300) == (2, 1)
    # Compact as if 9 days later: the first two hours survive only as hourly rows.
    for f in tmp_path.rglob("*.ledger.sqlite"):
        assert compaction.compact_file(f, t0 + 7200 + compaction.HORIZON_S).status == "compacted"
    assert busy_seconds([tmp_path], t0, t0 + 7300, at_ts=t0 + 7300) == (3600 + 1, 3600)


def test_prometheus_power_query_and_fallback() -> None:
    asked: list[str] = []

    def fetch(url: str) -> bytes:
        asked.append(url)
        if "DCGM" in url:
            return b'{"status":"success","data":{"resultType":"vector","result":[]}}'
        return (
            b'{"status":"success","data":{"resultType":"vector","result":'
            b'[{"metric":{},"value":[1800000000,"312.5"]}]}}'
        )

    watts, expr, said = prometheus_power("http://prom:9090", 1_799_996_400, 1_800_000_000, fetch)
    assert watts == 312.5
    assert expr == "sum(avg_over_time(vllm_ledger_gpu_power_watts[3600s]))"
    assert said == {DCGM_1H: Said(), expr: Said()}  # each query asked, the store said nothing
    assert "time=1800000000.000" in asked[0] and "DCGM_FI_DEV_POWER_USAGE" in asked[0]
    assert format_duration(0.2, "range") == "1s"


def test_measure_takes_one_windows_tokens_busy_seconds_and_power(tmp_path: Path) -> None:
    t0 = 1_800_000_000
    events = [ev(t0 + 5.5, prompt=100, cached=40, gen=3), ev(t0 + 9.5, gen=2)]
    write_ledger(
        tmp_path, "run-a", start_ts=t0, end_ts=t0 + 60, events=events, heartbeat_every_s=20
    )
    m = measure([tmp_path], "24h", power_watts=475.0, at_ts=t0 + 60, clock=lambda: t0 + 60)
    assert (m.power_source, m.busy_resolution_s, m.window.name) == ("given", 1, "24h")
    u = m.usage
    assert (u.wall_seconds, u.busy_seconds, u.power_watts) == (86400, 2, 475.0)
    assert (u.input_tokens, u.output_tokens, u.cached_tokens) == (100, 5, 40)
    assert u.uncovered_seconds == 86400 - 60
    with pytest.raises(BadArgument, match="give the machine's power"):
        measure([tmp_path], "24h", at_ts=t0 + 60, clock=lambda: t0 + 60)
    with pytest.raises(BadArgument, match="unknown window"):
        measure([tmp_path], "fortnight", power_watts=1.0, at_ts=t0 + 60, clock=lambda: t0 + 60)
    with pytest.raises(RemoteError, match="has no DCGM_FI_DEV_POWER_USAGE or"):
        measure(
            [tmp_path],
            "24h",
            prometheus_url="http://prom:9090",
            at_ts=t0 + 60,
            clock=lambda: t0 + 60,
            fetch=lambda _url: EMPTY,
        )


def _store(beside: dict[str, Any], *, dcgm: bool) -> Callable[[str], bytes]:
    """A store whose answer to DCGM's query has ``beside`` next to ``data`` (and a value when
    ``dcgm``); the exporter's query answers 200 W, whole."""

    def fetch(url: str) -> bytes:
        if "DCGM" in url:
            result = [{"metric": {}, "value": [1, "312.5"]}] if dcgm else []
            return json.dumps({"status": "success", "data": {"result": result}, **beside}).encode()
        return json.dumps(
            {"status": "success", "data": {"result": [{"metric": {}, "value": [1, "200"]}]}}
        ).encode()

    return fetch


def test_a_power_from_a_partial_answer_is_not_complete(tmp_path: Path) -> None:
    t0 = 1_800_000_000
    write_ledger(tmp_path, "run-a", start_ts=t0, end_ts=t0 + 60, events=[ev(t0 + 5.5, gen=3)])
    read = functools.partial(
        measure, [tmp_path], "24h", prometheus_url="http://v:8481", at_ts=t0 + 60
    )
    m = read(clock=lambda: t0 + 60, fetch=_store({"isPartial": True}, dcgm=True))
    assert (m.usage.power_watts, m.power_told) == (312.5, {m.power_source: Said(partial=True)})
    # DCGM's answer came back empty and partial: the exporter's 200 W may not be the whole
    # power either (DCGM's series may be on the node that did not answer).
    m = read(clock=lambda: t0 + 60, fetch=_store({"warnings": ["w"]}, dcgm=False))
    assert m.usage.power_watts == 200.0 and m.power_source.startswith("sum(avg_over_time(vllm_")
    assert list(m.power_told) == ["sum(avg_over_time(DCGM_FI_DEV_POWER_USAGE[86400s]))"]
    m = read(clock=lambda: t0 + 60, fetch=_store({"infos": ["i"]}, dcgm=True))
    assert m.power_told == {}  # an info says nothing is missing
    with pytest.raises(RemoteError, match=r"give power_watts; the store's answer to sum\(avg_"):
        read(clock=lambda: t0 + 60, fetch=lambda _url: EMPTY[:-1] + b',"isPartial":true}')
