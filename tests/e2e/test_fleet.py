"""A fleet in a real store: two exporters on two roots (two "hosts" on 127.0.0.1 ports), a real
Prometheus scraping both every second and remote-writing to a real VictoriaMetrics, and
``vllm-ledger fleet`` against each of them:

- per host, per model and in total, its figures equal the two hosts' ``report --json --zeros``
  (closed ledgers, so nothing moves while the test runs), against Prometheus and against
  VictoriaMetrics alike (the same queries);
- one exporter stopped: the fleet is incomplete, exit 1, and the stopped host is named;
- one exporter scraped by two jobs is counted once (its input tokens are its own report's), a
  target on a closed port (down from the start) is named, and an exporter stopped past
  ``--lookback`` is named (the query is asked as of a later instant, a clock passed in, rather
  than by sleeping past the lookback);
- one exporter scraped under two ``instance`` spellings (``127.0.0.1:PORT``, ``localhost:PORT``)
  with one ``host`` label is counted once, its root's own report to the token, and named;
- in a real VictoriaMetrics, one exporter's scrape written under two ``replica`` labels is taken
  once, and a copy with a different value is named as a conflict;
- ``fleet --by key`` (and ``--by adapter``): each key's requests summed across two hosts to the
  token, in Prometheus and in VictoriaMetrics, a host scraped by two jobs counted once, the rows
  and the not-attributed row adding up to the fleet's total, a stopped host named and its keys'
  tokens no longer summed.

Every process is started here, on 127.0.0.1, and stopped by pid. About 30-60 s on 2 cores for
the first test, 15-30 s for each of the others.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from datetime import datetime
from datetime import time as dt_time
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from devtools.ports import free_port
from tests.conftest import REPO, run_cli
from tests.credited_ledgers import Call, write_credited_ledger
from tests.e2e.prom import Prometheus, VictoriaMetrics
from tests.ledgers import ev, write_ledger
from tests.usage_hosts import midday_zone
from vllm_ledger.formats.fleet import fleet_dict
from vllm_ledger.plan.fleet_read import read_fleet

pytestmark = pytest.mark.e2e

FIGURES = ("input", "output", "cached", "requests", "decode_tokens", "decode_seconds")
WINDOWS = ("today", "24h", "3d", "7d", "total")
# The exporters' and reports' zone: about noon there, so no midnight moves "today" mid-test.
ZONE = midday_zone()


def wait_for(
    what: str,
    check: Callable[[], Any],
    timeout_s: float = 45.0,
    until: Callable[[Any], bool] = bool,
) -> Any:
    """``check()``'s first answer that ``until`` accepts (its first truthy one); fails naming
    ``what`` and the last answer."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if until(last):
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
                *("--listen", f"127.0.0.1:{port}", "--tz", ZONE, "--no-gpu"),
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
    """``report --json --zeros``: a window the host's ledger proves nothing of (host B's 24h)
    is null in a report (read/known.py) and 0 in its exporter's window gauges, which carry
    its coverage beside (complete 0, uncovered = wall); the fleet sums the gauges."""
    args = ["report", "--root", str(root), "--json", "--tz", ZONE, "--zeros"]
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
            down = f"{host_b}: its target is down (up == 0)"
            if store == prom.url:  # Prometheus's targets API adds the scrape's error
                down += f': Get "http://{host_b}/metrics": dial tcp {host_b}: connect: '
                down += "connection refused"

            def b_missing(
                store: str = store, down: str = down
            ) -> tuple[int, dict[str, Any]] | None:
                # The scrape in flight when the exporter stopped may end in "EOF": the next
                # one finds the port closed, and that error stays.
                # Host A's one slow scrape on a loaded machine would leave it missing a moment.
                code, doc = _fleet(store)
                missing = doc["hosts"][host_b]["state"] == "missing"
                a_ok = doc["hosts"][host_a]["state"] == "ok"
                return (code, doc) if missing and a_ok and down in doc["incomplete"] else None

            code, doc = wait_for(f"{host_b} missing in {store}", b_missing)
            assert code == 1
            assert doc["complete"] == dict.fromkeys(WINDOWS, False)
            named = [line for line in doc["incomplete"] if line.startswith(f"{host_b}: ")]
            assert named == [down], doc["incomplete"]
            assert doc["hosts"][host_a]["state"] == "ok"
            assert doc["total"]["total"]["input"] == 120 + 40 + 33  # host B is not counted
            code, out, _err = run_cli("fleet", "--prometheus", store)
            assert code == 1
            assert f"  {host_b} [missing]" in out
            assert f"  {down}\n" in out
    finally:
        prom.stop()
        vm.stop()
    print(f"\nfleet e2e took {time.monotonic() - started:.1f} s")


