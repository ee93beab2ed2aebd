"""Serving on a real vLLM (tiny model, CPU): the ledger on against vLLM with no plugin loaded at
all, and a profile of the API process with the ledger on.

``ab_pairs`` starts one server per side of each pair, in the order A B B A A B ...; every
server gets the same settings, a warm-up and the same measured load: ``requests`` completions
of ``MAX_TOKENS`` tokens, ``concurrency`` in flight all the time, so the API process is busy
from the first measured request to the last. Over exactly that window it reads, from
``/proc``, the CPU seconds (utime + stime) and the context switches (voluntary + involuntary,
summed over ``/proc/PID/task/*/status``) of the API process or processes only, never the
engine's, and tokens/s from the responses. Beside them it records the CPU the rest of the
server, this load client and everything else on the machine used (``/proc/stat``), which is
what the spread between servers is read against.

The baseline loads no plugin: ``vllm.plugins.load_plugins_by_group`` (which
``load_stat_logger_plugin_factories`` calls for ``vllm.stat_logger_plugins``) loads an entry
point only when ``VLLM_PLUGINS`` is unset or names it; vLLM splits the variable on commas, so
an empty value is ``[""]``, a list that names no plugin. The "on" side names the ledger
(``VLLM_PLUGINS=ledger``), so both sides skip the same other plugins. Every server requires
an API key (``--api-key``, three keys) and every request carries one and a user; the "on" side
also runs the attribution middleware (``--middleware vllm_ledger.middleware.LedgerMiddleware``,
users on), as a launch file with usage on does. Each server's log is checked: no
``vllm-ledger`` line at all with the plugin off, one ``vllm-ledger: recording to`` and one
``vllm-ledger: attribution on`` per API process with it on.

``profile`` serves with ``bench/probe/``'s wrapper of the plugin (and the middleware under its
clock) and samples the API process with py-spy (``--gil``: only the thread holding the GIL is
recorded), over a window that covers the rank-0 maintenance pass a minute after start.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")

# The measured load: the same for every server.
MAX_TOKENS = 64
CONCURRENCY = 32  # requests in flight: enough to keep the batch full on this machine
TOKENS = 40_960  # generated tokens per server's measured load (640 requests of 64)
WARMUP_REQUESTS = 64
DP2_ARGS = ("--data-parallel-size", "2", "--api-server-count", "2")
# Whose tokens (docs/attribution.md): every server requires one of these keys, each request
# carries one (in turn) and a user (one of USERS); the ledger's servers run the attribution
# middleware with users on, as a launch file with usage on does.
KEYS = ("sk-bench-alpha-5f1e27c9d0", "sk-bench-bravo-9a03bd44e1", "sk-bench-charlie-77e0c2d1f2")
USERS = 50
AUTH_ARGS = ("--api-key", *KEYS)
MIDDLEWARE_ARGS = ("--middleware", "vllm_ledger.middleware.LedgerMiddleware")
ATTRIBUTION_ENV = {"VLLM_LEDGER_ATTRIBUTE_USER": "1"}
# The plugin's name in vLLM's allow-list (the entry point's name in the bundle's dist-info).
PLUGIN_NAME = "ledger"


# ---- load ------------------------------------------------------------------------------------


async def _load(
    url: str,
    *,
    concurrency: int,
    warmup: int,
    requests: int | None = None,
    until: float | None = None,
    window: Callable[[], Any] | None = None,
) -> dict[str, Any]:
    """Warm up, then the measured load: ``requests`` completions (or as many as fit before
    ``until``, a monotonic deadline), ``concurrency`` in flight at every moment until the last
    is sent. ``window()`` is called as the measured load starts; its ``stop()`` as it ends."""
    import httpx

    retries = 0

    async def one(client: httpx.AsyncClient, i: int) -> int:
        nonlocal retries
        for attempt in range(3):
            try:
                r = await client.post(
                    "/v1/completions",
                    json={
                        "model": "tiny",
                        "prompt": f"measure throughput {i} " * 8,
                        "max_tokens": MAX_TOKENS,
                        "ignore_eos": True,
                        "user": f"user-{i % USERS:02d}",
                    },
                    headers={"Authorization": f"Bearer {KEYS[i % len(KEYS)]}"},
                )
                break
            except httpx.TransportError:
                # A kept-alive connection the server closed as it was reused: send it again
                # (counted; the request had not reached vLLM's engine).
                if attempt == 2:
                    raise
                retries += 1
        r.raise_for_status()
        return int(r.json()["usage"]["completion_tokens"])

    async def run(
        client: httpx.AsyncClient, first: int, n: int | None, deadline: float | None
    ) -> list[tuple[float, int]]:
        done: list[tuple[float, int]] = []
        sent = 0

        async def worker() -> None:
            nonlocal sent
            while (n is None or sent < n) and (deadline is None or time.monotonic() < deadline):
                i = first + sent
                sent += 1
                tokens = await one(client, i)
                done.append((time.perf_counter(), tokens))

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return done

    # Drop idle connections before uvicorn's 5 s keep-alive does: reusing one it is closing at
    # that moment ends in a ReadError.
    limits = httpx.Limits(keepalive_expiry=1.0, max_connections=concurrency + 8)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
        await run(client, -warmup, warmup, None)
        win = window() if window is not None else None
        t = time.perf_counter()
        done = await run(client, 0, requests, until)
        cpu = win.stop() if win is not None else None
    seconds = max(p for p, _ in done) - t
    tokens = sum(n for _, n in done)
    return {
        "requests": len(done),
        "tokens": tokens,
        "seconds": seconds,
        "tokens_per_s": tokens / seconds,
        "quarters_tokens_per_s": _quarters(t, done),
        "retries": retries,
        "cpu": cpu,
    }


def _quarters(t0: float, done: list[tuple[float, int]]) -> list[float]:
    """tokens/s in each quarter of the load, by order of completion (the spread within a
    server)."""
    done = sorted(done)
    k = len(done) // 4
    if k == 0:
        return [sum(n for _, n in done) / (done[-1][0] - t0)]
    out, start = [], t0
    for q in range(4):
        part = done[q * k : (q + 1) * k if q < 3 else len(done)]
        end = part[-1][0]
        out.append(sum(n for _, n in part) / max(end - start, 1e-9))
        start = end
    return out


# ---- /proc accounting -------------------------------------------------------------------------


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


# ---- servers ----------------------------------------------------------------------------------


def _server(
    model: Path,
    tmp: Path,
    tag: str,
    *,
    plugin: Path | None,
    env: dict[str, str],
    extra_args: tuple[str, ...] = (),
) -> Any:
    """A server with the ledger (``plugin``: a bundle folder put first on PYTHONPATH) or with
    no plugin loaded at all: .venv has vllm-ledger installed, so its entry point is found in
    both cases, and ``VLLM_PLUGINS`` decides (see the module's docstring)."""
    from devtools.vllm_server import VllmServer

    if plugin is None:
        env = {k: v for k, v in env.items() if not k.startswith("VLLM_LEDGER_")}
        extra_args = (*AUTH_ARGS, *extra_args)
    else:
        env = {**env, **ATTRIBUTION_ENV}
        extra_args = (*AUTH_ARGS, *MIDDLEWARE_ARGS, *extra_args)
    env = {**env, "VLLM_PLUGINS": PLUGIN_NAME if plugin is not None else ""}
    return VllmServer(
        model,
        env=env,
        pythonpath=[plugin] if plugin is not None else [],
        extra_args=extra_args,
        log_path=tmp / f"vllm-{tag}.log",
    )


def check_log(text: str, mode: str, writers: int) -> str | None:
    """What is wrong with a server's log for its side, or None: with the plugin off no
    ``vllm-ledger`` line at all; with it on, one ``recording to`` line and one ``attribution
    on`` line per API process."""
    if mode == "off":
        lines = [ln for ln in text.splitlines() if "vllm-ledger" in ln]
        return f"the plugin was loaded: {lines[0].strip()[:200]}" if lines else None
    n = text.count("vllm-ledger: recording to")
    if n != writers:
        return f"{n} 'vllm-ledger: recording to' line(s), want {writers} (one per API process)"
    n = text.count("vllm-ledger: attribution on")
    if n != writers:
        return f"{n} 'vllm-ledger: attribution on' line(s), want {writers} (one per API process)"
    return None


def _measure_server(
    server: Any, mode: str, tag: str, tmp: Path, *, writers: int, requests: int, concurrency: int
) -> dict[str, Any]:
    t = time.monotonic()
    server.start()
    started_s = time.monotonic() - t
    try:
        api = api_pids(server.proc.pid)
        if len(api) != writers:
            raise SystemExit(f"serving bench: found API processes {api}, want {writers}")
        pid = server.proc.pid
        load = asyncio.run(
            _load(
                server.url,
                concurrency=concurrency,
                warmup=WARMUP_REQUESTS,
                requests=requests,
                window=lambda: CpuWindow(pid, api),
            )
        )
    finally:
        server.stop()
    log = tmp / f"vllm-{tag}.log"
    problem = check_log(log.read_text(errors="replace"), mode, writers)
    if problem:
        raise SystemExit(f"serving bench: the {mode} server: {problem}; log: {log}")
    cpu, tokens = load.pop("cpu"), load["tokens"]
    return {
        "mode": mode,
        "start_s": started_s,
        **load,
        "api_cpu_ms_per_1k_tokens": 1e6 * cpu["api_cpu_s"] / tokens,
        "engine_cpu_ms_per_1k_tokens": 1e6 * cpu["engine_cpu_s"] / tokens,
        "api_ctx_switches_per_1k_tokens": 1e3 * cpu["api_ctx_switches"] / tokens,
        # The same per second of load: much of the API process's work comes with time
        # (its loop, its engine client), not with tokens, so these move less with throughput.
        "api_cpu_ms_per_s": 1e3 * cpu["api_cpu_s"] / cpu["wall_s"],
        "api_ctx_switches_per_s": cpu["api_ctx_switches"] / cpu["wall_s"],
        **cpu,
    }


def ab_pairs(
    pairs: int,
    *,
    dp: int = 1,
    tokens: int = TOKENS,
    concurrency: int = CONCURRENCY,
    label: str = "",
) -> dict[str, Any]:
    """``pairs`` A/B pairs in the order A B B A ...; every server measured the same way. With
    ``dp`` 2: ``--data-parallel-size 2 --api-server-count 2``, both API processes measured."""
    from devtools.tiny_model import make_tiny_model
    from vllm_ledger.deploy.bundle import bundle

    model = make_tiny_model(REPO / "build" / "tiny-model").resolve()
    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    bundle(tmp / "plugin")
    extra = DP2_ARGS if dp == 2 else ()
    writers = 2 if dp == 2 else 1
    requests = math.ceil(tokens / MAX_TOKENS)
    out: list[dict[str, Any]] = []
    try:
        for i in range(pairs):
            order = ("off", "on") if i % 2 == 0 else ("on", "off")
            pair: dict[str, Any] = {"pair": i + 1, "order": " ".join(order)}
            for mode in order:
                tag = f"dp{dp}-{i + 1}-{mode}"
                env = {"VLLM_LEDGER_DIR": str(tmp / f"ledger-{tag}")}  # fresh for every server
                plugin = tmp / "plugin" if mode == "on" else None
                server = _server(model, tmp, tag, plugin=plugin, env=env, extra_args=extra)
                s = _measure_server(
                    server,
                    mode,
                    tag,
                    tmp,
                    writers=writers,
                    requests=requests,
                    concurrency=concurrency,
                )
                pair[mode] = s
                print(
                    f"  {label}pair {i + 1} {mode:>3}: {s['tokens_per_s']:6.0f} tokens/s "
                    f"({s['tokens']:,} tokens in {s['seconds']:.1f} s; quarters "
                    + ", ".join(f"{r:.0f}" for r in s["quarters_tokens_per_s"])
                    + f"), API CPU {s['api_cpu_ms_per_1k_tokens']:.1f} ms and "
                    f"{s['api_ctx_switches_per_1k_tokens']:.0f} context switches per 1k tokens, "
                    f"other work {s['other_work_cores']:.2f} cores, start {s['start_s']:.0f} s",
                    flush=True,
                )
            pair["ratio"] = pair["on"]["tokens_per_s"] / pair["off"]["tokens_per_s"]
            pair["api_cpu_ratio"] = (
                pair["on"]["api_cpu_ms_per_1k_tokens"] / pair["off"]["api_cpu_ms_per_1k_tokens"]
            )
            off_ctx = pair["off"]["api_ctx_switches_per_1k_tokens"]
            pair["ctx_ratio"] = (
                pair["on"]["api_ctx_switches_per_1k_tokens"] / off_ctx if off_ctx else math.inf
            )
            out.append(pair)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "dp": dp,
        "api_processes": writers,
        "requests": requests,
        "concurrency": concurrency,
        "pairs": out,
        "analysis": analyse(out),
    }


