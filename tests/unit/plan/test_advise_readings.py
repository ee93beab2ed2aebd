"""plan/advise_readings: readings from /metrics snapshots, exact; take_readings picks one of three
sources, its inputs checked, a power limit applied; from a Prometheus, what the store said of
each reading's answers (partial, warnings) is kept by reading, a fallback's and a half's
merged."""

from __future__ import annotations

import json
import math
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.unit.plan.test_advise import INTERVAL_S, series
from vllm_ledger.errors import BadArgument
from vllm_ledger.plan.advise import throughput_flat
from vllm_ledger.plan.advise_readings import (
    histogram_quantile,
    readings_from_snapshots,
    sample_metrics,
    take_readings,
    told_lines,
)
from vllm_ledger.plan.prom import Said


def _files(tmp_path: Path, texts: list[str]) -> list[Path]:
    paths = [tmp_path / f"m{i}.txt" for i in range(len(texts))]
    for p, text in zip(paths, texts, strict=True):
        p.write_text(text)
    return paths


def test_snapshot_files_are_read_interval_apart(tmp_path: Path) -> None:
    texts = series(kv=0.95, waiting=3)
    r = take_readings(snapshots=_files(tmp_path, texts), interval_s=INTERVAL_S)
    expected = readings_from_snapshots(
        [(i * INTERVAL_S, t) for i, t in enumerate(texts)], "3 recorded snapshots"
    )
    assert r == expected
    limited = take_readings(
        snapshots=_files(tmp_path, texts), interval_s=INTERVAL_S, power_limit_watts=300.0
    )
    assert limited.power_limit_watts == 300.0 and limited.power_watts == r.power_watts


def test_a_live_metrics_url_is_sampled_with_the_gpu_urls(tmp_path: Path) -> None:
    texts = iter(series())
    asked: list[str] = []

    def fetch(url: str) -> bytes:
        asked.append(url)
        return next(texts).encode() if url == "http://vllm/metrics" else b""

    # A sample shorter than one interval: two snapshots, taken with no wait between them.
    r = take_readings(
        metrics_url="http://vllm/metrics",
        gpu_metrics_urls=["http://gpu/metrics"],
        sample_seconds=1e-9,
        interval_s=1e-9,
        fetch=fetch,
    )
    assert asked == ["http://vllm/metrics", "http://gpu/metrics"] * 2
    assert r.source == "http://vllm/metrics"


def test_a_prometheus_is_asked_over_the_range() -> None:
    asked: list[str] = []

    def fetch(url: str) -> bytes:
        asked.append(url)
        return b'{"status":"success","data":{"resultType":"vector","result":[]}}'

    r = take_readings(prometheus_url="http://prom:9090", range_s=1800, fetch=fetch)
    assert r.source == "Prometheus http://prom:9090, last 1800s"
    assert r.kv_cache_usage is None and r.num_ttft == 0
    assert all(u.startswith("http://prom:9090/api/v1/query?") for u in asked)


def partial_store(beside: dict[str, dict[str, Any]]) -> Callable[[str], bytes]:
    """A Prometheus whose every query answers 1.0, except DCGM's utilisation (the exporter's is
    the fallback); ``beside[name]`` is put beside ``data`` in the answer to each query that
    names the metric ``name``."""

    def fetch(url: str) -> bytes:
        expr = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["query"][0]
        told = next((b for name, b in beside.items() if name in expr), {})
        result = [] if "DCGM_FI_DEV_GPU_UTIL" in expr else [{"metric": {}, "value": [1, "1"]}]
        return json.dumps({"status": "success", "data": {"result": result}, **told}).encode()

    return fetch