def _sample_lines(text: str) -> int:
    """The samples in exposition text: its lines that are neither empty nor comments."""
    return sum(1 for ln in text.splitlines() if ln.strip() and not ln.startswith("#"))


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text: str = r.read().decode()
    return text


def test_a_series_twice_counted_once_and_every_down_host_named(
    tmp_path: Path, exporters: Callable[[Path], tuple[int, subprocess.Popen[bytes]]]
) -> None:
    t0 = int(time.time()) - 2 * 86400
    root_a, root_b = tmp_path / "host-a", tmp_path / "host-b"
    _host_a(root_a, t0)
    _host_b(root_b, t0)
    port_a, _proc_a = exporters(root_a)
    port_b, proc_b = exporters(root_b)
    host_a, host_b, closed = (f"127.0.0.1:{p}" for p in (port_a, port_b, free_port()))
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: vllm-ledger\n    static_configs:\n"
        f"      - targets: ['{host_a}', '{host_b}', '{closed}']\n"
        "  - job_name: federate\n    static_configs:\n"  # host A scraped a second time
        f"      - targets: ['{host_a}']\n"
    )
    prom = Prometheus(config, tmp_path / "tsdb", tmp_path / "prometheus.log")
    try:
        prom.start()
        wait_for("both exporters serve /metrics", lambda: _up(port_a) and _up(port_b))
        report_a = _report(root_a)

        def both_jobs_in() -> tuple[int, dict[str, Any]] | None:
            code, doc = _fleet(prom.url)
            states = {h: v["state"] for h, v in doc["hosts"].items()}
            ok = states.get(host_a) == "ok" and states.get(host_b) == "ok"
            # The targets API lists the closed port before its first scrape writes up == 0.
            scraped = doc["hosts"].get(closed, {}).get("found_in") == ["up", "targets"]
            return (code, doc) if ok and scraped and doc["duplicates"]["series"] > 0 else None

        code, doc = wait_for("host A under two jobs", both_jobs_in)
        assert code == 1  # the closed port's target is missing
        for w in WINDOWS:
            got = doc["hosts"][host_a]["windows"][w]
            assert _figures(got) == _figures(report_a["windows"][w]), w  # once, not twice
        assert doc["total"]["total"]["input"] == 120 + 40 + 33 + 1000
        assert doc["duplicates"]["differ_in"] == ["job"]
        assert doc["conflicts"] == [] and doc["refused"] == []
        assert doc["missing"] == [closed]
        assert doc["hosts"][closed]["found_in"] == ["up", "targets"]
        why = doc["hosts"][closed]["why"]
        assert why.startswith("its target is down (up == 0): ") and "refused" in why, why
        assert f"{closed}: {why}" in doc["incomplete"]

        # Host B's exporter stops; a minute and a half later (asked as of then), with a 1-minute
        # lookback, its ledger series are long gone from the store: it is named from its up.
        _stop(proc_b)
        wait_for("host B down", lambda: prom.scalar(f'up{{instance="{host_b}"}}') == 0)

        def as_of_later() -> dict[str, Any] | None:
            # Asked again while host A's last scrape (of two jobs, each cut at 1 s) failed.
            later = time.time() + 90
            fleet = read_fleet(prom.url, lookback_s=60, stale_after_s=600, clock=lambda: later)
            got = fleet_dict(fleet)
            return got if got["hosts"][host_a]["state"] == "ok" else None

        doc = wait_for("host A ok as of 90 s later", as_of_later)
        assert doc["missing"] == sorted([host_b, closed])
        assert doc["hosts"][host_b]["state"] == "missing"
        assert doc["hosts"][host_b]["found_in"] == ["up", "targets"]  # no ledger series left
        assert doc["hosts"][host_b]["why"].startswith("its target is down (up == 0)")
        assert doc["hosts"][host_a]["state"] == "ok"
        assert doc["complete"] == dict.fromkeys(WINDOWS, False)
        assert doc["total"]["total"]["input"] == 120 + 40 + 33  # B not counted, A once
        code, out, _err = wait_for(
            "host A counted by the command",
            lambda: run_cli("fleet", "--prometheus", prom.url, "--lookback", "1m"),
            until=lambda got: f"  {host_a} [missing]" not in got[1],
        )
        assert code == 1
        assert f"  {host_b} [missing]" in out and f"  {closed} [missing]" in out
        assert "3 hosts from" in out and ", 1 counted, 2 missing;" in out
    finally:
        prom.stop()


