"""The rank-0 maintenance pass as the API process sees it: where it runs in a child
(``spawn_pass`` in ``vllm_ledger.background`` or ``vllm_ledger.maintenance``), the spawn's
wall and thread CPU, the ``fork_exec`` inside it, the child's pid, nice level and, from
``wait4``, its CPU; where it runs on a thread (``maintenance.run``), its wall and CPU.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from .stats import LOCK, STATS
from .timers import wrap

_TICK = os.sysconf("SC_CLK_TCK")
_spawning = threading.local()


def _timed_fork_exec(fn: Any) -> Any:
    def wrapper(*args: Any, **kw: Any) -> Any:
        if not getattr(_spawning, "entry", None):
            return fn(*args, **kw)
        t, c = time.perf_counter(), time.thread_time()
        try:
            return fn(*args, **kw)
        finally:
            _spawning.entry["fork_exec_wall_s"] = time.perf_counter() - t
            _spawning.entry["fork_exec_cpu_s"] = time.thread_time() - c

    return wrapper


def _timed_spawn(fn: Any) -> Any:
    """``spawn_pass(root)``: the API process's part of a pass (one fork/exec)."""

    def wrapper(*args: Any, **kw: Any) -> Any:
        entry: dict[str, Any] = {"start_ts": time.time(), "tid": threading.get_native_id()}
        _spawning.entry = entry
        t, c = time.perf_counter(), time.thread_time()
        try:
            proc = fn(*args, **kw)
        finally:
            entry["spawn_wall_s"] = time.perf_counter() - t
            entry["spawn_cpu_s"] = time.thread_time() - c
            _spawning.entry = None
            with LOCK:
                STATS["maintenance"].append(entry)
        entry["child_pid"] = proc.pid
        _watch_child(proc, entry)
        return proc

    return wrapper


def _watch_child(proc: subprocess.Popen[Any], entry: dict[str, Any]) -> None:
    """Reap the child with ``wait4`` instead of ``waitpid``, to keep its CPU seconds."""
    orig = proc._try_wait  # type: ignore[attr-defined]

    def try_wait(wait_flags: int) -> tuple[int, int]:
        try:
            pid, sts, ru = os.wait4(proc.pid, wait_flags)
        except ChildProcessError:
            return orig(wait_flags)
        if pid == proc.pid:
            entry["child_cpu_s"] = ru.ru_utime + ru.ru_stime
            entry["child_wall_s"] = time.time() - entry["start_ts"]
            entry["child_status"] = sts
        return pid, sts

    proc._try_wait = try_wait  # type: ignore[attr-defined]


def install() -> None:
    spawned = False
    for name in ("vllm_ledger.background", "vllm_ledger.maintenance"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        spawned = wrap(mod, "spawn_pass", _timed_spawn) or spawned
    if spawned:
        STATS["shape"]["maintenance"] = "child process"
        subprocess._fork_exec = _timed_fork_exec(subprocess._fork_exec)  # type: ignore[attr-defined]
        return
    from vllm_ledger import maintenance  # the older shape: the pass runs on a thread here

    STATS["shape"]["maintenance"] = "thread in the API process"
    orig_pass = maintenance.run

    def maintenance_run(root: Path, *args: Any, **kw: Any) -> Any:
        t0, t, c = time.time(), time.perf_counter(), time.thread_time()
        result = orig_pass(root, *args, **kw)
        with LOCK:
            STATS["maintenance"].append(
                {
                    "start_ts": t0,
                    "wall_s": time.perf_counter() - t,
                    "cpu_s": time.thread_time() - c,
                    "files_read": result.files_read,
                    "compacted": len(result.compacted),
                    "tid": threading.get_native_id(),
                }
            )
        return result

    maintenance.run = maintenance_run  # the background loop looks it up on each pass


def child_seen(entry: dict[str, Any]) -> None:
    """While the maintenance child lives: its CPU so far and its nice level."""
    pid = entry.get("child_pid")
    if not pid or "child_cpu_s" in entry:
        return
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        entry["child_cpu_seen_s"] = (int(fields[11]) + int(fields[12])) / _TICK
        entry["child_nice"] = int(fields[16])
        entry["child_policy"] = int(fields[38])  # 5: SCHED_IDLE
    except (OSError, IndexError, ValueError):
        pass
