"""Serving on a real vLLM (tiny model, CPU): the ledger on against vLLM with no plugin loaded at
all, in A/B pairs of fresh servers.

``ab_pairs`` starts one server per side of each pair, in the order A B B A A B ...; every
server gets the same settings, a warm-up and the same measured load (``bench/load.py``):
``requests`` completions of ``MAX_TOKENS`` tokens, ``concurrency`` in flight all the time, so
the API process is busy from the first measured request to the last. Over exactly that window
it reads, from ``/proc`` (``bench/procstat.py``), the CPU seconds and the context switches of
the API process or processes only, never the engine's, and tokens/s from the responses. Beside
them it records the CPU the rest of the server, this load client and everything else on the
machine used, which is what the spread between servers is read against (``analyse``).

The baseline loads no plugin: ``vllm.plugins.load_plugins_by_group`` (which
``load_stat_logger_plugin_factories`` calls for ``vllm.stat_logger_plugins``) loads an entry
point only when ``VLLM_PLUGINS`` is unset or names it; vLLM splits the variable on commas, so
an empty value is ``[""]``, a list that names no plugin. The "on" side names the ledger
(``VLLM_PLUGINS=ledger``), so both sides skip the same other plugins (``bench/servers.py``).
Every server requires an API key and every request carries one and a user; the "on" side also
runs the attribution middleware. Each server's log is checked: no ``vllm-ledger`` line at all
with the plugin off, one ``vllm-ledger: recording to`` and one ``vllm-ledger: attribution on``
per API process with it on.
"""

from __future__ import annotations

import asyncio
import math
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.load import CONCURRENCY, MAX_TOKENS, TOKENS, WARMUP_REQUESTS, run_load
from bench.procstat import CpuWindow, api_pids
from bench.servers import check_log, vllm_server

REPO = Path(__file__).resolve().parent.parent
DP2_ARGS = ("--data-parallel-size", "2", "--api-server-count", "2")


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
            run_load(
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
                server = vllm_server(model, tmp, tag, plugin=plugin, env=env, extra_args=extra)
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