def test_one_exporter_under_two_instance_spellings_is_counted_once(
    tmp_path: Path, exporters: Callable[[Path], tuple[int, subprocess.Popen[bytes]]]
) -> None:
    """One exporter scraped as 127.0.0.1:PORT and localhost:PORT in one job, one host label:
    the fleet's figures are its root's own report to the token, and a note names both."""
    t0 = int(time.time()) - 2 * 86400
    root = tmp_path / "host-a"
    _host_a(root, t0)
    port, _proc = exporters(root)
    spellings = [f"127.0.0.1:{port}", f"localhost:{port}"]
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: vllm-ledger\n    static_configs:\n"
        f"      - targets: {json.dumps(spellings)}\n"
        "        labels: {host: gpu1}\n"
    )
    prom = Prometheus(config, tmp_path / "tsdb", tmp_path / "prometheus.log")
    try:
        prom.start()
        wait_for("the exporter serves /metrics", lambda: _up(port))
        report = _report(root)

        def both_spellings_in() -> tuple[int, dict[str, Any]] | None:
            code, doc = _fleet(prom.url)
            ok = doc["hosts"].get("gpu1", {}).get("state") == "ok"
            return (code, doc) if ok and doc["spellings"] else None

        _code, doc = wait_for("both spellings scraped", both_spellings_in)
        assert list(doc["hosts"]) == ["gpu1"]
        assert doc["spellings"] == [
            {
                "host": "gpu1",
                "instances": spellings,
                "ledger_instances": ["testhost:8000", "testhost:8001"],
            }
        ]
        for w in WINDOWS:
            want = _figures(report["windows"][w])
            assert _figures(doc["hosts"]["gpu1"]["windows"][w]) == want, w  # once, not twice
            assert _figures(doc["total"][w]) == want, w
        assert doc["total"]["total"]["input"] == 120 + 40 + 33  # not 386
        assert doc["duplicates"]["differ_in"] == ["instance"]
        assert doc["conflicts"] == [] and doc["refused"] == []
        note = (
            f"{spellings[0]} and {spellings[1]} are one exporter of host gpu1 (the same "
            "ledger_instance labels under 2 instance spellings): counted once"
        )
        assert doc["notes"] == [note]
        _code, out, _err = wait_for(  # one failed scrape of a spelling leaves gpu1 missing
            "gpu1 counted by the command",
            lambda: run_cli("fleet", "--prometheus", prom.url, "--stale-after", "15"),
            until=lambda got: "  gpu1 [missing]" not in got[1],
        )
        print(f"\n$ vllm-ledger fleet --prometheus {prom.url} --stale-after 15\n{out}")
        assert f"\nnote: {note}\n" in out
        assert "duplicate series taken once (the copies differ only in instance)\n" in out
        row = next(line for line in out.splitlines() if line.startswith("  gpu1 "))
        assert row.split()[-1].rstrip("*") == "193/50"  # the root's own total, not 386/100
    finally:
        prom.stop()


