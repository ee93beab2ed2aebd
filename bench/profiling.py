"""The profile of a serving API process with the ledger on: one server runs the plugin through
``bench/probe/``'s wrapper (and the attribution middleware under its clock, beside a control
middleware), the API process is sampled with py-spy (``--gil``: only the thread holding the GIL
is recorded), over a window that covers the rank-0 maintenance pass a minute after start.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import pyspy
from bench.load import CONCURRENCY, WARMUP_REQUESTS, run_load
from bench.probe_window import (
    probe_figures,
    spawn_gil_ms,
    vfork_wait_releases_gil,
    window_slices,
)
from bench.procstat import CpuWindow
from bench.servers import PLUGIN_NAME, check_log, vllm_server

REPO = Path(__file__).resolve().parent.parent
# The control middleware beside the ledger's (added after it: the outer one).
SPY_WINDOW_S = 30.0  # py-spy's window, after the measured one
CONTROL_ARGS = ("--middleware", "vllm_ledger_bench_probe.middleware.NullMiddleware")


def probe_folder(dest: Path) -> Path:
    """A PYTHONPATH folder with the package, bench/probe/ (and the middleware clock it uses)
    and an entry point naming it."""
    from vllm_ledger.deploy.bundle import bundle

    bundle(dest)
    shutil.copytree(
        REPO / "bench" / "probe",
        dest / "vllm_ledger_bench_probe",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy(REPO / "bench" / "mwclock.py", dest / "vllm_ledger_bench_mwclock.py")
    (info,) = dest.glob("vllm_ledger-*.dist-info")
    (info / "entry_points.txt").write_text(
        f"[vllm.stat_logger_plugins]\n{PLUGIN_NAME} = "
        "vllm_ledger_bench_probe.logger:ProbedLedgerStatLogger\n"
    )
    return dest


def _read_probe(path: Path, timeout_s: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            return json.loads(path.read_text())
        time.sleep(0.2)
    raise SystemExit(f"profile: the probe wrote nothing to {path}")


def first_pass_delay_s() -> float:
    """When the rank-0 maintenance pass starts after the plugin: the module that schedules it
    (``vllm_ledger.background``, or ``maintenance`` where the pass still runs in-process)."""
    for name in ("vllm_ledger.background", "vllm_ledger.maintenance"):
        with contextlib.suppress(ImportError):
            delay = getattr(importlib.import_module(name), "FIRST_DELAY_S", None)
            if delay is not None:
                return float(delay)
    return 60.0


def _history(root: Path) -> str:
    """History for the maintenance pass: a day of 8 busy writers that ended 9 days ago, so
    its per-second rows have crossed the 8-day horizon: the work a daily pass meets."""
    from tests.generate import generate

    now = int(time.time())
    generate(root, writers=8, days=1, now=now - 9 * 86400)
    return "8 writers x 1 day, ended 9 days ago (per-second rows to compact)"


def _spy_argv(spy: str, pid: int, window: float, rate_hz: int, nonblocking: bool) -> list[str]:
    return [
        spy, "record", "--pid", str(pid), "--duration", str(round(window)),
        "--rate", str(rate_hz), "--format", "raw", "--threads", "--gil",
        *(["--nonblocking"] if nonblocking else []),
    ]  # fmt: skip


def _loaded_window(
    server: Any, probe_out: Path, pid: int, window: float
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The measured load for ``window`` seconds: (the load's figures, the probe's snapshot as
    it opened, the probe's snapshot after it)."""
    snaps: dict[str, Any] = {}

    class Window:
        """Opens as the measured load starts (after the warm-up)."""

        def __init__(self) -> None:
            snaps["a"] = _read_probe(probe_out)
            self.cpu = CpuWindow(server.proc.pid, [pid])

        def stop(self) -> dict[str, Any]:
            return self.cpu.stop()

    load = asyncio.run(
        run_load(
            server.url,
            concurrency=CONCURRENCY,
            warmup=WARMUP_REQUESTS,
            until=time.monotonic() + window - 3,
            window=Window,
        )
    )
    time.sleep(1.2)  # one more probe write
    return load, snaps["a"], _read_probe(probe_out)


