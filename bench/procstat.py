"""What the serving bench reads from ``/proc``: the CPU seconds (utime + stime) and context
switches (voluntary + involuntary, summed over ``/proc/PID/task/*/status``) of a server's API
process or processes, the rest of the server, this process (the load client) and everything
else on the machine (``/proc/stat``), over a window.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

TICK = os.sysconf("SC_CLK_TCK")


def _busy_jiffies() -> int:
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields[:8]) - idle  # user nice system idle iowait irq softirq steal


def _cpu_s(pid: int) -> float:
    """utime + stime of a process (its threads, living and exited), from /proc/PID/stat."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def _ctx_switches(pid: int) -> tuple[int, int]:
    """Context switches (voluntary + involuntary) summed over the living threads of a process,
    and how many threads that was; each wakeup of a sleeping thread is one."""
    total = threads = 0
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/status") as f:
                threads += 1
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
    return total, threads


def _tree(root_pid: int) -> list[int]:
    import psutil

    with contextlib.suppress(psutil.Error):
        p = psutil.Process(root_pid)
        return [root_pid, *(c.pid for c in p.children(recursive=True))]
    return [root_pid]


def api_pids(serve_pid: int) -> list[int]:
    """The API server processes of a `vllm serve`: with ``--api-server-count`` above 1 its
    children titled ``VLLM::APIServer_N`` (vLLM sets the process title); otherwise the
    `vllm serve` process itself (its children are the engine core and its worker)."""
    import psutil

    found = []
    with contextlib.suppress(psutil.Error):
        for c in psutil.Process(serve_pid).children():
            with contextlib.suppress(psutil.Error):
                title = " ".join(c.cmdline()[:1]) or c.name()
                if title.startswith("VLLM::APIServer"):
                    found.append(c.pid)
    return sorted(found) or [serve_pid]


class CpuWindow:
    """CPU and context switches between ``__init__`` and ``stop()``: the API process(es), the
    rest of the server (engine cores, workers, launcher), this bench process (the load client),
    and everything else on the machine."""

    def __init__(self, server_pid: int, api: list[int]) -> None:
        self.pid, self.api = server_pid, api
        self.t = time.monotonic()
        self.busy = _busy_jiffies()
        self.api_cpu = sum(_cpu_s(p) for p in api)
        self.rest = sum(_cpu_s(p) for p in _tree(server_pid) if p not in api)
        self.own = sum(os.times()[:2])
        ctx = [_ctx_switches(p) for p in api]
        self.ctx = sum(c for c, _ in ctx)
        self.threads = sum(n for _, n in ctx)

    def stop(self) -> dict[str, Any]:
        wall = time.monotonic() - self.t
        ctx = [_ctx_switches(p) for p in self.api]
        api = sum(_cpu_s(p) for p in self.api) - self.api_cpu
        rest = sum(_cpu_s(p) for p in _tree(self.pid) if p not in self.api) - self.rest
        busy = (_busy_jiffies() - self.busy) / TICK
        own = sum(os.times()[:2]) - self.own
        return {
            "wall_s": wall,
            "api_pids": self.api,
            "api_cpu_s": api,
            "engine_cpu_s": rest,
            "client_cpu_s": own,
            "machine_busy_cores": busy / wall,
            "other_work_cores": max(0.0, busy - api - rest - own) / wall,
            "api_ctx_switches": sum(c for c, _ in ctx) - self.ctx,
            "api_threads": [self.threads, sum(n for _, n in ctx)],
        }