def test_what_the_store_said_is_kept_by_reading() -> None:
    fetch = partial_store(
        {
            "vllm:kv_cache_usage_perc": {"isPartial": True},
            "DCGM_FI_DEV_GPU_UTIL": {"warnings": ["store a did not answer"]},
            "offset": {"warnings": ["store b did not answer"]},  # the first half's query
            "DCGM_FI_DEV_POWER_MGMT_LIMIT": {"isPartial": True},
            "vllm:num_requests_running": {"infos": ["PromQL info: x"]},
        }
    )
    r = take_readings(prometheus_url="http://v:8481", fetch=fetch)
    assert (r.kv_cache_usage, r.gpu_util_percent, r.gen_tokens_per_s_halves) == (1, 1, (1, 1))
    assert r.told == {
        "kv_cache_usage": Said(partial=True),
        # DCGM's came back empty with a warning: the exporter's 1.0 may not be every GPU's
        "gpu_util_percent": Said(warnings=("store a did not answer",)),
        "power_limit_watts": Said(partial=True),
        "gen_tokens_per_s_halves": Said(warnings=("store b did not answer",)),
    }
    assert r.said["num_running"] == Said(infos=("PromQL info: x",))  # not told: nothing missing
    assert told_lines(r)[:2] == (
        "the store's answer to the KV-cache usage query is partial (isPartial): some of its "
        "storage nodes did not answer, so an engine's or a GPU's series may be missing "
        "(docs/cost-and-capacity.md#a-partial-answer)",
        "the store's answer to the GPU utilisation query came with a warning: store a did not "
        "answer",
    )
    given = take_readings(prometheus_url="http://v:8481", power_limit_watts=500.0, fetch=fetch)
    assert "power_limit_watts" not in given.told  # the limit given is not the store's
    whole = take_readings(prometheus_url="http://v:8481", fetch=partial_store({}))
    assert whole.told == {} and told_lines(whole) == ()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prometheus_url": "http://p", "range_s": 0}, "range_s 0 is not above 0"),
        ({"snapshots": [Path("a")], "interval_s": -1}, "interval_s -1 is not above 0"),
        ({"snapshots": [Path("a")]}, "snapshots holds one file: .*: give at least two"),
        ({"snapshots": [Path("/nonexistent/a"), Path("b")]}, "cannot read /nonexistent/a: "),
        ({}, "no source of readings: give snapshots \\(two or more\\), metrics_url or "),
    ],
)
def test_bad_inputs_are_one_line(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(BadArgument, match=message):
        take_readings(**kwargs)


def test_readings_are_exact() -> None:
    texts = series(kv=0.95, waiting=3, ttft_seconds=5.0, gpu=40, power=440)
    r = readings_from_snapshots([(i * INTERVAL_S, t) for i, t in enumerate(texts)], "test")
    assert r.seconds == 20
    assert r.kv_cache_usage == pytest.approx(0.95)
    assert r.num_waiting == 3 and r.num_running == 0
    assert r.gpu_util_percent == 40 and r.power_watts == 440 and r.power_limit_watts == 450
    assert r.gen_tokens_per_s == pytest.approx(2500 / 20)
    assert r.gen_tokens_per_s_halves == pytest.approx((100.0, 150.0))
    assert throughput_flat(r) is False
    # 20 new first tokens at 5.0 s: rank 19.8 of 20 in the (2.5, 5.0] bucket.
    assert r.num_ttft == 20
    assert r.ttft_p99_seconds == pytest.approx(2.5 + 2.5 * 19.8 / 20)


def test_histogram_quantile_follows_prometheus() -> None:
    b = {0.1: 0.0, 0.5: 50.0, 1.0: 100.0, math.inf: 100.0}
    assert histogram_quantile(0.5, b) == pytest.approx(0.5)
    assert histogram_quantile(0.25, b) == pytest.approx(0.3)
    assert histogram_quantile(0.75, b) == pytest.approx(0.75)
    assert histogram_quantile(0.99, {1.0: 1.0, math.inf: 10.0}) == 1.0  # in +Inf: highest le
    assert histogram_quantile(0.99, {1.0: 0.0, math.inf: 0.0}) is None


def test_sample_metrics_is_paced_by_the_clock() -> None:
    t = [100.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(round(s, 6))
        t[0] += s

    def fetch(url: str) -> bytes:
        t[0] += 0.25  # each fetch takes a quarter second
        return f"# {url}\n".encode()

    snaps = sample_metrics(
        ["http://a/metrics", "http://b/metrics"],
        2.0,
        1.0,
        fetch=fetch,
        clock=lambda: t[0],
        sleep=sleep,
    )
    assert [s[0] for s in snaps] == [100.0, 101.0, 102.0]
    assert slept == [0.5, 0.5]
    assert snaps[0][1] == "# http://a/metrics\n\n# http://b/metrics\n"
