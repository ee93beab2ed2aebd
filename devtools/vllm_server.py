"""Start and stop a real ``vllm serve`` on CPU, on 127.0.0.1, by process id.

Used by the end-to-end tests, the demo and the benchmarks. The ledger is switched on only
through what the caller puts on PYTHONPATH (a bundle folder), so a server without it writes
no ledger.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from devtools.ports import free_port

REPO = Path(__file__).resolve().parent.parent
SHIM = REPO / "devtools" / "vllm-shim"  # lets `vllm serve` find a distribution named vllm


def vllm_executable() -> list[str]:
    exe = Path(sys.executable).parent / "vllm"
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-m", "vllm.entrypoints.cli.main"]


@dataclass
class VllmServer:
    model: Path
    port: int = field(default_factory=free_port)
    served_name: str | tuple[str, ...] = "tiny"  # a tuple: several names for one model
    extra_args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    pythonpath: Sequence[Path] = ()
    log_path: Path | None = None
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [
            *vllm_executable(),
            "serve",
            str(self.model),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--served-model-name",
            *((self.served_name,) if isinstance(self.served_name, str) else self.served_name),
            "--dtype",
            "float32",
            "--enforce-eager",
            "--max-model-len",
            "1024",
            "--block-size",
            "32",
            "--enable-prefix-caching",
            "--shutdown-timeout",
            "10",
            *self.extra_args,
        ]

    def start(self, timeout_s: float = 240.0) -> VllmServer:
        env = dict(os.environ)
        env.pop("VLLM_LEDGER_DIR", None)
        env.update(
            {
                "VLLM_TARGET_DEVICE": "cpu",
                "VLLM_CPU_KVCACHE_SPACE": "1",
                "VLLM_NO_USAGE_STATS": "1",
                "DO_NOT_TRACK": "1",
                "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1",
                "TOKENIZERS_PARALLELISM": "false",
                "OMP_NUM_THREADS": "1",
            }
        )
        env.update(self.env)
        pp = [str(p) for p in self.pythonpath] + [str(SHIM)]
        env["PYTHONPATH"] = os.pathsep.join(pp)
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(
            self.command(),
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=str(self.model.parent),
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"vllm serve exited with {self.proc.returncode}; log: {self.log_path}"
                )
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return self
            time.sleep(0.5)
        self.stop()
        raise TimeoutError(f"vllm serve not healthy after {timeout_s} s; log: {self.log_path}")

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """SIGTERM the server (its API processes drain the ledger), then SIGKILL the group."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        self.proc = None
        return proc.returncode

    def metrics_text(self) -> str:
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as r:
            return r.read().decode()


@contextlib.contextmanager
def running(server: VllmServer, timeout_s: float = 240.0) -> Iterator[VllmServer]:
    server.start(timeout_s)
    try:
        yield server
    finally:
        server.stop()