def _maintenance(a: dict[str, Any], b: dict[str, Any], result: dict[str, Any]) -> list[Any]:
    """The maintenance passes the probe saw, each marked in or out of the window, a spawn's
    part that held the GIL beside it (the vfork check kept in ``result``)."""
    maint = [
        {**m, "in_window": a["wall_ts"] <= m["start_ts"] <= b["wall_ts"]} for m in b["maintenance"]
    ]
    vfork = vfork_wait_releases_gil() if any("spawn_wall_s" in m for m in maint) else {}
    result["vfork_wait_releases_gil"] = vfork
    for m in maint:
        if "spawn_wall_s" in m:
            m["spawn_gil_ms"] = spawn_gil_ms(m, vfork.get("released"))
    return maint


def _spy_result(
    spy_text: str, window: float, rate_hz: int, nonblocking: bool, raw: Path
) -> dict[str, Any]:
    """py-spy's run: its command, ticks and samples, and its raw output parsed (and kept under
    bench/out/)."""
    m = re.search(r"Samples: (\d+) Errors: (\d+)", spy_text)
    out: dict[str, Any] = {
        "command": f"py-spy record --pid API_PID --duration {round(window)} --rate "
        f"{rate_hz} --format raw --threads --gil" + (" --nonblocking" if nonblocking else ""),
        "ticks": round(window * rate_hz),
        "samples": int(m.group(1)) if m else None,
        "errors": int(m.group(2)) if m else None,
        "tail": spy_text.strip()[-300:],
    }
    if raw.exists():
        out.update(pyspy.parse_raw(raw.read_text()))
        (REPO / "bench" / "out").mkdir(parents=True, exist_ok=True)
        shutil.copy(raw, REPO / "bench" / "out" / "profile-py-spy.raw")
    return out


def profile(seconds: float, rate_hz: int = 100, spy_mode: str = "blocking") -> dict[str, Any]:
    """Serve with the probe, sample the API process with py-spy under load."""
    from devtools.tiny_model import make_tiny_model

    model = make_tiny_model(REPO / "build" / "tiny-model").resolve()
    tmp = Path(tempfile.mkdtemp(prefix="bench-profile-"))
    result: dict[str, Any] = {}
    try:
        root = tmp / "ledger"
        result["seed"] = _history(root)
        plugin = probe_folder(tmp / "probe")
        probe_out = tmp / "probe.json"
        env = {"VLLM_LEDGER_DIR": str(root), "BENCH_PROBE_OUT": str(probe_out)}
        server = vllm_server(model, tmp, "profile", plugin=plugin, env=env, extra_args=CONTROL_ARGS)
        t0 = time.monotonic()
        server.start()
        print(f"  profile: server up in {time.monotonic() - t0:.0f} s", flush=True)
        try:
            first = _read_probe(probe_out)
            pid = int(first["pid"])
            result["api_pid_is_serve_pid"] = pid == server.proc.pid
            # The window covers the maintenance pass (its delay after the plugin started).
            pass_at = float(first["init_ts"]) + first_pass_delay_s()
            window = max(seconds, pass_at + 20 - time.time())
            spy = pyspy.executable() if spy_mode != "off" else None
            nonblocking = spy_mode == "nonblocking"
            # The figures come from a window no sampler stops: py-spy's blocking mode stops
            # every thread about 100 times a second, and each stop is CPU charged to the thread
            # stopped (the recorder's, asleep in its wait, most of all). py-spy samples a second
            # window of the same load, for where the time goes.
            load, a, b = _loaded_window(server, probe_out, pid, window)
            spy_text = ""
            if spy is not None:
                raw = tmp / "py-spy.raw"
                spy_proc = subprocess.Popen(
                    [*_spy_argv(spy, pid, SPY_WINDOW_S, rate_hz, nonblocking), "-o", str(raw)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
                time.sleep(1.5)  # let py-spy attach before the window opens
                _loaded_window(server, probe_out, pid, SPY_WINDOW_S)
                spy_text = spy_proc.communicate(timeout=SPY_WINDOW_S + 60)[0]
        finally:
            server.stop()
        problem = check_log((tmp / "vllm-profile.log").read_text(errors="replace"), "on", 1)
        if problem:
            raise SystemExit(f"profile: {problem}; log: {tmp / 'vllm-profile.log'}")
        wall = b["wall_ts"] - a["wall_ts"]
        result["window_s"] = wall
        result["tokens_per_s"] = load["tokens_per_s"]
        result["cpu"] = load["cpu"]
        maint = _maintenance(a, b, result)
        result["probe"] = probe_figures(a, b, wall, maint, window_slices(a, b))
        if spy_text:
            result["py_spy"] = _spy_result(
                spy_text, SPY_WINDOW_S, rate_hz, nonblocking, tmp / "py-spy.raw"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return result
