"""`advise --baseline 3d` against a real Prometheus holding three days of backfilled samples,
and holding two hours or two minutes only (a warning with the span; no thresholds under 1 h).

An OpenMetrics file with a sample every 60 s for three days (vLLM's TTFT histogram, KV-cache
usage and waiting requests, two servers with known values) goes through `promtool tsdb
create-blocks-from openmetrics` into a real Prometheus' storage; each baseline figure and
threshold the CLI prints must equal the one computed here by hand from the samples written.
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.e2e.prom import Prometheus, promtool

STEP_S = 60
DAY_S = 86400
LES = ("0.25", "0.5", "1", "2.5", "+Inf")
# Requests per minute at or below each bucket bound (cumulative), per server.
PER_MINUTE = {
    ("gpu1:8000", "qwen3-8b"): (50, 90, 98, 100, 100),
    ("gpu2:8000", "tiny"): (7, 9, 10, 10, 10),
}


def _kv(server: int, k: int) -> float:
    # Server 1 wanders between 30 % and 69.6 %; server 2 sits at 20 %.
    return round(0.30 + 0.40 * ((k * 37) % 100) / 100, 4) if server == 0 else 0.2


def _waiting(server: int, k: int) -> int:
    return (k * 13) % 9 if server == 0 and k % 3 == 0 else 0


def _labels(instance: str, model: str, **more: str) -> str:
    pairs = {"instance": instance, "model_name": model, **more}
    return "{" + ",".join(f'{k}="{v}"' for k, v in pairs.items()) + "}"


def _openmetrics(times: list[int]) -> str:
    servers = list(PER_MINUTE)
    out = ["# TYPE vllm:time_to_first_token_seconds histogram"]
    for k, ts in enumerate(times):
        for instance, model in servers:
            counts = PER_MINUTE[(instance, model)]
            for le, c in zip(LES, counts, strict=True):
                lab = _labels(instance, model, le=le)
                out.append(f"vllm:time_to_first_token_seconds_bucket{lab} {k * c} {ts}")
            lab = _labels(instance, model)
            out.append(f"vllm:time_to_first_token_seconds_count{lab} {k * counts[-1]} {ts}")
            out.append(f"vllm:time_to_first_token_seconds_sum{lab} {k * counts[-1] * 0.3} {ts}")
    for name, value in (("vllm:kv_cache_usage_perc", _kv), ("vllm:num_requests_waiting", _waiting)):
        out.append(f"# TYPE {name} gauge")
        for k, ts in enumerate(times):
            for i, (instance, model) in enumerate(servers):
                out.append(f"{name}{_labels(instance, model, engine='0')} {value(i, k)} {ts}")
    out.append("# EOF")
    return "\n".join(out) + "\n"


def _quantile_over_time(q: float, values: list[float]) -> float:
    """PromQL's quantile_over_time: linear between the two closest ranks of the sorted samples."""
    v = sorted(values)
    rank = q * (len(v) - 1)
    lo = max(0, math.floor(rank))
    hi = min(len(v) - 1, lo + 1)
    w = rank - math.floor(rank)
    return v[lo] * (1 - w) + v[hi] * w