def _cv(xs: list[float]) -> float:
    return statistics.pstdev(xs) / statistics.fmean(xs) if len(xs) > 1 else 0.0


def _se(xs: list[float]) -> float:
    return statistics.stdev(xs) / len(xs) ** 0.5 if len(xs) > 1 else 0.0


def analyse(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """The medians of the pair ratios, and what the spread is made of: quarters within a
    server, servers within a side, order, other work on the machine."""
    servers = [p[m] for p in pairs for m in ("off", "on")]
    by_mode = {m: [p[m] for p in pairs] for m in ("off", "on")}
    out: dict[str, Any] = {}
    for key, ratio in (
        ("tokens_per_s", "ratio"),
        ("api_cpu_ms_per_1k_tokens", "api_cpu_ratio"),
        ("api_ctx_switches_per_1k_tokens", "ctx_ratio"),
    ):
        rs = [p[ratio] for p in pairs]
        out[key] = {
            "on": statistics.median(s[key] for s in by_mode["on"]),
            "off": statistics.median(s[key] for s in by_mode["off"]),
            "ratio_median": statistics.median(rs),
            "ratio_min": min(rs),
            "ratio_max": max(rs),
            "ratio_se": _se(rs),
            "between_servers_cv": {m: _cv([s[key] for s in by_mode[m]]) for m in by_mode},
        }
    for key in ("api_cpu_ms_per_s", "api_ctx_switches_per_s"):
        rs = [p["on"][key] / p["off"][key] for p in pairs if p["off"][key]]
        out[key] = {
            "on": statistics.median(s[key] for s in by_mode["on"]),
            "off": statistics.median(s[key] for s in by_mode["off"]),
            "ratio_median": statistics.median(rs) if rs else None,
            "ratio_min": min(rs, default=None),
            "ratio_max": max(rs, default=None),
            "between_servers_cv": {m: _cv([s[key] for s in by_mode[m]]) for m in by_mode},
        }
    on_first = [p["ratio"] for p in pairs if p["order"].startswith("on")]
    off_first = [p["ratio"] for p in pairs if p["order"].startswith("off")]
    rates = [s["tokens_per_s"] for s in servers]
    other = [s["other_work_cores"] for s in servers]
    corr = (
        statistics.correlation(other, rates) if len(servers) > 2 and len(set(other)) > 1 else None
    )
    out.update(
        {
            "within_server_cv": statistics.median(_cv(s["quarters_tokens_per_s"]) for s in servers),
            "ratio_when_on_first": statistics.median(on_first) if on_first else None,
            "ratio_when_off_first": statistics.median(off_first) if off_first else None,
            "corr_other_work_vs_tokens_per_s": corr,
            "other_work_cores_range": [min(other), max(other)],
            "load_seconds_range": [
                min(s["seconds"] for s in servers),
                max(s["seconds"] for s in servers),
            ],
            "start_seconds_range": [
                min(s["start_s"] for s in servers),
                max(s["start_s"] for s in servers),
            ],
            "tokens_per_server": min(s["tokens"] for s in servers),
        }
    )
    return out


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
    """A PYTHONPATH folder: the package, bench/probe/, the clock it uses, an entry point to it."""
    from vllm_ledger.deploy.bundle import bundle

    bundle(dest)
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "bench" / "probe", dest / "vllm_ledger_bench_probe", ignore=skip)
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