def test_replicas_in_victoria_metrics_taken_once_or_named_as_a_conflict(
    tmp_path: Path, exporters: Callable[[Path], tuple[int, subprocess.Popen[bytes]]]
) -> None:
    t0 = int(time.time()) - 2 * 86400
    root = tmp_path / "host-a"
    _host_a(root, t0)
    port, _proc = exporters(root)
    wait_for("the exporter serves /metrics", lambda: _up(port))
    report = _report(root)
    text = _scrape(port)
    vm = VictoriaMetrics(tmp_path / "vm", tmp_path / "vm.log").start()
    try:
        # Host X: two HA replicas wrote the same scrape. Host Y: the second replica's copy of
        # one figure differs (a store without deduplication, replicas a scrape apart).
        line = next(
            ln
            for ln in text.splitlines()
            if ln.startswith("vllm_ledger_window_input_tokens{")
            and 'window="total"' in ln
            and 'model_name="tiny"' in ln
        )
        name_and_labels, value = line.rsplit(" ", 1)
        changed = text.replace(line, f"{name_and_labels} {float(value) + 5:g}")
        up = "up 1\n"
        want: dict[tuple[str, str], int] = {}
        for host, replica, body in (
            ("x:9464", "r1", text),
            ("x:9464", "r2", text),
            ("y:9464", "r1", text),
            ("y:9464", "r2", changed),
        ):
            labels = {"instance": host, "job": "vllm-ledger", "replica": replica}
            vm.import_prometheus(body + up, **labels)
            want[(host, replica)] = _sample_lines(body + up)

        # Each import is served on its own, about a second after it: asked before y's second
        # copy is served, the fleet sees one copy of y, takes it once and names no conflict.
        # So wait until every copy is served, each with all its series.
        def served() -> dict[tuple[str, str], int]:
            counts = vm.vector('count by (instance, replica) ({job="vllm-ledger"})')
            return {
                (c["metric"]["instance"], c["metric"]["replica"]): int(c["value"][1])
                for c in counts
            }

        wait_for("every copy served by VictoriaMetrics", served, until=lambda got: got == want)
        # Each copy was written once, stamped on arrival: a limit on the newest sample's age
        # well past this test's length keeps both hosts ok however slow the machine is.
        stale_after = "5m"
        code, out, err = run_cli(
            "fleet", "--prometheus", vm.url, "--json", "--stale-after", stale_after
        )
        seen = f"fleet exited {code}; stderr: {err!r}; document: {out}"
        assert code in (0, 1) and out.startswith("{"), seen
        doc = json.loads(out)
        states = {h: v["state"] for h, v in doc["hosts"].items()}
        assert states == {"x:9464": "ok", "y:9464": "ok"}, seen
        # Incomplete (exit 1): the conflict, and host A's closed ledgers leave part of every
        # window uncovered.
        assert code == 1 and doc["complete"] == dict.fromkeys(WINDOWS, False), seen
        for w in WINDOWS:
            assert _figures(doc["hosts"]["x:9464"]["windows"][w]) == _figures(
                report["windows"][w]
            ), f"{w}: {seen}"
        assert doc["duplicates"]["differ_in"] == ["replica"], seen
        # Every series of both hosts but the conflicting one.
        assert doc["duplicates"]["series"] > 100, seen
        assert [(c["host"], c["window"], c["values"]) for c in doc["conflicts"]] == [
            ("y:9464", "total", [float(value), float(value) + 5])
        ], seen
        assert doc["conflicts"][0]["series"].startswith("vllm_ledger_window_input_tokens{"), seen
        # Y's total leaves out the conflicting series: neither copy, nor their sum.
        assert doc["hosts"]["y:9464"]["windows"]["total"]["input"] == report["windows"]["total"][
            "input"
        ] - float(value), seen
        named = [ln for ln in doc["incomplete"] if ln.startswith("y:9464: conflict: ")]
        assert len(named) == 1 and "(the copies differ in replica): not counted" in named[0], seen
        code, out, err = run_cli("fleet", "--prometheus", vm.url, "--stale-after", stale_after)
        seen = f"fleet exited {code}; stderr: {err!r}; output:\n{out}"
        assert code == 1, seen
        assert "duplicate series taken once (the copies differ only in replica)" in out, seen
        assert "  y:9464: conflict: vllm_ledger_window_input_tokens{" in out, seen
    finally:
        vm.stop()


# ---- fleet --by key: whose tokens across hosts -----------------------------------------------

KEY_FIGURES = ("input", "output", "cached", "requests")


def _whose_hosts(root_a: Path, root_b: Path, t0: int) -> dict[str, list[Call]]:
    """Host A: team-a and a hashed key on "tiny", one untagged request, one cut stream; host B:
    team-a again on an adapter, and a request without a key. Closed ledgers, written by the real
    Recorder and tag book (nothing moves while the test runs)."""
    a = [
        Call(t0 + 10, "team-a", "tiny", "alice", prompt=120, gen=30, cached=64),
        Call(t0 + 20, "key:1a2b3c4d", "tiny", prompt=40, gen=9),
        Call(t0 + 30, prompt=5, gen=1, untagged=True),
        Call(t0 + 40, "team-a", "tiny", "alice", prompt=20, gen=2, aborted=True),
    ]
    b = [
        Call(t0 + 15, "team-a", "tiny-b", "bob", prompt=1000, gen=200, cached=500),
        Call(t0 + 25, "", "tiny", prompt=33, gen=11),
    ]
    write_credited_ledger(root_a, "a1", start_ts=t0, end_ts=t0 + 100, calls=a)
    write_credited_ledger(root_b, "b1", start_ts=t0, end_ts=t0 + 100, calls=b, port=8001)
    return {"a": a, "b": b}


