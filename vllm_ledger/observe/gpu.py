"""GPU readings through NVML (the `nvidia-ml-py` package, imported lazily), for hosts without DCGM.

Per GPU: power in watts, utilisation in percent, memory used and total in bytes, temperature in
degrees Celsius, with its index, UUID and name (labels named as DCGM names them: ``gpu``,
``UUID``, ``modelName``, so dashboards can prefer DCGM per GPU and fall back to these).

``GpuReader`` initialises NVML once. Where there is no GPU, no driver or no `nvidia-ml-py`, it says
so once (through the ``say`` callable it is given) and reads nothing from then on, so the caller
serves the rest. A reading NVML does not support on a card (power on some boards) is None.

``python -m vllm_ledger.observe.gpu`` prints the readings as JSON (exit 1 when NVML is absent).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class GpuReading:
    index: int
    uuid: str
    name: str
    power_watts: float | None
    utilization_percent: float | None
    memory_used_bytes: int | None
    memory_total_bytes: int | None
    temperature_celsius: float | None


def _text(value: Any) -> str:
    # nvidia-ml-py returns str; older pynvml returned bytes.
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _maybe(nvml: Any, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, or None where NVML says the card does not support it."""
    try:
        return fn(*args)
    except nvml.NVMLError:
        return None


def read_gpus(nvml: Any) -> list[GpuReading]:
    """Read every GPU through an initialised NVML module (``pynvml`` or an object like it)."""
    out = []
    for i in range(nvml.nvmlDeviceGetCount()):
        h = nvml.nvmlDeviceGetHandleByIndex(i)
        power_mw = _maybe(nvml, nvml.nvmlDeviceGetPowerUsage, h)
        util = _maybe(nvml, nvml.nvmlDeviceGetUtilizationRates, h)
        mem = _maybe(nvml, nvml.nvmlDeviceGetMemoryInfo, h)
        temp = _maybe(nvml, nvml.nvmlDeviceGetTemperature, h, nvml.NVML_TEMPERATURE_GPU)
        out.append(
            GpuReading(
                index=i,
                uuid=_text(nvml.nvmlDeviceGetUUID(h)),
                name=_text(nvml.nvmlDeviceGetName(h)),
                power_watts=None if power_mw is None else power_mw / 1000.0,
                utilization_percent=None if util is None else float(util.gpu),
                memory_used_bytes=None if mem is None else int(mem.used),
                memory_total_bytes=None if mem is None else int(mem.total),
                temperature_celsius=None if temp is None else float(temp),
            )
        )
    return out


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class GpuReader:
    """Reads every GPU on each call; after NVML fails to start, says so once and reads nothing."""

    def __init__(
        self, say: Callable[[str], None] = _stderr, load: Callable[[], Any] | None = None
    ) -> None:
        self._say = say
        self._load = load or _load_pynvml
        self._nvml: Any = None
        self._lock = threading.Lock()  # scrapes run on the HTTP server's threads
        self.unavailable: str | None = None

    def _start(self) -> Any:
        if self._nvml is not None or self.unavailable is not None:
            return self._nvml
        try:
            nvml = self._load()
            nvml.nvmlInit()
        except ImportError:
            self.unavailable = "nvidia-ml-py is not installed: pip install 'vllm-ledger[gpu]'"
            self._say(f"no NVIDIA GPU readings ({self.unavailable}); serving the rest")
            return None
        except Exception as exc:  # NVMLError_LibraryNotFound, _DriverNotLoaded, _NoPermission...
            self.unavailable = f"{type(exc).__name__}: {exc}"
            self._say(f"no NVIDIA GPU readings ({self.unavailable}); serving the rest")
            return None
        self._nvml = nvml
        return nvml

    def read(self) -> list[GpuReading]:
        with self._lock:
            nvml = self._start()
            if nvml is None:
                return []
            try:
                return read_gpus(nvml)
            except Exception as exc:  # a GPU fell off the bus mid-read: report it, keep serving
                self._say(f"NVML read failed: {type(exc).__name__}: {exc}")
                return []

    def close(self) -> None:
        with self._lock:
            if self._nvml is not None:
                try:
                    self._nvml.nvmlShutdown()
                finally:
                    self._nvml = None


def _load_pynvml() -> Any:
    import pynvml  # the nvidia-ml-py distribution

    return pynvml


def main() -> int:
    notes: list[str] = []
    reader = GpuReader(say=notes.append)
    gpus = reader.read()
    doc = {"gpus": [asdict(g) for g in gpus], "unavailable": reader.unavailable}
    reader.close()
    print(json.dumps(doc, indent=2))
    return 1 if reader.unavailable else 0


if __name__ == "__main__":
    sys.exit(main())