# Frames that say where a sample of the ledger's threads was: first match wins.
RECORDER_PARTS = (
    ("flush: commit_batch (SQLite)", ("commit_batch",)),
    ("flush: sequence marker", ("write_sequence_marker",)),
    ("flush: other", ("Recorder._flush", "Recorder._commit")),
    ("file check (stat, quick_check)", ("_check_file",)),
    ("hourly compaction", ("Recorder.compact",)),
    ("take in / accumulate events", ("_take_in", "_accumulate")),
    ("wakeup: wait and loop", ("",)),
)
MAINTENANCE_PARTS = (
    ("spawn the pass (fork/exec)", ("spawn_pass", "Popen", "_execute_child")),
    ("wait for the pass", ("wait_for_pass", "communicate", "wait")),
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


# Files whose frames are the attribution middleware's own code (and what it calls into: the
# body scan, the tag book, the key names, the over-budget file it reads).
MIDDLEWARE_FILES = (
    "vllm_ledger/write/middleware.py",
    "vllm_ledger/write/bodyscan.py",
    "vllm_ledger/write/tags.py",
    "vllm_ledger/write/keys.py",
    "vllm_ledger/format/overbudget.py",
)
CLOCK_FILES = ("vllm_ledger_bench_mwclock.py", "vllm_ledger_bench_probe/")


def _deepest_ours(stack: str) -> str | None:
    """Whose is the deepest frame of the ledger or the probe in a stack: ``middleware`` (what
    runs below it, the standard library's hmac or json, is the middleware's too), ``clock``
    (the probe's clock or its control middleware, itself the innermost frame: below one of
    them runs the app or the server), or None."""
    frames = stack.split(";")
    for i in range(len(frames) - 1, -1, -1):
        frame = frames[i]
        if any(f in frame for f in MIDDLEWARE_FILES):
            return "middleware"
        if any(f in frame for f in CLOCK_FILES):
            return "clock" if i == len(frames) - 1 else None
        if "vllm_ledger" in frame:
            return None
    return None


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
            ours = _deepest_ours(stack)
            # Prometheus first: the probe's timing wrapper around it lives in the probe module.
            if "PrometheusStatLogger.record" in stack:
                main_parts["vLLM's PrometheusStatLogger.record()"] += n
            elif "LedgerStatLogger.record" in stack or "Recorder.submit" in stack:
                main_parts["ledger record() (plugin hot path)"] += n
            elif ours == "middleware":
                main_parts["ledger middleware (its own frames)"] += n
            elif ours == "clock":
                main_parts["the probe's middleware clock and control"] += n
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
    """The median (us) of the calls between two snapshots of the probe's histogram (16 buckets
    an octave of nanoseconds), interpolated within its bucket on the log scale."""
    counts = [y - x for x, y in zip(a, b, strict=True)]
    total, seen = sum(counts), 0
    if not total:
        return None
    for k, c in enumerate(counts):
        if seen + c >= total / 2:
            return float(2 ** ((k + (total / 2 - seen) / c) / 16) / 1e3)
        seen += c
    return None


def vfork_wait_releases_gil() -> dict[str, Any]:
    """Whether this interpreter lets the GIL go while ``subprocess`` waits for a vfork'ed
    child to exec (3.11.7 does; not every CPython release does): a spawn made slow on
    purpose (30,000 missing PATH entries to try before ``true``), timed beside a thread
    that counts how long it waits for the GIL. The API processes run this same interpreter."""
    import threading

    state: dict[str, Any] = {"stop": False, "longest": 0.0, "t": None}

    def spin() -> None:
        last = time.perf_counter()
        while not state["stop"]:
            now = time.perf_counter()
            if state["t"] is not None and now >= state["t"]:
                state["longest"] = max(state["longest"], now - last)
            last = now

    real = os.get_exec_path
    bogus = [f"/nonexistent-{i}" for i in range(30_000)]
    t = threading.Thread(target=spin, daemon=True)
    t.start()
    time.sleep(0.1)
    try:
        os.get_exec_path = lambda env=None: [*bogus, *real(env)]  # subprocess looks it up
        state["t"] = time.perf_counter()
        p = subprocess.Popen(["true"], close_fds=True, start_new_session=True)
        spawn = time.perf_counter() - state["t"]
        state["t"] = None
        p.wait()
    except OSError as exc:
        return {"released": None, "error": str(exc)}
    finally:
        os.get_exec_path = real
        state["stop"] = True
        t.join()
    released = spawn >= 0.02 and state["longest"] < spawn / 2
    return {
        "released": released if spawn >= 0.02 else None,
        "spawn_ms": 1e3 * spawn,
        "other_thread_longest_wait_ms": 1e3 * state["longest"],
    }


def spawn_gil_ms(m: dict[str, Any], vfork_releases: bool | None) -> float:
    """The part of a maintenance spawn that held the API process's GIL: all of it, or, where
    the vfork wait lets the GIL go, all but fork_exec's time off the CPU (that wait)."""
    wall = float(m["spawn_wall_s"])
    if vfork_releases and "fork_exec_wall_s" in m:
        wall -= float(m["fork_exec_wall_s"]) - float(m["fork_exec_cpu_s"])
    return 1e3 * wall


def middleware_window(a: dict[str, Any], b: dict[str, Any], wall: float) -> dict[str, Any]:
    """The attribution middleware between two probe snapshots: its own CPU per second and per
    call, the control's (``NullMiddleware``), what the clock charged to the app and the
    server, the tag book's counts."""
    ma, mb = a.get("middleware") or {}, b.get("middleware") or {}
    if not mb:
        return {}
    calls = mb["calls"] - ma.get("calls", 0)
    own = mb["own_cpu_s"] - ma.get("own_cpu_s", 0.0)
    null = net = None
    stretches = {k: v - (ma.get("stretches") or {}).get(k, 0) for k, v in mb["stretches"].items()}
    if mb.get("null_cpu_s") is not None:
        null = mb["null_cpu_s"] - (ma.get("null_cpu_s") or 0.0)
        # The control's CPU per stretch is the clock's error here: taken off each of the
        # attribution middleware's stretches (and with it the control's few frames of code).
        per_stretch = null / stretches["null"] if stretches.get("null") else 0.0
        net = max(0.0, own - per_stretch * stretches.get("mw", 0))
    charged = {
        k: v - (ma.get("charged_cpu_s") or {}).get(k, 0.0) for k, v in mb["charged_cpu_s"].items()
    }
    return {
        "calls_per_s": calls / wall,
        "own_cpu_ms_per_s": 1e3 * own / wall,
        "own_cpu_us_per_call": 1e6 * own / calls if calls else None,
        "null_cpu_ms_per_s": None if null is None else 1e3 * null / wall,
        "null_cpu_us_per_call": None if null is None or not calls else 1e6 * null / calls,
        "net_cpu_ms_per_s": None if net is None else 1e3 * net / wall,
        "net_cpu_us_per_call": None if net is None or not calls else 1e6 * net / calls,
        "charged_cpu_ms_per_s": {k: 1e3 * v / wall for k, v in charged.items()},
        "stretches_per_call": {k: v / calls if calls else None for k, v in stretches.items()},
        "bias_us": mb["bias_us"],
        "tagged": mb["tagged"] - ma.get("tagged", 0),
        "faults": mb["faults"] - ma.get("faults", 0),
        "book_full": mb["book_full"],
    }


def _window_slices(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The recorder thread's GIL slices between two probe snapshots: per kind (count, mean and
    CPU, from the running sums) and the longest (from the probe's log of slices >= 0.2 ms)."""
    kinds = {}
    for label, s in b.get("slices", {}).items():
        s0 = a.get("slices", {}).get(label, {"n": 0, "wall_s": 0.0, "cpu_s": 0.0})
        n = s["n"] - s0["n"]
        if n:
            kinds[label] = {
                "n": n,
                "mean_ms": 1e3 * (s["wall_s"] - s0["wall_s"]) / n,
                "cpu_ms": 1e3 * (s["cpu_s"] - s0["cpu_s"]),
            }
    logged = [e for e in b.get("slice_log", []) if a["wall_ts"] <= e[0] <= b["wall_ts"]]
    logged.sort(key=lambda e: -e[1])
    return {
        "kinds": kinds,
        "longest": [
            {"wall_ms": 1e3 * w, "cpu_ms": 1e3 * c, "label": lb, "ts": ts}
            for ts, w, c, lb in logged[:5]
        ],
        "over_1ms": sum(1 for e in logged if e[1] >= 0.001),
        "over_5ms": sum(1 for e in logged if e[1] >= 0.005),
        "log_full": len(b.get("slice_log", [])) >= 5000,
    }


def profile(seconds: float, rate_hz: int = 100, spy_mode: str = "blocking") -> dict[str, Any]:
    """Serve with the probe, sample the API process with py-spy under load."""
    from devtools.tiny_model import make_tiny_model
    from tests.generate import generate

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
        # The control middleware beside the ledger's (added after it: the outer one).
        control = ("--middleware", "vllm_ledger_bench_probe.middleware.NullMiddleware")
        server = _server(model, tmp, "profile", plugin=plugin, env=env, extra_args=control)
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
            snaps: dict[str, Any] = {}

            class Window:
                """Opens as the measured load starts (after the warm-up)."""

                def __init__(self) -> None:
                    snaps["a"] = _read_probe(probe_out)
                    self.cpu = CpuWindow(server.proc.pid, [pid])

                def stop(self) -> dict[str, Any]:
                    return self.cpu.stop()

            load = asyncio.run(
                _load(
                    server.url,
                    concurrency=CONCURRENCY,
                    warmup=WARMUP_REQUESTS,
                    until=time.monotonic() + window - 3,
                    window=Window,
                )
            )
            time.sleep(1.2)  # one more probe write
            b = _read_probe(probe_out)
            a = snaps["a"]
            spy_text = ""
            if spy_proc is not None:
                spy_text = spy_proc.communicate(timeout=window + 60)[0]
        finally:
            server.stop()
        problem = check_log((tmp / "vllm-profile.log").read_text(errors="replace"), "on", 1)
        if problem:
            raise SystemExit(f"profile: {problem}; log: {tmp / 'vllm-profile.log'}")
        wall = b["wall_ts"] - a["wall_ts"]
        result["window_s"] = wall
        result["tokens_per_s"] = load["tokens_per_s"]
        result["cpu"] = load["cpu"]
        maint = [
            {**m, "in_window": a["wall_ts"] <= m["start_ts"] <= b["wall_ts"]}
            for m in b["maintenance"]
        ]
        slices = _window_slices(a, b)
        longest_slice = slices["longest"][0]["wall_ms"] if slices["longest"] else None
        vfork = vfork_wait_releases_gil() if any("spawn_wall_s" in m for m in maint) else {}
        result["vfork_wait_releases_gil"] = vfork
        for m in maint:
            if "spawn_wall_s" in m:
                m["spawn_gil_ms"] = spawn_gil_ms(m, vfork.get("released"))
        spawns = [m["spawn_gil_ms"] for m in maint if m["in_window"] and "spawn_gil_ms" in m]
        reasons = b.get("wakeups_by_reason") or {}
        result["probe"] = {
            "shape": b.get("shape"),
            "record_calls_per_s": _delta(a, b, "submitted_total") / wall,
            "wakeups_per_s": _delta(a, b, "wakeups_total") / wall,
            "wakeups_by_reason": {
                k: v - (a.get("wakeups_by_reason") or {}).get(k, 0) for k, v in reasons.items()
            },
            "flushes_per_s": (b["flush"]["n"] - a["flush"]["n"]) / wall,
            "flush_ms_mean": 1e3
            * (b["flush"]["wall_s"] - a["flush"]["wall_s"])
            / max(1, b["flush"]["n"] - a["flush"]["n"]),
            "flush_ms_max": 1e3 * b["flush"]["max_wall_s"],
            "flush_cpu_ms_per_s": 1e3 * (b["flush"]["cpu_s"] - a["flush"]["cpu_s"]) / wall,
            "take_ins_per_s": (b["take_in"]["n"] - a["take_in"]["n"]) / wall,
            "take_in_events_per_call": (b["take_in"]["events"] - a["take_in"]["events"])
            / max(1, b["take_in"]["n"] - a["take_in"]["n"]),
            "take_in_cpu_ms_per_s": 1e3 * (b["take_in"]["cpu_s"] - a["take_in"]["cpu_s"]) / wall,
            "check_file_cpu_ms_per_s": 1e3
            * (b["check_file"]["cpu_s"] - a["check_file"]["cpu_s"])
            / wall,
            "compact": b["compact"],
            "recorder_cpu_ms_per_s": 1e3 * _delta(a, b, "recorder_cpu_s") / wall,
            "main_thread_cpu_ms_per_s": 1e3 * _delta(a, b, "main_thread_cpu_s") / wall,
            "process_cpu_ms_per_s": 1e3 * _delta(a, b, "process_cpu_s") / wall,
            "maintenance": maint,
            "gil_slices": slices,
            "switch_interval_ms": 1e3 * (b.get("switch_interval_s") or 0.005),
            # The longest stretch of ledger code holding the GIL in the window: a recorder
            # slice, or the spawn of the maintenance child (None where neither was measured).
            "longest_gil_hold_ms": max([x for x in (longest_slice, *spawns) if x is not None])
            if longest_slice is not None or spawns
            else None,
            "timer_bias_us": b.get("timer_bias_us") or 0.0,
            "timer_bias_cpu_us": b.get("timer_bias_cpu_us") or 0.0,
            **{
                f"{k}_cpu_us_per_call": max(
                    0.0,
                    1e6
                    * (b[k].get("cpu_s", 0.0) - a[k].get("cpu_s", 0.0))
                    / max(1, b[k]["n"] - a[k]["n"])
                    - (b.get("timer_bias_cpu_us") or 0.0),
                )
                for k in ("ledger_record", "prometheus_record")
            },
            "dropped": _delta(a, b, "dropped_total"),
            "ledger_record_max_us": 1e6 * b["ledger_record"]["max_wall_s"],
            **{
                f"{k}_us_per_call": 1e6
                * (b[k]["wall_s"] - a[k]["wall_s"])
                / max(1, b[k]["n"] - a[k]["n"])
                for k in ("ledger_record", "prometheus_record")
            },
            **{
                f"{k}_us_median": _hist_median(a[k]["hist"], b[k]["hist"])
                for k in ("ledger_record", "prometheus_record")
            },
            "prometheus_calls_per_s": (b["prometheus_record"]["n"] - a["prometheus_record"]["n"])
            / wall,
            "middleware": middleware_window(a, b, wall),
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
                (REPO / "bench" / "out").mkdir(parents=True, exist_ok=True)
                shutil.copy(raw, REPO / "bench" / "out" / "profile-py-spy.raw")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return result