@pytest.mark.e2e
def test_baseline_thresholds_equal_the_hand_computed_figures(tmp_path: Path) -> None:
    now = int(time.time()) // STEP_S * STEP_S
    # Three days of samples, every 60 s, from 3 days - 10 min ago to 5 min ago: inside the
    # window [now - 3d, now] of a query made in the next few minutes.
    first, last = now - 3 * DAY_S + 10 * 60, now - 5 * 60
    times = list(range(first, last + 1, STEP_S))
    om = tmp_path / "baseline.om"
    om.write_text(_openmetrics(times))
    data = tmp_path / "tsdb"
    made = promtool("tsdb", "create-blocks-from", "openmetrics", str(om), str(data))
    assert made.returncode == 0, made.stderr + made.stdout

    config = tmp_path / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 15s\nscrape_configs: []\n")
    server = Prometheus(config, data, tmp_path / "prometheus.log").start()
    try:
        code, out, err = run_cli("advise", "--baseline", "3d", "--prometheus", server.url, "--json")
        assert code == 0, err
        doc = json.loads(out)
        code, flags, err = run_cli(
            "advise", "--baseline", "3d", "--prometheus", server.url, "--emit-flags"
        )
        assert code == 0, err
        code, text, err = run_cli("advise", "--baseline", "3d", "--prometheus", server.url)
        assert code == 0, err
    finally:
        server.stop()

    # By hand. TTFT P99 over all requests of the window: rank 0.99 x total falls in a bucket,
    # interpolated linearly inside it (Prometheus' histogram_quantile; increase()'s
    # extrapolation scales every bucket alike, so the ratios and the quantile stay exact).
    # gpu1: 99 of 100 a minute -> between le=1 (98) and le=2.5 (100): 1 + 1.5 x 1/2 = 1.75 s.
    # gpu2: 9.9 of 10 -> between le=0.5 (9) and le=1 (10): 0.5 + 0.5 x 0.9 = 0.95 s.
    ttft = {"gpu1:8000": 1 + (2.5 - 1) * (99 - 98) / (100 - 98), "gpu2:8000": 0.5 + 0.5 * 0.9}
    n = len(times)
    kv = {
        "gpu1:8000": _quantile_over_time(0.99, [_kv(0, k) for k in range(n)]),
        "gpu2:8000": 0.2,
    }
    waiting = {
        "gpu1:8000": _quantile_over_time(0.99, [_waiting(0, k) for k in range(n)]),
        "gpu2:8000": 0.0,
    }
    groups = {g["instance"]: g for g in doc["groups"]}
    assert sorted(groups) == ["gpu1:8000", "gpu2:8000"]
    for inst, g in groups.items():
        assert g["ttft_p99_seconds"] == round(ttft[inst], 6), inst
        assert g["kv_cache_p99"] == round(kv[inst], 6), inst
        assert g["waiting_p99"] == round(waiting[inst], 6), inst
        assert g["kv_samples"] == n, inst
    assert doc["kv_metric"] == "vllm:kv_cache_usage_perc"
    assert doc["window_seconds"] == 3 * DAY_S
    # The history: the first and last sample (3 days less 15 min covers the window: no warning).
    assert (doc["history"]["first"], doc["history"]["last"]) == (first, last)
    assert doc["history"]["warning"] is None and doc["no_thresholds"] is None
    assert text.splitlines()[1] == ""

    # The thresholds, from the highest server (gpu1), by hand.
    assert kv["gpu1:8000"] > kv["gpu2:8000"] and waiting["gpu1:8000"] > 0
    th = doc["thresholds"]
    assert th["ttft_p99_seconds"]["baseline"] == 1.75
    assert th["ttft_p99_seconds"]["value"] == 2.63  # 1.75 x 1.5 = 2.625, up to 0.01 s
    want_kv = math.ceil(round((kv["gpu1:8000"] + (1 - kv["gpu1:8000"]) / 2) * 100, 6)) / 100
    assert th["kv_cache_threshold"]["baseline"] == round(kv["gpu1:8000"], 6)
    assert th["kv_cache_threshold"]["value"] == want_kv
    want_wait = math.ceil(round(waiting["gpu1:8000"] * 1.5, 6))
    assert th["queue_waiting"]["value"] == want_wait
    expected_flags = [
        "--ttft-p99-seconds", "2.63",
        "--kv-cache-threshold", f"{want_kv:g}",
        "--queue-waiting", f"{want_wait:g}",
    ]  # fmt: skip
    assert doc["observability_flags"] == expected_flags
    assert flags == "vllm-ledger observability " + " ".join(expected_flags) + "\n"
    # The servers' table: columns aligned by their widest cell (formats/table.py).
    assert re.search(r"^gpu1:8000  qwen3-8b +1\.750 s +\d", text, re.MULTILINE), text
    assert (
        "  --ttft-p99-seconds 2.63: baseline TTFT P99 1.750 s, baseline x 1.5, rounded up " in text
    )
    assert text.endswith("as flags: " + flags)

    # The flags are observability's own: its alert rules carry the thresholds.
    code, _out, err = run_cli("observability", "--output", str(tmp_path / "mon"), *expected_flags)
    assert code == 0, err
    rules = "\n".join(p.read_text() for p in (tmp_path / "mon").rglob("*.yml"))
    assert "> 2.63" in rules, rules[:2000]
    assert f"> {want_kv:g}" in rules


