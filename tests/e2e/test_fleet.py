"""A fleet in a real store: two exporters on two roots (two "hosts" on 127.0.0.1 ports), a real
Prometheus scraping both every second and remote-writing to a real VictoriaMetrics, and
``vllm-ledger fleet`` against each of them:

- per host, per model and in total, its figures equal the two hosts' ``report --json`` (closed
  ledgers, so nothing moves while the test runs), against Prometheus and against VictoriaMetrics
  alike (the same queries);
- one exporter stopped: the fleet is incomplete, exit 1, and the stopped host is named.

Every process is started here, on 127.0.0.1, and stopped by pid. About 30-60 s on 2 cores.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.vllm_server import free_port
from tests.conftest import REPO, run_cli
from tests.e2e.prom import Prometheus, VictoriaMetrics
from tests.ledgers import ev, write_ledger

pytestmark = pytest.mark.e2e

FIGURES = ("input", "output", "cached", "requests", "decode_tokens", "decode_seconds")
WINDOWS = ("today", "24h", "3d", "7d", "total")


def wait_for(what: str, check: Callable[[], Any], timeout_s: float = 45.0) -> Any:
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.5)
    raise AssertionError(f"{what}: not seen within {timeout_s} s (last: {last!r})")


def _host_a(root: Path, t0: int) -> None:
    """Two instances, two models; one launch two days ago, one an hour ago (both closed)."""
    write_ledger(
        root,
        "a1",
        start_ts=t0,
        end_ts=t0 + 100,
        port=8000,
        model="tiny",
        events=[
            ev(t0 + 10, prompt=120, gen=30, cached=64, finished=[(30, 1.5)]),
            ev(t0 + 50, prompt=40, gen=9, finished=[(9, 0.5)]),
        ],
    )
    late = int(time.time()) - 3600
    write_ledger(
        root,
        "a2",
        start_ts=late,
        end_ts=late + 60,
        port=8001,
        model="alpha",
        events=[ev(late + 5, prompt=33, gen=11, cached=8, finished=[(11, 0.75)])],
    )


def _host_b(root: Path, t0: int) -> None:
    """The same instance name as host A's first (testhost:8000, "tiny"): hosts keep them apart."""
    write_ledger(
        root,
        "b1",
        start_ts=t0 + 500,
        end_ts=t0 + 700,
        port=8000,
        model="tiny",
        events=[ev(t0 + 510, prompt=1000, gen=200, cached=500, finished=[(200, 4.0)])],
    )


