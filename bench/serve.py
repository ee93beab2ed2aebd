"""Serving on a real vLLM (tiny model, CPU): throughput with the ledger on and off, and a
profile of the API process with the ledger on.

``ab_pairs`` starts one server per side of each pair, in the order A B B A A B ...; every
server gets the same settings, a fresh ledger folder, a warm-up and the same measured passes.
Beside tokens/s it records the CPU seconds each process used during the passes and how much
of the machine other work took (from ``/proc/stat``), which is what the spread between runs
is read against.

``profile`` serves with ``bench/probe.py``'s wrapper of the plugin and samples the API
process with py-spy (``--gil``: only the thread holding the GIL is recorded), over a window
that covers the rank-0 maintenance pass a minute after start.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")

# The measured load: the same for every server.
WARMUP_REQUESTS = 16
PASS_REQUESTS = 96
PASSES = 3
CONCURRENCY = 8
MAX_TOKENS = 64


# ---- load ------------------------------------------------------------------------------------


async def _passes(url: str, passes: int, until: float | None = None) -> list[dict[str, float]]:
    """Warm up, then run measured passes; each pass is PASS_REQUESTS requests, CONCURRENCY
    at a time. With ``until`` (a monotonic deadline), passes repeat until it is reached."""
    import httpx

    sem = asyncio.Semaphore(CONCURRENCY)
    tokens = 0

    async def one(client: httpx.AsyncClient, i: int) -> None:
        nonlocal tokens
        async with sem:
            r = await client.post(
                "/v1/completions",
                json={
                    "model": "tiny",
                    "prompt": f"measure throughput {i} " * 8,
                    "max_tokens": MAX_TOKENS,
                    "ignore_eos": True,
                },
            )
            r.raise_for_status()
            tokens += r.json()["usage"]["completion_tokens"]

    # Drop idle connections before uvicorn's 5 s keep-alive does: reusing one it is closing at
    # that moment ends in a ReadError.
    limits = httpx.Limits(keepalive_expiry=1.0)
    out = []
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
        await asyncio.gather(*(one(client, -1 - i) for i in range(WARMUP_REQUESTS)))
        k = 0
        while (until is None and k < passes) or (until is not None and time.monotonic() < until):
            tokens = 0
            t = time.perf_counter()
            await asyncio.gather(
                *(one(client, k * PASS_REQUESTS + i) for i in range(PASS_REQUESTS))
            )
            s = time.perf_counter() - t
            out.append({"tokens": tokens, "seconds": s, "tokens_per_s": tokens / s})
            k += 1
    return out


# ---- CPU accounting ----------------------------------------------------------------------------


def _busy_jiffies() -> int:
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields[:8]) - idle  # user nice system idle iowait irq softirq steal


def _tree_cpu(root_pid: int) -> dict[str, float]:
    """CPU seconds of the API process (the `vllm serve` process) and of its descendants."""
    import psutil

    out = {"api_s": 0.0, "engine_s": 0.0}
    with contextlib.suppress(psutil.Error):
        p = psutil.Process(root_pid)
        t = p.cpu_times()
        out["api_s"] = t.user + t.system
        for c in p.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                ct = c.cpu_times()
                out["engine_s"] += ct.user + ct.system
    return out


def _ctx_switches(pid: int) -> int:
    """Context switches of every thread of a process (each wakeup of a sleeping thread is one)."""
    total = 0
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
    return total


class CpuWindow:
    """CPU used between ``__init__`` and ``stop()``: the server's processes, this bench process
    (the load client), and everything else on the machine."""

    def __init__(self, server_pid: int) -> None:
        self.pid = server_pid
        self.t = time.monotonic()
        self.busy = _busy_jiffies()
        self.tree = _tree_cpu(server_pid)
        self.own = sum(os.times()[:2])
        self.ctx = _ctx_switches(server_pid)

    def stop(self) -> dict[str, float]:
        wall = time.monotonic() - self.t
        busy = (_busy_jiffies() - self.busy) / TICK
        tree = _tree_cpu(self.pid)
        own = sum(os.times()[:2]) - self.own
        api = tree["api_s"] - self.tree["api_s"]
        engine = tree["engine_s"] - self.tree["engine_s"]
        return {
            "wall_s": wall,
            "api_cpu_s": api,
            "engine_cpu_s": engine,
            "client_cpu_s": own,
            "machine_busy_cores": busy / wall,
            "other_work_cores": max(0.0, busy - api - engine - own) / wall,
            "api_ctx_switches_per_s": (_ctx_switches(self.pid) - self.ctx) / wall,
        }


# ---- servers ----------------------------------------------------------------------------------


def _server(model: Path, tmp: Path, tag: str, *, plugin: Path | None, env: dict[str, str]) -> Any:
    from devtools.vllm_server import VllmServer

    # .venv has vllm-ledger installed, so vLLM loads its entry point in the baseline too; with
    # no VLLM_LEDGER_DIR it records nothing, and VLLM_LEDGER_DISABLE says so outright.
    if plugin is None:
        env = {
            **{k: v for k, v in env.items() if k != "VLLM_LEDGER_DIR"},
            "VLLM_LEDGER_DISABLE": "1",
        }
    return VllmServer(
        model,
        env=env,
        pythonpath=[plugin] if plugin is not None else [],
        log_path=tmp / f"vllm-{tag}.log",
    )


def _measure_server(server: Any, mode: str, tag: str, tmp: Path) -> dict[str, Any]:
    t = time.monotonic()
    server.start()
    started_s = time.monotonic() - t
    try:
        cpu = CpuWindow(server.proc.pid)
        passes = asyncio.run(_passes(server.url, PASSES))
        cpu_d = cpu.stop()
    finally:
        server.stop()
    log = (tmp / f"vllm-{tag}.log").read_text(errors="replace")
    recording = "vllm-ledger: recording to" in log
    if recording != (mode == "on"):
        raise SystemExit(
            f"serving bench: the {mode} server {'did not record' if mode == 'on' else 'recorded'}"
            f" a ledger; log: {tmp / f'vllm-{tag}.log'}"
        )
    tokens = sum(p["tokens"] for p in passes)
    rates = [p["tokens_per_s"] for p in passes]
    return {
        "mode": mode,
        "start_s": started_s,
        "passes_tokens_per_s": rates,
        "tokens_per_s": statistics.median(rates),
        "api_cpu_ms_per_1k_tokens": 1e6 * cpu_d["api_cpu_s"] / tokens,
        "engine_cpu_ms_per_1k_tokens": 1e6 * cpu_d["engine_cpu_s"] / tokens,
        "api_ctx_switches_per_1k_tokens": 1e3
        * cpu_d["api_ctx_switches_per_s"]
        * cpu_d["wall_s"]
        / tokens,
        **cpu_d,
    }


def ab_pairs(pairs: int) -> dict[str, Any]:
    """``pairs`` A/B pairs in the order A B B A ...; every server measured the same way."""
    from devtools.tiny_model import make_tiny_model
    from vllm_ledger.deploy.bundle import bundle

    model = make_tiny_model(REPO / "build" / "tiny-model").resolve()
    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    bundle(tmp / "plugin")
    out: list[dict[str, Any]] = []
    try:
        for i in range(pairs):
            order = ("off", "on") if i % 2 == 0 else ("on", "off")
            pair: dict[str, Any] = {"pair": i + 1, "order": " ".join(order)}
            for mode in order:
                tag = f"{i + 1}-{mode}"
                env = {"VLLM_LEDGER_DIR": str(tmp / f"ledger-{tag}")}  # fresh for every server
                server = _server(
                    model, tmp, tag, plugin=tmp / "plugin" if mode == "on" else None, env=env
                )
                pair[mode] = _measure_server(server, mode, tag, tmp)
                s = pair[mode]
                print(
                    f"  pair {i + 1} {mode:>3}: {s['tokens_per_s']:7.1f} tokens/s (passes "
                    + ", ".join(f"{r:.0f}" for r in s["passes_tokens_per_s"])
                    + f"), API CPU {s['api_cpu_ms_per_1k_tokens']:.0f} ms/1k tokens, other work "
                    f"{s['other_work_cores']:.2f} cores, start {s['start_s']:.0f} s",
                    flush=True,
                )
            pair["ratio"] = pair["on"]["tokens_per_s"] / pair["off"]["tokens_per_s"]
            out.append(pair)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"pairs": out, "analysis": analyse(out)}


def _cv(xs: list[float]) -> float:
    return statistics.pstdev(xs) / statistics.fmean(xs) if len(xs) > 1 else 0.0


def analyse(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """What the spread is made of: passes within a server, servers within a side, order."""
    servers = [p[m] for p in pairs for m in ("off", "on")]
    by_mode = {m: [p[m] for p in pairs] for m in ("off", "on")}
    ratios = [p["ratio"] for p in pairs]
    on_first = [p["ratio"] for p in pairs if p["order"].startswith("on")]
    off_first = [p["ratio"] for p in pairs if p["order"].startswith("off")]
    rates = [s["tokens_per_s"] for s in servers]
    other = [s["other_work_cores"] for s in servers]
    corr = (
        statistics.correlation(other, rates) if len(servers) > 2 and len(set(other)) > 1 else None
    )
    api = {m: statistics.median(s["api_cpu_ms_per_1k_tokens"] for s in by_mode[m]) for m in by_mode}
    ctx = {
        m: statistics.median(s["api_ctx_switches_per_1k_tokens"] for s in by_mode[m])
        for m in by_mode
    }
    return {
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "ratio_se": statistics.stdev(ratios) / len(ratios) ** 0.5 if len(ratios) > 1 else 0.0,
        "within_server_cv": statistics.median(_cv(s["passes_tokens_per_s"]) for s in servers),
        "between_servers_cv": {m: _cv([s["tokens_per_s"] for s in by_mode[m]]) for m in by_mode},
        "ratio_when_on_first": statistics.median(on_first) if on_first else None,
        "ratio_when_off_first": statistics.median(off_first) if off_first else None,
        "corr_other_work_vs_tokens_per_s": corr,
        "other_work_cores_range": [min(other), max(other)],
        "api_cpu_ms_per_1k_tokens": api,
        "api_cpu_ratio_on_off": api["on"] / api["off"],
        "api_ctx_switches_per_1k_tokens": ctx,
    }


# ---- profile ----------------------------------------------------------------------------------


def _py_spy() -> str | None:
    """The venv's py-spy, installed on demand (a measuring tool, not a project dependency)."""
    exe = Path(sys.executable).parent / "py-spy"
    if exe.exists():
        return str(exe)
    print("  profile: py-spy is not installed; installing it into .venv for this measurement")
    p = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "py-spy"], capture_output=True, text=True
    )
    if p.returncode != 0 or not exe.exists():
        print(
            f"  profile: could not install py-spy ({p.stderr.strip()[-200:]}); probe figures only"
        )
        return None
    return str(exe)


