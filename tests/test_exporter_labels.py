"""Labelled exporter series: per (ledger_instance, model_name) pair, equal to ``report --by
instance`` and ``report --by model`` (exact numbers), summing to the total, monotonic per pair
when runs vanish, and clean under ``promtool check metrics``.

Real parts: three instances on one root, one written by a real writer process
(``tests/faults/writer_proc.py``: the real Recorder on the real clock, closed cleanly) and two
by the real Recorder on a fake clock (``tests/ledgers.py``); a real exporter on 127.0.0.1 (a
free port), scraped over HTTP; the real ``vllm-ledger report`` command; Debian's ``promtool``.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

from tests.conftest import run_cli
from tests.e2e.prom import PROMTOOL
from tests.faults.helpers import WriterProc
from tests.ledgers import FakeClock, ev, write_ledger
from vllm_ledger.observe.exporter import LedgerCollector, start
from vllm_ledger.observe.server import MetricsServer
from vllm_ledger.promtext import parse_samples

Samples = list[tuple[str, dict[str, str], float]]
FIGURES = {  # report --json key -> window gauge suffix
    "input": "input_tokens",
    "output": "output_tokens",
    "cached": "cached_tokens",
    "requests": "requests",
    "decode_tokens": "decode_tokens",
    "decode_seconds": "decode_seconds",
}
COUNTERS = {  # report --json key -> counter
    "input": "vllm_ledger_prompt_tokens_total",
    "output": "vllm_ledger_generation_tokens_total",
    "cached": "vllm_ledger_cached_tokens_total",
    "requests": "vllm_ledger_requests_total",
    "decode_tokens": "vllm_ledger_decode_tokens_total",
    "decode_seconds": "vllm_ledger_decode_seconds_total",
}
A, B, C = "testhost:8000", "testhost:8001", "testhost:8002"


def _write_root(root: Path, t0: int) -> None:
    """Three instances, two models: A (port 8000, "tiny") from a real writer process; B (8001,
    "alpha") with two launches; C (8002, "tiny" too, so the model spans two instances)."""
    wp = WriterProc.start(
        "--root", str(root), "--run-id", "run-a", "--events", "300", "--close", "--sleep", "0.001"
    )
    wp.wait_line("CLOSED")
    rc, err = wp.finish()
    assert rc == 0, err
    write_ledger(
        root,
        "run-b1",
        start_ts=t0,
        end_ts=t0 + 100,
        port=8001,
        model="alpha",
        events=[
            ev(t0 + 10, prompt=120, gen=30, cached=64, finished=[(30, 1.5)]),
            ev(t0 + 50, prompt=40, gen=9, finished=[(9, 0.5)]),
        ],
    )
    write_ledger(
        root,
        "run-b2",
        start_ts=t0 + 200,
        end_ts=t0 + 300,
        port=8001,
        model="alpha",
        events=[ev(t0 + 210, prompt=10, gen=5, finished=[(5, 0.25)])],
    )
    write_ledger(
        root,
        "run-c1",
        start_ts=t0 + 50,
        end_ts=t0 + 150,
        port=8002,
        model="tiny",
        events=[ev(t0 + 60, prompt=7, gen=3, cached=2, finished=[(3, 0.125)])],
    )


def _scrape_text(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
        return r.read().decode()


def _sum(samples: Samples, name: str, **labels: str | None) -> float:
    return sum(
        v
        for n, lab, v in samples
        if n == name and all(lab.get(k) == want for k, want in labels.items())
    )


def _one(samples: Samples, name: str, **labels: str | None) -> float | None:
    hits = [
        v
        for n, lab, v in samples
        if n == name and all(lab.get(k) == want for k, want in labels.items())
    ]
    assert len(hits) <= 1, (name, labels, hits)
    return hits[0] if hits else None


def _report(root: Path, at: float, by: str | None = None) -> dict:
    argv = ["report", "--root", str(root), "--json", "--tz", "UTC", "--at", f"{at:.3f}"]
    code, out, err = run_cli(*argv, *(["--by", by] if by else []))
    assert code == 0, err
    return json.loads(out)


def _close(a: float, b: float | None) -> bool:
    """``b`` null: nothing known in that window, where the report prints null and the gauge
    reads 0 beside a window_uncovered_seconds equal to its wall seconds (checked too)."""
    if b is None:
        return a == 0
    return math.isclose(a, b, rel_tol=0, abs_tol=1e-6)


def test_labelled_series_equal_report_by_instance_and_by_model(
    tmp_path: Path, servers: list[MetricsServer]
) -> None:
    root = tmp_path / "ledger"
    now = time.time()
    t0 = int(now) - 2 * 86400  # two days ago: inside 3d and 7d, outside 24h
    _write_root(root, t0)
    at = math.floor(time.time()) + 1.0  # every writer closed: the figures do not move
    collector = LedgerCollector([root], tz="UTC", clock=FakeClock(at), cache_seconds=0.0)
    server = start(collector, host="127.0.0.1", port=0)
    servers.append(server)
    text = _scrape_text(server.port)
    samples = parse_samples(text)

    by_instance = _report(root, at, "instance")
    by_model = _report(root, at, "model")
    assert [r["key"] for r in by_instance["breakdown"]["rows"]] == [A, B, C]
    assert [r["key"] for r in by_model["breakdown"]["rows"]] == ["alpha", "tiny"]
    total = by_instance["windows"]["total"]
    assert (total["input"], total["requests"]) == (900 + 170 + 7, 3 + 1)  # writer_proc: 3/event

    # Per instance: the sum over its models of every figure, and its own coverage.
    for row in by_instance["breakdown"]["rows"]:
        inst = row["key"]
        for name, w in row["windows"].items():
            for key, suffix in FIGURES.items():
                got = _sum(
                    samples, f"vllm_ledger_window_{suffix}", window=name, ledger_instance=inst
                )
                assert _close(got, w[key]), (inst, name, key, got, w[key])
            cover = {"window": name, "ledger_instance": inst}
            assert (
                _one(samples, "vllm_ledger_window_uncovered_seconds", **cover)
                == (w["uncovered_seconds"])
            )
            assert _one(samples, "vllm_ledger_window_wall_seconds", **cover) == w["wall_seconds"]
            assert _one(samples, "vllm_ledger_window_complete", **cover) == float(w["complete"])
            problems = {
                lab["problem"]: v
                for n, lab, v in samples
                if n == "vllm_ledger_window_problems"
                and lab.get("window") == name
                and lab.get("ledger_instance") == inst
            }
            assert problems == w["problems"]
        for key, counter in COUNTERS.items():
            got = _sum(samples, counter, ledger_instance=inst)
            assert _close(got, row["windows"]["total"][key]), (inst, key)

    # Per model: the sum over its instances ("tiny" is served by A and C).
    for row in by_model["breakdown"]["rows"]:
        model = row["key"]
        for name, w in row["windows"].items():
            for key, suffix in FIGURES.items():
                got = _sum(samples, f"vllm_ledger_window_{suffix}", window=name, model_name=model)
                assert _close(got, w[key]), (model, name, key, got, w[key])
        for key, counter in COUNTERS.items():
            assert _close(_sum(samples, counter, model_name=model), row["windows"]["total"][key])
    assert {lab["model_name"] for n, lab, _v in samples if n == COUNTERS["input"]} == {
        "alpha",
        "tiny",
    }

    # The pairs add up to the report's total, window by window; the root's own coverage is
    # the series without ledger_instance.
    for name, w in by_instance["windows"].items():
        for key, suffix in FIGURES.items():
            assert _close(_sum(samples, f"vllm_ledger_window_{suffix}", window=name), w[key])
        root_cover = {"window": name, "ledger_instance": None}
        assert (
            _one(samples, "vllm_ledger_window_uncovered_seconds", **root_cover)
            == (w["uncovered_seconds"])
        )
        assert _one(samples, "vllm_ledger_window_complete", **root_cover) == float(w["complete"])
    for key, counter in COUNTERS.items():
        assert _close(_sum(samples, counter), total[key])
    # One series per pair: (A, tiny), (B, alpha), (C, tiny).
    pairs = sorted(
        (lab["ledger_instance"], lab["model_name"])
        for n, lab, _v in samples
        if n == COUNTERS["input"]
    )
    assert pairs == [(A, "tiny"), (B, "alpha"), (C, "tiny")]


def test_promtool_check_metrics_on_a_real_scrape_is_clean(
    tmp_path: Path, servers: list[MetricsServer]
) -> None:
    root = tmp_path / "ledger"
    t0 = int(time.time()) - 2 * 86400
    write_ledger(root, "r1", start_ts=t0, end_ts=t0 + 60, events=[ev(t0 + 5, 40, 7, 16)])
    write_ledger(
        root, "r2", start_ts=t0, end_ts=t0 + 60, port=8001, model="alpha", events=[ev(t0 + 9, 3)]
    )
    server = start(LedgerCollector([root], tz="UTC", cache_seconds=0.0), host="127.0.0.1", port=0)
    servers.append(server)
    text = _scrape_text(server.port)
    assert 'model_name="alpha"' in text
    r = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60
    )
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    # The check can fail: a counter without _total is reported.
    bad = text + "# HELP x_bytes a\n# TYPE x_bytes counter\nx_bytes 1\n"
    r = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=bad, capture_output=True, text=True, timeout=60
    )
    assert r.returncode != 0 and 'counter metrics should have "_total" suffix' in r.stderr


def _counters_by_pair(samples: Samples) -> dict[tuple[str, str, str], float]:
    return {
        (n, lab["ledger_instance"], lab["model_name"]): v
        for n, lab, v in samples
        if n in COUNTERS.values()
    }


T0 = 1_800_000_000  # 2027-01-15 08:00 UTC


def test_counters_stay_monotonic_per_pair_when_runs_vanish(
    tmp_path: Path, servers: list[MetricsServer]
) -> None:
    root, archive = tmp_path / "ledger", tmp_path / "archive"
    archive.mkdir()
    for run, port, model, at in (
        ("b1", 8001, "alpha", 0),
        ("b2", 8001, "alpha", 200),
        ("c1", 8002, "tiny", 50),
    ):
        write_ledger(
            root,
            run,
            start_ts=T0 + at,
            end_ts=T0 + at + 100,
            port=port,
            model=model,
            events=[ev(T0 + at + 10, prompt=10 + port - 8000, gen=2, finished=[(2, 0.5)])],
        )
    clock = FakeClock(T0 + 400)
    collector = LedgerCollector([root], tz="UTC", clock=clock, cache_seconds=0.0, say=print)
    server = start(collector, host="127.0.0.1", port=0)
    servers.append(server)
    first = _counters_by_pair(parse_samples(_scrape_text(server.port)))
    assert first[(COUNTERS["input"], B, "alpha")] == 2 * 11
    assert first[(COUNTERS["input"], C, "tiny")] == 12
    assert first[(COUNTERS["decode_seconds"], B, "alpha")] == 1.0

    # One of B's runs and C's only run go: both pairs keep every count.
    shutil.move(str(root / "b1"), str(archive / "b1"))
    shutil.move(str(root / "c1"), str(archive / "c1"))
    gone_samples = parse_samples(_scrape_text(server.port))
    assert _counters_by_pair(gone_samples) == first
    assert _one(gone_samples, "vllm_ledger_window_input_tokens", window="total", model_name="alpha")
    assert _sum(gone_samples, "vllm_ledger_window_input_tokens", window="total") == 11
    for inst in (B, C):
        labels = {"window": "total", "ledger_instance": inst}
        assert _one(gone_samples, "vllm_ledger_window_complete", **labels) == 0
        assert (
            _one(gone_samples, "vllm_ledger_window_problems", problem="run_vanished", **labels) == 1
        )
    assert _one(gone_samples, "vllm_ledger_runs_vanished") == 2

    # A new launch of C adds exactly its own counts to C's pair, nothing to B's.
    write_ledger(
        root, "c2", start_ts=T0 + 500, end_ts=T0 + 600, port=8002, model="tiny",
        events=[ev(T0 + 510, prompt=5, gen=1)],
    )  # fmt: skip
    clock.t = T0 + 601
    later = _counters_by_pair(parse_samples(_scrape_text(server.port)))
    assert later[(COUNTERS["input"], C, "tiny")] == 12 + 5
    assert later[(COUNTERS["input"], B, "alpha")] == 2 * 11
    for key, v in first.items():
        assert later[key] >= v, key

    # Both come back: counted once.
    shutil.move(str(archive / "b1"), str(root / "b1"))
    shutil.move(str(archive / "c1"), str(root / "c1"))
    assert _counters_by_pair(parse_samples(_scrape_text(server.port))) == later