@pytest.fixture
def exporters(tmp_path: Path) -> Iterator[Callable[[Path], tuple[int, subprocess.Popen[bytes]]]]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(root: Path) -> tuple[int, subprocess.Popen[bytes]]:
        port = free_port()
        log = open(tmp_path / f"exporter-{port}.log", "ab")  # noqa: SIM115
        p = subprocess.Popen(
            [
                *(sys.executable, "-m", "vllm_ledger", "exporter", "--root", str(root)),
                *("--listen", f"127.0.0.1:{port}", "--tz", "UTC", "--no-gpu"),
            ],
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        procs.append(p)
        return port, p

    yield start
    for p in procs:
        _stop(p)


def _stop(p: subprocess.Popen[bytes]) -> None:
    if p.poll() is None:
        os.kill(p.pid, signal.SIGTERM)
        p.wait(20)


def _up(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def _report(root: Path, by: str | None = None) -> dict[str, Any]:
    args = ["report", "--root", str(root), "--json", "--tz", "UTC"]
    code, out, err = run_cli(*args, *(["--by", by] if by else []))
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def _fleet(url: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run_cli("fleet", "--prometheus", url, "--json", "--stale-after", "15")
    assert code in (0, 1), err
    doc: dict[str, Any] = json.loads(out)
    return code, doc


def _figures(w: dict[str, Any]) -> dict[str, Any]:
    return {k: w[k] for k in FIGURES}


def _add(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return {k: round(a.get(k, 0) + b.get(k, 0), 6) for k in FIGURES}


def test_fleet_from_prometheus_and_victoria_metrics_equals_the_hosts_reports(
    tmp_path: Path, exporters: Callable[[Path], tuple[int, subprocess.Popen[bytes]]]
) -> None:
    started = time.monotonic()
    t0 = int(time.time()) - 2 * 86400
    root_a, root_b = tmp_path / "host-a", tmp_path / "host-b"
    _host_a(root_a, t0)
    _host_b(root_b, t0)
    port_a, _proc_a = exporters(root_a)
    port_b, proc_b = exporters(root_b)
    host_a, host_b = f"127.0.0.1:{port_a}", f"127.0.0.1:{port_b}"

    vm = VictoriaMetrics(tmp_path / "vm", tmp_path / "vm.log").start()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: vllm-ledger\n    static_configs:\n"
        f"      - targets: ['{host_a}', '{host_b}']\n"
        f"remote_write:\n  - url: {vm.write_url}\n"
        "    queue_config:\n      batch_send_deadline: 1s\n      max_shards: 1\n"
    )
    prom = Prometheus(config, tmp_path / "tsdb", tmp_path / "prometheus.log")
    try:
        prom.start()
        wait_for("both exporters serve /metrics", lambda: _up(port_a) and _up(port_b))
        reports = {host_a: _report(root_a), host_b: _report(root_b)}
        by_model = {host_a: _report(root_a, "model"), host_b: _report(root_b, "model")}
        want_models: dict[str, dict[str, dict[str, Any]]] = {}
        for doc in by_model.values():
            for row in doc["breakdown"]["rows"]:
                for w in WINDOWS:
                    have = want_models.setdefault(row["key"], {}).get(w, {})
                    want_models[row["key"]][w] = _add(have, _figures(row["windows"][w]))
        assert sorted(want_models) == ["alpha", "tiny"]

        for store in (prom.url, vm.url):

            def both_ok(store: str = store) -> dict[str, Any] | None:
                _code, doc = _fleet(store)
                states = {h: v["state"] for h, v in doc["hosts"].items()}
                return doc if states == {host_a: "ok", host_b: "ok"} else None

            doc = wait_for(f"both hosts ok in {store}", both_ok)
            for host, report in reports.items():
                got = doc["hosts"][host]["windows"]
                for w in WINDOWS:
                    assert _figures(got[w]) == _figures(report["windows"][w]), (store, host, w)
                    assert got[w]["complete"] == report["windows"][w]["complete"]
            assert doc["hosts"][host_a]["instances"] == ["testhost:8000", "testhost:8001"]
            assert doc["hosts"][host_b]["instances"] == ["testhost:8000"]
            for model, windows in want_models.items():
                for w in WINDOWS:
                    assert _figures(doc["models"][model]["windows"][w]) == windows[w], (model, w)
            for w in WINDOWS:
                want = _add(_figures(reports[host_a]["windows"][w]), reports[host_b]["windows"][w])
                assert _figures(doc["total"][w]) == want, (store, w)
            assert doc["total"]["total"]["input"] == 120 + 40 + 33 + 1000
            assert doc["total"]["24h"]["input"] == 33  # only the launch an hour ago

        # One exporter stops: the fleet is incomplete and names that host, in both stores.
        _stop(proc_b)
        for store in (prom.url, vm.url):

            def b_missing(store: str = store) -> tuple[int, dict[str, Any]] | None:
                code, doc = _fleet(store)
                return (code, doc) if doc["hosts"][host_b]["state"] == "missing" else None

            code, doc = wait_for(f"{host_b} missing in {store}", b_missing)
            assert code == 1
            assert doc["complete"] == dict.fromkeys(WINDOWS, False)
            named = [line for line in doc["incomplete"] if line.startswith(f"{host_b}: ")]
            assert named == [f"{host_b}: its target is down (up == 0)"], doc["incomplete"]
            assert doc["hosts"][host_a]["state"] == "ok"
            assert doc["total"]["total"]["input"] == 120 + 40 + 33  # host B is not counted
            code, out, _err = run_cli("fleet", "--prometheus", store)
            assert code == 1
            assert f"  {host_b} [missing]" in out
            assert f"  {host_b}: its target is down (up == 0)" in out
    finally:
        prom.stop()
        vm.stop()
    print(f"\nfleet e2e took {time.monotonic() - started:.1f} s")
