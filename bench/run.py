"""make bench: every figure beside its baseline, measured in the same run.

Prints a table and writes bench/results.json. Synthetic ledgers are made by bench/generate.py
(through the project's own Recorder) under bench/out/, reused when present.

    python bench/run.py            # everything, including A/B serving on a real vLLM (~10 min)
    python bench/run.py --no-serve # skip the real-vLLM throughput comparison
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.generate import generate  # noqa: E402

OUT = REPO / "bench" / "out"
NOW = 1_795_000_000  # a fixed instant: generated ledgers are reused between runs
ROWS: list[dict] = []


def row(
    what: str,
    measured: float,
    unit: str,
    target: str,
    baseline: float | None,
    baseline_what: str,
    ratio: float | None,
    met: bool | None,
) -> None:
    ROWS.append(
        {
            "what": what,
            "measured": measured,
            "unit": unit,
            "target": target,
            "baseline": baseline,
            "baseline_what": baseline_what,
            "ratio": ratio,
            "met": met,
        }
    )
    b = "" if baseline is None else f"{baseline:,.3g} {unit}"
    r = "" if ratio is None else f"{ratio:.3g}"
    verdict = {True: "met", False: "MISSED", None: "-"}[met]
    print(
        f"{what:<52} {measured:>12,.4g} {unit:<9} {target:<26} {b:>16} {r:>8}  {verdict}",
        flush=True,
    )


# ---- 1. the hot path ---------------------------------------------------------------------

HOT_PATH = r"""
import os, sys, time, tempfile, json
sys.path.insert(0, sys.argv[1])
os.environ["VLLM_LEDGER_DIR"] = tempfile.mkdtemp()
os.environ["VLLM_LEDGER_RUN_ID"] = "bench"
os.environ["VLLM_LEDGER_MAINTENANCE"] = "0"
from vllm.config import ModelConfig, ParallelConfig, VllmConfig
from vllm.v1.engine import FinishReason
from vllm.v1.metrics.loggers import PrometheusStatLogger
from vllm.v1.metrics.stats import FinishedRequestStats, IterationStats, PrefillStats
from vllm_ledger.plugin import LedgerStatLogger
cfg = VllmConfig(parallel_config=ParallelConfig(),
                 model_config=ModelConfig(model=sys.argv[2], dtype="float32"))
it = IterationStats()
ps = PrefillStats(); ps.set(256, 128, 0); it.prompt_token_stats.update_from_output(ps)
it.num_generation_tokens = 64
it.time_to_first_tokens_iter = [0.05]
it.inter_token_latencies_iter = [0.01] * 63
it.max_num_generation_tokens_iter = [64] * 2
it.n_params_iter = [1] * 2
for _ in range(2):
    it.finished_requests.append(FinishedRequestStats(
        finish_reason=FinishReason.LENGTH, num_generation_tokens=64, decode_time=0.6,
        e2e_latency=0.8, queued_time=0.01, prefill_time=0.1, inference_time=0.7,
        num_prompt_tokens=128, mean_time_per_output_token=0.01))