def _serve_history(tmp_path: Path, minutes: int) -> Prometheus:
    """A real Prometheus holding ``minutes`` of samples, every 60 s, ending 1 min ago."""
    tmp_path.mkdir()
    now = int(time.time()) // STEP_S * STEP_S
    times = list(range(now - 60 - minutes * 60, now - 60 + 1, STEP_S))
    om = tmp_path / "short.om"
    om.write_text(_openmetrics(times))
    made = promtool("tsdb", "create-blocks-from", "openmetrics", str(om), str(tmp_path / "tsdb"))
    assert made.returncode == 0, made.stderr + made.stdout
    config = tmp_path / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 15s\nscrape_configs: []\n")
    return Prometheus(config, tmp_path / "tsdb", tmp_path / "prometheus.log").start()


@pytest.mark.e2e
def test_baseline_on_a_short_history_warns_and_under_an_hour_proposes_nothing(
    tmp_path: Path,
) -> None:
    two_hours = _serve_history(tmp_path / "2h", 120)
    try:
        code, text, err = run_cli("advise", "--baseline", "3d", "--prometheus", two_hours.url)
        assert (code, err) == (0, ""), err
        code, flags, err = run_cli(
            "advise", "--baseline", "3d", "--prometheus", two_hours.url, "--emit-flags"
        )
        assert code == 0
    finally:
        two_hours.stop()
    lines = text.splitlines()
    assert lines[0].startswith("baseline over 3 days: ")
    assert re.fullmatch(r"baseline: asked 3 days, had 2 h of history \(.+ \.\. .+\)", lines[1])
    assert "as flags: vllm-ledger observability --ttft-p99-seconds 2.63" in text
    assert err == "vllm-ledger advise: baseline: asked 3 days, had 2 h of history\n"
    assert flags.startswith("vllm-ledger observability --ttft-p99-seconds 2.63 ")

    two_minutes = _serve_history(tmp_path / "2m", 2)
    try:
        code, text, err = run_cli("advise", "--baseline", "3d", "--prometheus", two_minutes.url)
        assert (code, err) == (0, ""), err
        code, out, _err = run_cli(
            "advise", "--baseline", "3d", "--prometheus", two_minutes.url, "--json"
        )
        assert code == 0
        code, flags, err = run_cli(
            "advise", "--baseline", "3d", "--prometheus", two_minutes.url, "--emit-flags"
        )
        assert code == 0
    finally:
        two_minutes.stop()
    lines = text.splitlines()
    assert lines[1].startswith("baseline: asked 3 days, had 2 min of history (")
    assert lines[-1].startswith("no thresholds: 2 min of history is under the 1 h minimum")
    assert "--ttft-p99-seconds" not in text  # the readings shown, no threshold from them
    assert re.search(r"^gpu1:8000  qwen3-8b +\d", text, re.MULTILINE), text
    doc = json.loads(out)
    assert doc["history"]["seconds"] == 120 and doc["history"]["minimum_seconds"] == 3600
    assert doc["thresholds"] == {} and doc["observability_flags"] == []
    assert doc["no_thresholds"] == lines[-1]
    assert flags == "vllm-ledger observability\n"  # observability keeps its defaults
    assert err.splitlines() == [
        "vllm-ledger advise: baseline: asked 3 days, had 2 min of history",
        f"vllm-ledger advise: {lines[-1]}",
    ]