def _probe_folder(dest: Path) -> Path:
    """A PYTHONPATH folder with the package, bench/probe.py and an entry point naming it."""
    from vllm_ledger.deploy.bundle import bundle

    bundle(dest)
    shutil.copy(REPO / "bench" / "probe.py", dest / "vllm_ledger_bench_probe.py")
    (info,) = dest.glob("vllm_ledger-*.dist-info")
    (info / "entry_points.txt").write_text(
        "[vllm.stat_logger_plugins]\nledger = vllm_ledger_bench_probe:ProbedLedgerStatLogger\n"
    )
    return dest


def _read_probe(path: Path, timeout_s: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            return json.loads(path.read_text())
        time.sleep(0.2)
    raise SystemExit(f"profile: the probe wrote nothing to {path}")


# Frames that say where a sample of the ledger's threads was: first match wins.
RECORDER_PARTS = (
    ("flush: commit_batch (SQLite)", ("commit_batch",)),
    ("flush: sequence marker", ("write_sequence_marker",)),
    ("flush: other", ("Recorder._flush", "Recorder._commit")),
    ("file check (stat, quick_check)", ("_check_file",)),
    ("hourly compaction", ("Recorder.compact",)),
    ("accumulate events", ("_accumulate",)),
    ("wakeup: queue.get and loop", ("",)),
)
MAINTENANCE_PARTS = (
    ("compact finished files", ("compact_file",)),
    ("read facts / refresh summary", ("read_ledger", "summary", "snapshot")),
    ("import of the read side", ("_find_and_load", "<module>")),
    ("other", ("",)),
)
_LINE = re.compile(r"^thread \((\d+)\): ([^;]*);?(.*) (\d+)$")


def _classify(stack: str, parts: tuple[tuple[str, tuple[str, ...]], ...]) -> str:
    for name, needles in parts:
        if any(n in stack for n in needles):
            return name
    return parts[-1][0]


def parse_raw(text: str) -> dict[str, Any]:
    """py-spy's raw (collapsed) output with --threads: samples per thread and per part."""
    threads: Counter[str] = Counter()
    recorder: Counter[str] = Counter()
    maint: Counter[str] = Counter()
    main_parts: Counter[str] = Counter()
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if not m:
            continue
        _tid, name, stack, n = m.group(1), m.group(2), m.group(3), int(m.group(4))
        threads[name] += n
        if name == "vllm-ledger-recorder":
            recorder[_classify(stack, RECORDER_PARTS)] += n
        elif name == "vllm-ledger-maintenance":
            maint[_classify(stack, MAINTENANCE_PARTS)] += n
        elif name == "MainThread":
            # Prometheus first: the probe's timing wrapper around it lives in the probe module.
            if "PrometheusStatLogger.record" in stack:
                main_parts["vLLM's PrometheusStatLogger.record()"] += n
            elif "LedgerStatLogger.record" in stack or "Recorder.submit" in stack:
                main_parts["ledger record() (plugin hot path)"] += n
            elif "LoggingStatLogger" in stack:
                main_parts["vLLM's LoggingStatLogger"] += n
            else:
                main_parts["everything else (vLLM serving)"] += n
    return {
        "threads": dict(threads.most_common()),
        "recorder": dict(recorder.most_common()),
        "maintenance": dict(maint.most_common()),
        "main": dict(main_parts.most_common()),
    }


def _delta(a: dict[str, Any], b: dict[str, Any], key: str) -> float:
    return float((b.get(key) or 0) - (a.get(key) or 0))


def _hist_median(a: list[int], b: list[int]) -> float | None:
    """The median of a log2 histogram's window (b - a), interpolated within its bucket (us)."""
    counts = [y - x for x, y in zip(a, b, strict=True)]
    total, seen = sum(counts), 0
    if not total:
        return None
    for k, c in enumerate(counts):
        if seen + c >= total / 2:
            lo, hi = (0.0 if k == 0 else 2.0 ** (k - 1)), 2.0**k
            return lo + (hi - lo) * (total / 2 - seen) / c
        seen += c
    return None


def profile(seconds: float, rate_hz: int = 100, spy_mode: str = "blocking") -> dict[str, Any]:
    """Serve with the probe, sample the API process with py-spy under load."""
    from bench.generate import generate
    from devtools.tiny_model import make_tiny_model
    from vllm_ledger import maintenance

    model = make_tiny_model(REPO / "build" / "tiny-model").resolve()
    tmp = Path(tempfile.mkdtemp(prefix="bench-profile-"))
    result: dict[str, Any] = {}
    try:
        # History for the maintenance pass: a day of 8 busy writers that ended 9 days ago, so
        # its per-second rows have crossed the 8-day horizon: the work a daily pass meets.
        root = tmp / "ledger"
        now = int(time.time())
        generate(root, writers=8, days=1, now=now - 9 * 86400)
        result["seed"] = "8 writers x 1 day, ended 9 days ago (per-second rows to compact)"
        plugin = _probe_folder(tmp / "probe")
        probe_out = tmp / "probe.json"
        env = {"VLLM_LEDGER_DIR": str(root), "BENCH_PROBE_OUT": str(probe_out)}
        server = _server(model, tmp, "profile", plugin=plugin, env=env)
        server.start()
        try:
            first = _read_probe(probe_out)
            pid = int(first["pid"])
            result["api_pid_is_serve_pid"] = pid == server.proc.pid
            # The window covers the maintenance pass (FIRST_DELAY_S after the plugin started).
            pass_at = float(first["init_ts"]) + maintenance.FIRST_DELAY_S
            window = max(seconds, pass_at + 20 - time.time())
            spy = _py_spy() if spy_mode != "off" else None
            nonblocking = spy_mode == "nonblocking"
            raw = tmp / "py-spy.raw"
            spy_proc = None
            if spy is not None:
                spy_proc = subprocess.Popen(
                    [spy, "record", "--pid", str(pid), "--duration", str(round(window)),
                     "--rate", str(rate_hz), "--format", "raw", "--threads", "--gil",
                     *(["--nonblocking"] if nonblocking else []), "-o", str(raw)],
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                )  # fmt: skip
            time.sleep(1.5)  # let py-spy attach before the window opens
            a = _read_probe(probe_out)
            cpu = CpuWindow(server.proc.pid)
            passes = asyncio.run(_passes(server.url, 0, until=time.monotonic() + window - 3))
            cpu_d = cpu.stop()
            time.sleep(1.2)  # one more probe write
            b = _read_probe(probe_out)
            spy_text = ""
            if spy_proc is not None:
                spy_text = spy_proc.communicate(timeout=window + 60)[0]
        finally:
            server.stop()
        wall = b["wall_ts"] - a["wall_ts"]
        tokens = sum(p["tokens"] for p in passes)
        result["window_s"] = wall
        result["tokens_per_s"] = tokens / sum(p["seconds"] for p in passes)
        result["cpu"] = cpu_d
        result["probe"] = {
            "record_calls_per_s": _delta(a, b, "submitted_total") / wall,
            "wakeups_per_s": (b["wakeups"] - a["wakeups"]) / wall,
            "flushes_per_s": (b["flush"]["n"] - a["flush"]["n"]) / wall,
            "flush_ms_mean": 1e3
            * (b["flush"]["wall_s"] - a["flush"]["wall_s"])
            / max(1, b["flush"]["n"] - a["flush"]["n"]),
            "flush_ms_max": 1e3 * b["flush"]["max_wall_s"],
            "flush_cpu_ms_per_s": 1e3 * (b["flush"]["cpu_s"] - a["flush"]["cpu_s"]) / wall,
            "check_file_cpu_ms_per_s": 1e3
            * (b["check_file"]["cpu_s"] - a["check_file"]["cpu_s"])
            / wall,
            "compact": b["compact"],
            "recorder_cpu_ms_per_s": 1e3 * _delta(a, b, "recorder_cpu_s") / wall,
            "main_thread_cpu_ms_per_s": 1e3 * _delta(a, b, "main_thread_cpu_s") / wall,
            "process_cpu_ms_per_s": 1e3 * _delta(a, b, "process_cpu_s") / wall,
            "maintenance": [
                {**m, "in_window": a["wall_ts"] <= m["start_ts"] <= b["wall_ts"]}
                for m in b["maintenance"]
            ],
            "dropped": _delta(a, b, "dropped_total"),
            **{
                f"{k}_us_per_call": 1e6
                * (b[k]["wall_s"] - a[k]["wall_s"])
                / max(1, b[k]["n"] - a[k]["n"])
                for k in ("ledger_record", "prometheus_record")
            },
            **{
                f"{k}_us_median": _hist_median(a[k]["log2_us"], b[k]["log2_us"])
                for k in ("ledger_record", "prometheus_record")
            },
            "prometheus_calls_per_s": (b["prometheus_record"]["n"] - a["prometheus_record"]["n"])
            / wall,
        }
        if spy_text:
            m = re.search(r"Samples: (\d+) Errors: (\d+)", spy_text)
            result["py_spy"] = {
                "command": f"py-spy record --pid API_PID --duration {round(window)} --rate "
                f"{rate_hz} --format raw --threads --gil"
                + (" --nonblocking" if nonblocking else ""),
                "ticks": round(window * rate_hz),
                "samples": int(m.group(1)) if m else None,
                "errors": int(m.group(2)) if m else None,
                "tail": spy_text.strip()[-300:],
            }
            if raw.exists():
                result["py_spy"].update(parse_raw(raw.read_text()))
                shutil.copy(raw, REPO / "bench" / "out" / "profile-py-spy.raw")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return result
