"""The ledger exporter: counters, window and coverage gauges equal to the Report, by scrape."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from devtools.ports import free_port
from tests.conftest import REPO
from tests.inproc import run_cli
from tests.ledgers import FakeClock, ev, write_ledger
from vllm_ledger.observe.exporter import LedgerCollector, make_registry
from vllm_ledger.observe.gpu import GpuReader, GpuReading
from vllm_ledger.promtext import parse_samples, sum_metric
from vllm_ledger.read.report import build_report

T0 = 1_800_000_000  # 2027-01-15 08:00 UTC


def _scrape(collector: LedgerCollector) -> list[tuple[str, dict[str, str], float]]:
    from prometheus_client import generate_latest

    return parse_samples(generate_latest(make_registry(collector)).decode())


def _value(samples: list, name: str, **labels: str | None) -> float | None:
    """The one sample of ``name`` with ``labels`` (a label given as None must be absent)."""
    hits = [
        v
        for n, lab, v in samples
        if n == name and all(lab.get(k) == want for k, want in labels.items())
    ]
    assert len(hits) <= 1, (name, labels, hits)
    return hits[0] if hits else None


class FixedGpus(GpuReader):
    """A GpuReader whose reads are these readings, counted; NVML is never loaded."""

    def __init__(self, gpus: list[GpuReading]) -> None:
        super().__init__()
        self.gpus = gpus
        self.reads = 0

    def read(self) -> list[GpuReading]:
        self.reads += 1
        return self.gpus


def _two_runs(root: Path, t0: int = T0) -> None:
    write_ledger(
        root,
        "run-1",
        start_ts=t0,
        end_ts=t0 + 100,
        events=[
            ev(t0 + 10, prompt=120, gen=30, cached=64, finished=[(30, 1.5)]),
            ev(t0 + 50, prompt=40, gen=9, cached=0, finished=[(9, 0.5)]),
        ],
    )
    write_ledger(
        root,
        "run-2",
        start_ts=t0 + 200,
        end_ts=t0 + 300,
        events=[ev(t0 + 210, prompt=10, gen=5, cached=0, finished=[(5, 0.25)])],
    )


def test_counters_and_window_gauges_equal_the_report(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    _two_runs(root)
    clock = FakeClock(T0 + 301)
    samples = _scrape(LedgerCollector([root], tz="UTC", clock=clock))
    report = build_report([root], tz="UTC", clock=clock)
    total = report.window("total")
    assert (total.input_tokens, total.output_tokens, total.cached_tokens, total.requests) == (
        170,
        44,
        64,
        3,
    )
    # Restart-proof counters: both runs, never reset by the second launch.
    assert _value(samples, "vllm_ledger_prompt_tokens_total") == 170
    assert _value(samples, "vllm_ledger_generation_tokens_total") == 44
    assert _value(samples, "vllm_ledger_cached_tokens_total") == 64
    assert _value(samples, "vllm_ledger_requests_total") == 3
    for w in report.windows:
        assert _value(samples, "vllm_ledger_window_input_tokens", window=w.name) == w.input_tokens
        assert _value(samples, "vllm_ledger_window_output_tokens", window=w.name) == w.output_tokens
        assert _value(samples, "vllm_ledger_window_cached_tokens", window=w.name) == w.cached_tokens
        assert _value(samples, "vllm_ledger_window_requests", window=w.name) == w.requests
        whole = {"window": w.name, "ledger_instance": None}  # the whole root's coverage
        assert (
            _value(samples, "vllm_ledger_window_uncovered_seconds", **whole) == w.uncovered_seconds
        )
        assert _value(samples, "vllm_ledger_window_complete", **whole) == float(w.complete)
        assert _value(samples, "vllm_ledger_window_hit_ratio", window=w.name) == w.hit_rate
        assert (
            _value(samples, "vllm_ledger_window_gen_speed_tokens_per_second", window=w.name)
            == w.gen_speed
        )
        assert (
            _value(samples, "vllm_ledger_window_avg_speed_tokens_per_second", window=w.name)
            == w.avg_speed
        )
    assert _value(samples, "vllm_ledger_window_hit_ratio", window="total") == 64 / 170
    assert (
        _value(samples, "vllm_ledger_window_gen_speed_tokens_per_second", window="total")
        == (29 + 8 + 4) / 2.25
    )
    # The gap between the runs (100 s) and the second after the last close are uncovered.
    whole = {"window": "total", "ledger_instance": None}
    assert _value(samples, "vllm_ledger_window_uncovered_seconds", **whole) == 101
    assert _value(samples, "vllm_ledger_window_complete", **whole) == 0
    # One instance: its own coverage is the root's, labelled.
    inst = {"window": "total", "ledger_instance": "testhost:8000"}
    assert _value(samples, "vllm_ledger_window_uncovered_seconds", **inst) == 101
    assert _value(samples, "vllm_ledger_window_wall_seconds", **inst) == 301
    # Every figure carries its instance and model.
    assert (
        _value(
            samples,
            "vllm_ledger_window_input_tokens",
            window="total",
            ledger_instance="testhost:8000",
            model_name="tiny",
        )
        == 170
    )
    assert (
        _value(
            samples,
            "vllm_ledger_prompt_tokens_total",
            ledger_instance="testhost:8000",
            model_name="tiny",
        )
        == 170
    )
    assert _value(samples, "vllm_ledger_decode_tokens_total") == 29 + 8 + 4
    assert _value(samples, "vllm_ledger_decode_seconds_total") == 2.25
    assert _value(samples, "vllm_ledger_runs") == 2
    assert _value(samples, "vllm_ledger_report_ok") == 1
    # Both runs are closed: the instance expects nobody now; two writers closed.
    assert _value(samples, "vllm_ledger_writers_expected", ledger_instance="testhost:8000") == 0
    assert _value(samples, "vllm_ledger_run_start_timestamp_seconds") is None  # closed: none
    assert _value(samples, "vllm_ledger_writers_alive", ledger_instance="testhost:8000") == 0
    assert (
        _value(samples, "vllm_ledger_writers", ledger_instance="testhost:8000", state="closed") == 2
    )
    assert _value(samples, "vllm_ledger_gpus") == 0  # no GPU reader given


def test_hit_ratio_is_absent_without_prompt_tokens(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    write_ledger(root, "run-1", start_ts=T0, end_ts=T0 + 20)
    samples = _scrape(LedgerCollector([root], tz="UTC", clock=FakeClock(T0 + 21)))
    assert _value(samples, "vllm_ledger_window_input_tokens", window="total") == 0
    assert _value(samples, "vllm_ledger_window_hit_ratio", window="total") is None
    assert _value(samples, "vllm_ledger_window_gen_speed_tokens_per_second", window="total") is None


def test_a_missing_writer_and_an_alive_one(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    # A launch with two API processes where only rank 0 ever wrote, still heartbeating.
    write_ledger(
        root,
        "run-1",
        start_ts=T0,
        end_ts=T0 + 60,
        expected=2,
        clean=False,
        events=[ev(T0 + 5, prompt=8, gen=2)],
    )
    samples = _scrape(LedgerCollector([root], tz="UTC", clock=FakeClock(T0 + 61)))
    labels = {"ledger_instance": "testhost:8000"}
    assert _value(samples, "vllm_ledger_writers_expected", **labels) == 2
    assert _value(samples, "vllm_ledger_writers_alive", **labels) == 1
    # The open run's start: the dashboard's Uptime where vLLM has no process_* series.
    assert _value(samples, "vllm_ledger_run_start_timestamp_seconds", **labels) == int(T0)
    assert _value(samples, "vllm_ledger_writers", state="missing", **labels) == 1
    assert _value(samples, "vllm_ledger_writers", state="alive", **labels) == 1
    for inst in (None, "testhost:8000"):  # the root's problems and the instance's own
        assert (
            _value(
                samples,
                "vllm_ledger_window_problems",
                window="total",
                problem="writer_missing",
                ledger_instance=inst,
            )
            == 1
        )
    # Much later the alive writer has gone stale: still expected, no longer alive.
    later = _scrape(LedgerCollector([root], tz="UTC", clock=FakeClock(T0 + 600)))
    assert _value(later, "vllm_ledger_writers_expected", **labels) == 2
    assert _value(later, "vllm_ledger_writers_alive", **labels) == 0
    assert _value(later, "vllm_ledger_writers", state="stale", **labels) == 1


def test_one_report_per_cache_period(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    write_ledger(root, "run-1", start_ts=T0, end_ts=T0 + 20, events=[ev(T0 + 5, prompt=8)])
    mono = FakeClock(100.0)
    gpus = FixedGpus([])
    collector = LedgerCollector(
        [root], tz="UTC", clock=FakeClock(T0 + 400), monotonic=mono, gpu=gpus, cache_seconds=1.5
    )
    assert _value(_scrape(collector), "vllm_ledger_prompt_tokens_total") == 8
    write_ledger(root, "run-2", start_ts=T0 + 100, end_ts=T0 + 120, events=[ev(T0 + 105, prompt=5)])
    mono.t = 101.0  # within the cache period: the same figures, no new read
    assert _value(_scrape(collector), "vllm_ledger_prompt_tokens_total") == 8
    assert gpus.reads == 1
    mono.t = 101.5
    assert _value(_scrape(collector), "vllm_ledger_prompt_tokens_total") == 13
    assert gpus.reads == 2


def test_gpu_gauges_carry_dcgm_style_labels(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    write_ledger(root, "run-1", start_ts=T0, end_ts=T0 + 20)
    gpus = FixedGpus(
        [
            GpuReading(0, "GPU-aaaa", "NVIDIA H200", 412.5, 87.0, 70 * 2**30, 141 * 2**30, 61.0),
            GpuReading(1, "GPU-bbbb", "NVIDIA H200", None, 0.0, 1 * 2**30, 141 * 2**30, 30.0),
        ]
    )
    samples = _scrape(LedgerCollector([root], tz="UTC", clock=FakeClock(T0 + 21), gpu=gpus))
    a = {"gpu": "0", "UUID": "GPU-aaaa", "modelName": "NVIDIA H200"}
    assert _value(samples, "vllm_ledger_gpus") == 2
    assert _value(samples, "vllm_ledger_gpu_power_watts", **a) == 412.5
    assert _value(samples, "vllm_ledger_gpu_utilization_percent", **a) == 87.0
    assert _value(samples, "vllm_ledger_gpu_memory_used_bytes", **a) == 70 * 2**30
    assert _value(samples, "vllm_ledger_gpu_memory_total_bytes", **a) == 141 * 2**30
    assert _value(samples, "vllm_ledger_gpu_temperature_celsius", **a) == 61.0
    # A reading the card does not support is left out, not served as 0.
    assert _value(samples, "vllm_ledger_gpu_power_watts", UUID="GPU-bbbb") is None
    assert _value(samples, "vllm_ledger_gpu_utilization_percent", UUID="GPU-bbbb") == 0.0


def test_a_failed_read_serves_report_ok_0_and_is_said_once(tmp_path: Path) -> None:
    said: list[str] = []
    mono = FakeClock(0.0)
    collector = LedgerCollector([tmp_path], tz="Mars/Olympus", monotonic=mono, say=said.append)
    for step in range(3):
        mono.t = step * 10.0
        samples = _scrape(collector)
        assert _value(samples, "vllm_ledger_report_ok") == 0
        assert _value(samples, "vllm_ledger_prompt_tokens_total") is None
    assert said == [
        "cannot read the ledgers: time zone 'Mars/Olympus' is not a known time zone: "
        "use an IANA Region/City name or UTC such as Asia/Shanghai"
    ]


# ---------------------------------------------------------------- the command, as a process


def _start_exporter(root: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vllm_ledger",
            "exporter",
            "--root",
            str(root),
            "--listen",
            f"127.0.0.1:{port}",
            "--tz",
            "UTC",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(log, "wb"),
        start_new_session=True,
    )


def _get(url: str, deadline_s: float = 30.0) -> str:
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_exporter_command_serves_metrics_in_its_own_process(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    _two_runs(root, int(time.time()) - 1000)  # the process reads with the real clock
    port = free_port()
    log = tmp_path / "exporter.log"
    proc = _start_exporter(root, port, log)
    try:
        text = _get(f"http://127.0.0.1:{port}/metrics")
        samples = parse_samples(text)
        code, out, _err = run_cli("report", "--root", str(root), "--json")
        assert code == 0
        import json

        total = json.loads(out)["windows"]["total"]
        assert sum_metric(samples, "vllm_ledger_prompt_tokens_total") == total["input"] == 170
        assert sum_metric(samples, "vllm_ledger_generation_tokens_total") == total["output"] == 44
        assert sum_metric(samples, "vllm_ledger_cached_tokens_total") == total["cached"] == 64
        assert sum_metric(samples, "vllm_ledger_requests_total") == total["requests"] == 3
        assert "# TYPE vllm_ledger_prompt_tokens_total counter" in text
        _get(f"http://127.0.0.1:{port}/metrics")  # a second scrape says nothing new
        # A second exporter on the same port fails with one line.
        code, _out, err = run_cli("exporter", "--root", str(root), "--listen", f"127.0.0.1:{port}")
        assert code == 2
        assert err.startswith(f"vllm-ledger: error: cannot listen on 127.0.0.1:{port}: ")
        assert err.rstrip().endswith("pick another --listen HOST:PORT")
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(20)
    lines = log.read_text().splitlines()
    serving = (
        f"vllm-ledger exporter: serving http://127.0.0.1:{port}/metrics from {root}"
        "; 'today' from midnight in UTC, from --tz"
    )
    gpu_lines = [ln for ln in lines if "GPU" in ln]
    # Without a GPU the exporter says so exactly once, before serving; with one, nothing.
    assert lines == [*gpu_lines, serving]
    assert len(gpu_lines) <= 1
    if gpu_lines:
        assert gpu_lines[0].startswith("vllm-ledger exporter: no NVIDIA GPU readings (")
        assert gpu_lines[0].endswith("); serving the rest")
        assert sum_metric(samples, "vllm_ledger_gpus") == 0


def test_exporter_needs_an_existing_root(tmp_path: Path) -> None:
    code, out, err = run_cli("exporter", "--root", str(tmp_path / "nope"))
    assert (code, out) == (2, "")
    assert err == (
        f"vllm-ledger: error: ledger root {tmp_path / 'nope'} is not a directory: "
        "pass --root DIR where the ledgers are\n"
    )
