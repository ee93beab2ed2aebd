"""NVML readings: units, unsupported readings, and saying once that there is no GPU."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pynvml

from tests.conftest import REPO
from vllm_ledger.observe.gpu import GpuReader, GpuReading, read_gpus


class FakeNvml:
    """NVML as a module-like object, the boundary where a driver would be: two cards."""

    NVMLError = pynvml.NVMLError
    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU

    def __init__(self) -> None:
        self.inits = 0
        self.shutdowns = 0

    def nvmlInit(self) -> None:
        self.inits += 1

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return 100 + i

    def nvmlDeviceGetName(self, h: int) -> Any:
        return "NVIDIA H200" if h == 100 else b"NVIDIA L4"  # old pynvml returned bytes

    def nvmlDeviceGetUUID(self, h: int) -> Any:
        return f"GPU-{h}" if h == 100 else b"GPU-101"

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        if h == 101:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return 412_345  # milliwatts

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
        return SimpleNamespace(gpu=87, memory=40)

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        return SimpleNamespace(used=70 * 2**30, total=141 * 2**30, free=71 * 2**30)

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        assert sensor == pynvml.NVML_TEMPERATURE_GPU
        return 61


def test_readings_in_watts_percent_bytes_and_celsius() -> None:
    assert read_gpus(FakeNvml()) == [
        GpuReading(0, "GPU-100", "NVIDIA H200", 412.345, 87.0, 70 * 2**30, 141 * 2**30, 61.0),
        GpuReading(1, "GPU-101", "NVIDIA L4", None, 87.0, 70 * 2**30, 141 * 2**30, 61.0),
    ]


def test_reader_initialises_once_and_shuts_down() -> None:
    nvml = FakeNvml()
    said: list[str] = []
    reader = GpuReader(say=said.append, load=lambda: nvml)
    assert len(reader.read()) == 2
    assert len(reader.read()) == 2
    assert (nvml.inits, said, reader.unavailable) == (1, [], None)
    reader.close()
    assert nvml.shutdowns == 1


def test_without_nvidia_ml_py_it_says_what_to_install_once() -> None:
    def load() -> Any:
        raise ImportError("No module named 'pynvml'")

    said: list[str] = []
    reader = GpuReader(say=said.append, load=load)
    assert reader.read() == [] and reader.read() == []
    assert said == [
        "no NVIDIA GPU readings (nvidia-ml-py is not installed: "
        "pip install 'vllm-ledger[gpu]'); serving the rest"
    ]


def test_the_real_nvml_on_this_host() -> None:
    """Real pynvml: on a host without a GPU it says so once; with one, the readings are sane."""
    said: list[str] = []
    reader = GpuReader(say=said.append)
    first, second = reader.read(), reader.read()
    reader.close()
    if reader.unavailable is None:
        assert first and len(first) == len(second)
        for g in first:
            assert g.uuid.startswith(("GPU-", "MIG-")) and g.name
            assert g.memory_total_bytes and g.memory_total_bytes > 0
            assert g.memory_used_bytes is not None and g.memory_used_bytes <= g.memory_total_bytes
        assert said == []
    else:
        assert first == [] and second == []
        assert len(said) == 1
        assert said[0] == f"no NVIDIA GPU readings ({reader.unavailable}); serving the rest"
        assert reader.unavailable.startswith("NVMLError")


def test_module_prints_the_readings_as_json() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "vllm_ledger.observe.gpu"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO)},
    )
    doc = json.loads(p.stdout)
    assert set(doc) == {"gpus", "unavailable"}
    if doc["unavailable"] is None:
        assert p.returncode == 0 and doc["gpus"]
        assert set(doc["gpus"][0]) == {
            "index",
            "uuid",
            "name",
            "power_watts",
            "utilization_percent",
            "memory_used_bytes",
            "memory_total_bytes",
            "temperature_celsius",
        }
    else:
        assert p.returncode == 1 and doc["gpus"] == []


def test_concurrent_scrapes_say_it_once() -> None:
    """Scrapes run on the HTTP server's threads: eight first reads at once still say it once."""
    import threading
    import time

    def slow_failing_load() -> Any:
        time.sleep(0.05)  # widens the window in which an unguarded reader would start twice
        raise ImportError("No module named 'pynvml'")

    said: list[str] = []
    reader = GpuReader(say=said.append, load=slow_failing_load)
    start = threading.Barrier(8)

    def scrape() -> None:
        start.wait()
        reader.read()

    threads = [threading.Thread(target=scrape) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(said) == 1