prom = PrometheusStatLogger(cfg, [0])
led = LedgerStatLogger(cfg, [0])
out = {}
for name, lg in (("prom", prom), ("ledger", led)):
    best = []
    for rep in range(7):
        n = 3000
        t = time.perf_counter()
        for _ in range(n):
            lg.record(None, it, engine_idx=0)
        best.append((time.perf_counter() - t) / n)
        time.sleep(0.05)  # let the recorder drain: a real loop calls record() ~100x/s
    out[name] = sorted(best)[len(best) // 2] * 1e6
led.shutdown()
out["drops"] = led.recorder.dropped_total
print(json.dumps(out))
"""


def bench_hot_path() -> None:
    model = REPO / "build" / "tiny-model"
    p = subprocess.run(
        [sys.executable, "-c", HOT_PATH, str(REPO), str(model)], capture_output=True, text=True
    )
    if p.returncode != 0:
        print(p.stderr[-3000:])
        raise SystemExit("hot-path bench failed")
    d = json.loads(p.stdout.strip().splitlines()[-1])
    ratio = d["ledger"] / d["prom"]
    row(
        "record() per call (64 gen tokens, 2 finished)",
        d["ledger"],
        "us",
        "<= 1/30 of baseline",
        d["prom"],
        "PrometheusStatLogger.record()",
        ratio,
        ratio <= 1 / 30,
    )


# ---- 2. recorder ingest and memory -------------------------------------------------------

INGEST = r"""
import os, sys, time, tempfile, json, resource
sys.path.insert(0, sys.argv[1])
def rss_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
from vllm_ledger.write.identity import WriterIdentity
from vllm_ledger.write.recorder import Recorder
before = rss_kb()
rec = Recorder(tempfile.mkdtemp(), WriterIdentity("ingest", 0, 1))
rec.start()
time.sleep(0.3)
# Paced producer: 100 000 events/s for 5 s against the real 4096-event queue.
rate, secs = 100_000, 5.0
n = int(rate * secs)
t0 = time.perf_counter()
ev = (time.time(), 0, 100, 10, 50, ((10, 0.1),))
for i in range(n):
    rec.submit(ev)
    if i % 1000 == 999:
        ahead = (i + 1) / rate - (time.perf_counter() - t0)
        if ahead > 0:
            time.sleep(ahead)
produced_s = time.perf_counter() - t0
rec.close()
paced = {"events": n, "seconds": produced_s, "drops": rec.dropped_total}
# Unpaced: how fast the recorder drains a big backlog.
rec2 = Recorder(tempfile.mkdtemp(), WriterIdentity("ingest2", 0, 1), queue_size=10**7)
for _ in range(1_000_000):
    rec2.submit(ev)
t = time.perf_counter()
rec2.start()
rec2.close(timeout_s=120)
drain = 1_000_000 / (time.perf_counter() - t)
after = rss_kb()
print(json.dumps({"paced": paced, "drain_events_per_s": drain,
                  "rss_before_kb": before, "rss_after_kb": after}))
"""


def bench_ingest() -> None:
    p = subprocess.run([sys.executable, "-c", INGEST, str(REPO)], capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr[-3000:])
        raise SystemExit("ingest bench failed")
    d = json.loads(p.stdout.strip().splitlines()[-1])
    paced = d["paced"]
    rate = paced["events"] / paced["seconds"]
    row(
        "recorder ingest, paced at 100k events/s, 5 s",
        rate,
        "events/s",
        ">= 100000/s, zero drops",
        None,
        "",
        None,
        rate >= 95_000 and paced["drops"] == 0,
    )
    row("  drops in that run", paced["drops"], "events", "0", None, "", None, paced["drops"] == 0)
    row(
        "recorder drain rate (1M queued events)",
        d["drain_events_per_s"],
        "events/s",
        ">= 100000/s",
        None,
        "",
        None,
        d["drain_events_per_s"] >= 100_000,
    )
    # RSS added: measured around a recorder that took 1.5 M events (queue drained).
    added_mb = (d["rss_after_kb"] - d["rss_before_kb"]) / 1024
    row(
        "RSS added by the recorder (after 1.5M events)",
        added_mb,
        "MB",
        "<= 10 MB",
        None,
        "",
        None,
        added_mb <= 10,
    )


# ---- 3. report speed, disk, memory -----------------------------------------------------------


def dataset(name: str, **kw) -> Path:
    path = OUT / name
    done = path / ".complete"
    if not done.exists():
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        t = time.monotonic()
        generate(path, now=NOW, **kw)
        done.write_text(json.dumps(kw))
        print(f"  (generated {name} in {time.monotonic() - t:.0f} s)", flush=True)
    return path


def size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


RSS_WRAPPER = (
    "import resource, runpy, sys\n"
    "sys.argv = ['vllm-ledger', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('vllm_ledger', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
)


def time_report(root: Path, repeats: int = 5) -> tuple[float, float]:
    """Median wall seconds of `vllm-ledger report --json`, and its own peak RSS in MB."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    args = ["report", "--json", "--root", str(root), "--at", str(NOW)]
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        p = subprocess.run(
            [sys.executable, "-m", "vllm_ledger", *args], capture_output=True, text=True, env=env
        )
        times.append(time.perf_counter() - t)
        if p.returncode != 0:
            raise SystemExit(p.stderr)
    # Peak RSS of one more run, measured by the process itself (RUSAGE_CHILDREN would keep
    # the largest child seen so far, such as the vLLM-importing hot-path bench).
    p = subprocess.run(
        [sys.executable, "-c", RSS_WRAPPER, *args], capture_output=True, text=True, env=env
    )
    peak_mb = int(p.stderr.strip().splitlines()[-1]) / 1024
    return statistics.median(times), peak_mb


def python_startup_s() -> float:
    times = []
    for _ in range(5):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def bench_reports() -> None:
    d1 = dataset("w8-d1", writers=8, days=1)
    d8 = dataset("w8-d8", writers=8, days=8.5)
    d30 = dataset("w8-d30", writers=8, days=30)
    d365 = dataset("w8-d365", writers=8, days=365)
    t1, _ = time_report(d1)
    t30, _ = time_report(d30)
    t365, rss365 = time_report(d365)
    row(
        "report --json, 8 writers, 1-day ledger",
        t1 * 1000,
        "ms",
        "(baseline)",
        None,
        "",
        None,
        None,
    )
    row(
        "report --json, 8 writers, 30-day ledger",
        t30 * 1000,
        "ms",
        "-",
        t1 * 1000,
        "1-day",
        t30 / t1,
        None,
    )
    row(
        "report --json, 8 writers, 365-day ledger",
        t365 * 1000,
        "ms",
        "<= 300 ms, <= 1.5x 1-day",
        t1 * 1000,
        "1-day",
        t365 / t1,
        t365 <= 0.3 and t365 / t1 <= 1.5,
    )
    row("report peak RSS, 365 days", rss365, "MB", "<= 100 MB", None, "", None, rss365 <= 100)
    # Disk: one year of 8 busy writers against naive per-second rows kept forever.
    s365, s8 = size_mb(d365), size_mb(d8)
    per_second_row_bytes = s8 * 1e6 / (8 * 8.5 * 86400)
    naive_year = per_second_row_bytes * 8 * 365 * 86400 / 1e6
    growth = (s365 - s8) / ((365 - 8.5) / 365)
    row(
        "disk, 8 busy writers, one year",
        s365,
        "MB",
        "<= 300 MB",
        naive_year,
        "per-second rows kept",
        s365 / naive_year,
        s365 <= 300,
    )
    row(
        "disk growth after the first 8 days",
        growth,
        "MB/year",
        "<= 20 MB/year",
        None,
        "",
        None,
        growth <= 20,
    )
    # Runs: 8 writers x 1000 daily restarts against the same three years in 8 files.
    runs = dataset("w8-r1000", writers=8, days=1000, runs=1000)
    one = dataset("w8-d1000", writers=8, days=1000)
    for root in (runs, one):  # the pass the rank-0 writer runs in the background
        subprocess.run(
            [sys.executable, "-m", "vllm_ledger", "compact", "--root", str(root)],
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            capture_output=True,
            check=True,
        )
    tr, rssr = time_report(runs, repeats=3)
    to, _ = time_report(one, repeats=3)
    row(
        "report --json, 8 writers x 1000 runs",
        tr * 1000,
        "ms",
        "<= 1 s",
        to * 1000,
        "same data in 8 files",
        tr / to,
        tr <= 1.0,
    )
    row("  peak RSS, 8000 files", rssr, "MB", "-", None, "", None, None)
    row(
        "python startup (part of every report above)",
        python_startup_s() * 1000,
        "ms",
        "-",
        None,
        "",
        None,
        None,
    )


# ---- 4. serving throughput with the ledger on and off ----------------------------------------


def bench_serving(rounds: int = 2) -> None:
    import asyncio

    import httpx

    from devtools.tiny_model import make_tiny_model
    from devtools.vllm_server import VllmServer
    from vllm_ledger.deploy.bundle import bundle

    model = make_tiny_model(REPO / "build" / "tiny-model").resolve()
    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    bundle(tmp / "plugin")

    async def load(url: str, n: int = 96, concurrency: int = 8) -> float:
        sem = asyncio.Semaphore(concurrency)
        tokens = 0

        async def one(client: httpx.AsyncClient, i: int) -> None:
            nonlocal tokens
            async with sem:
                r = await client.post(
                    "/v1/completions",
                    json={
                        "model": "tiny",
                        "prompt": f"measure throughput {i} " * 8,
                        "max_tokens": 64,
                        "ignore_eos": True,
                    },
                )
                tokens += r.json()["usage"]["completion_tokens"]

        # Drop idle connections before uvicorn's 5 s keep-alive does: reusing one it is
        # closing at that moment ends in a ReadError.
        limits = httpx.Limits(keepalive_expiry=1.0)
        async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
            await asyncio.gather(*(one(client, -1 - i) for i in range(16)))  # warm-up
            rates = []
            for _ in range(3):  # three passes per server; the median is its figure
                tokens = 0
                t = time.perf_counter()
                await asyncio.gather(*(one(client, i) for i in range(n)))
                rates.append(tokens / (time.perf_counter() - t))
            return statistics.median(rates)

    results: dict[str, list[float]] = {"off": [], "on": []}
    for r in range(rounds):
        # A B B A: neither side always goes first (the first start after other work is slower).
        for mode in ("off", "on") if r % 2 == 0 else ("on", "off"):
            server = VllmServer(
                model,
                env={"VLLM_LEDGER_DIR": str(tmp / "ledger")},
                pythonpath=[tmp / "plugin"] if mode == "on" else [],
                log_path=tmp / f"vllm-{mode}-{r}.log",
            )
            server.start()
            try:
                results[mode].append(asyncio.run(load(server.url)))
            finally:
                server.stop()
            print(f"  serving {mode} round {r}: {results[mode][-1]:,.0f} tokens/s", flush=True)
    on, off = statistics.mean(results["on"]), statistics.mean(results["off"])
    row(
        "serving throughput, ledger on (tiny model, CPU)",
        on,
        "tokens/s",
        ">= 0.98 of off",
        off,
        "ledger off, A B B A",
        on / off,
        on / off >= 0.98,
    )
    shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--no-serve", action="store_true", help="skip the real-vLLM A/B comparison")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"vllm-ledger benchmarks on {machine}")
    print(
        f"{'what':<52} {'measured':>12} {'unit':<9} {'target':<26} {'baseline':>16} "
        f"{'ratio':>8}  verdict"
    )
    bench_hot_path()
    bench_ingest()
    bench_reports()
    if not args.no_serve:
        bench_serving()
    doc = {"machine": machine, "date": time.strftime("%Y-%m-%d"), "rows": ROWS}
    (REPO / "bench" / "results.json").write_text(json.dumps(doc, indent=2) + "\n")
    (REPO / "bench" / "results.md").write_text(markdown(doc))
    print("wrote bench/results.json and bench/results.md")


def markdown(doc: dict) -> str:
    lines = [
        f"Measured by `make bench` on {doc['machine']}, {doc['date']}.",
        "",
        "| what | measured | target | baseline (same run) | ratio | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for r in doc["rows"]:
        base = (
            ""
            if r["baseline"] is None
            else f"{r['baseline']:,.4g} {r['unit']} ({r['baseline_what']})"
        )
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.3g}"
        verdict = {True: "met", False: "**missed**", None: ""}[r["met"]]
        lines.append(
            f"| {r['what'].strip()} | {r['measured']:,.4g} {r['unit']} | {r['target']} | {base} "
            f"| {ratio} | {verdict} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