def _want_rows(calls: list[Call], t0: int) -> dict[str, dict[str, dict[str, int]]]:
    """Per key, per window: the finished calls' figures (today starts at ZONE's midnight)."""
    now = time.time()
    midnight = datetime.combine(datetime.now(ZoneInfo(ZONE)).date(), dt_time(), ZoneInfo(ZONE))
    starts = {
        "today": midnight.timestamp(),
        "24h": now - 86400,
        "3d": now - 3 * 86400,
        "7d": now - 7 * 86400,
        "total": 0.0,
    }
    out: dict[str, dict[str, dict[str, int]]] = {}
    for c in calls:
        if c.aborted or c.untagged:
            continue
        key = c.key or "(none)"
        for w, start in starts.items():
            got = out.setdefault(key, {}).setdefault(w, dict.fromkeys(KEY_FIGURES, 0))
            if c.ts >= start:
                for k, v in zip(KEY_FIGURES, (c.prompt, c.gen, c.cached, 1), strict=True):
                    got[k] += v
    return out


def _fleet_by(url: str, by: str = "key") -> tuple[int, dict[str, Any]]:
    code, out, err = run_cli(
        "fleet", "--prometheus", url, "--by", by, "--json", "--stale-after", "15"
    )
    assert code in (0, 1), err
    doc: dict[str, Any] = json.loads(out)
    return code, doc


# Each target's series in a store, less the ones Prometheus adds to every scrape (up, scrape_*).
SERIES_BY_TARGET = (
    'count by (job, instance) ({job=~"vllm-ledger|federate", __name__!~"up|scrape_.+"})'
)


def test_fleet_by_key_sums_each_hosts_rows_in_prometheus_and_victoria_metrics(
    tmp_path: Path, exporters: Callable[[Path], tuple[int, subprocess.Popen[bytes]]]
) -> None:
    """Two hosts' exporters, Prometheus scraping both (host A twice, under a second job) and
    remote-writing to VictoriaMetrics: ``fleet --by key`` is each key's calls summed across the
    hosts, to the token, in both stores; host A once; the rows and the not-attributed row add up
    to the fleet's total; one exporter stopped, its host is named and its keys' tokens leave."""
    started = time.monotonic()
    t0 = int(time.time()) - 900
    root_a, root_b = tmp_path / "host-a", tmp_path / "host-b"
    calls = _whose_hosts(root_a, root_b, t0)
    port_a, _proc_a = exporters(root_a)
    port_b, proc_b = exporters(root_b)
    host_a, host_b = f"127.0.0.1:{port_a}", f"127.0.0.1:{port_b}"
    vm = VictoriaMetrics(tmp_path / "vm", tmp_path / "vm.log").start()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: vllm-ledger\n    static_configs:\n"
        f"      - targets: ['{host_a}', '{host_b}']\n"
        "  - job_name: federate\n    static_configs:\n"  # host A scraped a second time
        f"      - targets: ['{host_a}']\n"
        f"remote_write:\n  - url: {vm.write_url}\n"
        "    queue_config:\n      batch_send_deadline: 1s\n      max_shards: 1\n"
    )
    prom = Prometheus(config, tmp_path / "tsdb", tmp_path / "prometheus.log")
    want = _want_rows([*calls["a"], *calls["b"]], t0)
    assert want["team-a"]["total"] == {"input": 1120, "output": 230, "cached": 564, "requests": 2}
    try:
        prom.start()
        wait_for("both exporters serve /metrics", lambda: _up(port_a) and _up(port_b))
        # What each scrape job takes from each host: every series of its exporter.
        want_series = {
            ("vllm-ledger", host_a): _sample_lines(_scrape(port_a)),
            ("federate", host_a): _sample_lines(_scrape(port_a)),
            ("vllm-ledger", host_b): _sample_lines(_scrape(port_b)),
        }
        for store, ask in ((prom.url, prom.vector), (vm.url, vm.vector)):
            # A store serves a scrape's series as they arrive (VictoriaMetrics takes them from
            # Prometheus in remote-write batches, a new series searchable about a second
            # later): asked before every series is there, the fleet rightly finds a host's
            # rows short of its figures. So wait until each host's every series is served.
            def served(ask: Callable[[str], list[dict[str, Any]]] = ask) -> dict[Any, int]:
                counts = ask(SERIES_BY_TARGET)
                return {
                    (c["metric"]["job"], c["metric"]["instance"]): int(c["value"][1])
                    for c in counts
                }

            wait_for(f"every series in {store}", served, until=lambda got: got == want_series)

            def both_in(store: str = store) -> tuple[int, dict[str, Any]] | None:
                code, doc = _fleet_by(store)
                states = {h: v["state"] for h, v in doc["hosts"].items()}
                ok = states == {host_a: "ok", host_b: "ok"}
                twice = doc["by"]["duplicates"] > 0 or store == vm.url
                return (code, doc) if ok and twice and doc["by"]["rows"] else None

            code, doc = wait_for(f"both hosts' rows in {store}", both_in)
            by = doc["by"]
            # The closed ledgers leave their windows uncovered since: the fleet says so, and
            # no host is named for its rows.
            assert by["incomplete"] == [], by["incomplete"]
            assert by["complete"] == doc["complete"] and code == (
                0 if all(by["complete"].values()) else 1
            )
            got = {r["value"]: r["windows"] for r in by["rows"]}
            assert got == want, store  # each key's calls, summed across hosts, once
            assert {r["value"]: r["hosts"] for r in by["rows"]} == {
                "team-a": sorted([host_a, host_b]),
                "key:1a2b3c4d": [host_a],
                "(none)": [host_b],
            }
            rest = by["not_attributed"]["total"]
            assert rest["reasons"]["untagged"] == {"input": 5, "output": 1, "cached": 0,
                                                   "requests": 1}  # fmt: skip
            assert rest["reasons"]["aborted"]["input"] == 20  # the cut stream
            assert rest["requests_aborted"] == 1
            for w in WINDOWS:
                for k in KEY_FIGURES:
                    rows = sum(r["windows"][w][k] for r in by["rows"])
                    whole = doc["total"][w][k]
                    assert rows + by["not_attributed"][w][k] == whole, (store, w, k)
            assert doc["total"]["total"]["input"] == 120 + 40 + 5 + 20 + 1000 + 33
            code, out, _err = wait_for(  # a failed scrape leaves a host's keys out a moment
                f"both hosts counted by --by adapter in {store}",
                functools.partial(run_cli, "fleet", "--prometheus", store, "--by", "adapter"),
                until=lambda got: " missing;" not in got[1],  # "2 hosts ..., 2 counted;"
            )
            print(f"\n$ vllm-ledger fleet --prometheus {store} --by adapter\n{out}")
            assert "by adapter (input/output tokens)" in out and "  tiny-b " in out

        # Host B's exporter stops: its host is named, its keys' tokens are no longer summed.
        _stop(proc_b)
        for store in (prom.url, vm.url):

            def b_missing(store: str = store) -> tuple[int, dict[str, Any]] | None:
                code, doc = _fleet_by(store)
                states = (doc["hosts"][host_b]["state"], doc["hosts"][host_a]["state"])
                return (code, doc) if states == ("missing", "ok") else None

            code, doc = wait_for(f"{host_b} missing in {store}", b_missing)
            assert code == 1
            assert doc["by"]["complete"] == dict.fromkeys(WINDOWS, False)
            got = {r["value"]: r["windows"]["total"]["input"] for r in doc["by"]["rows"]}
            assert got == {"team-a": 120, "key:1a2b3c4d": 40}
            assert any(line.startswith(f"{host_b}: ") for line in doc["incomplete"])
            code, out, _err = run_cli("fleet", "--prometheus", store, "--by", "key")
            assert code == 1 and "\nINCOMPLETE:\n" in out and f"\n  {host_b}: " in out
    finally:
        prom.stop()
        vm.stop()
    print(f"\nfleet --by key e2e took {time.monotonic() - started:.1f} s")
