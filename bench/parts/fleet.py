"""The part ``fleet``: ``fleet --json`` over 200 hosts' exporter series, each under two HA
replicas, with 5 dead hosts, in a real VictoriaMetrics, against the same over 2 hosts.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.ledgers import OUT
from bench.results import DETAILS, note, row
from bench.timing import ENV, PY, spread

FLEET_HOSTS = 200
FLEET_DEAD = 5
FLEET_WINDOWS = ("today", "24h", "3d", "7d", "total")


def _fleet_exposition(alive: list[str], dead: list[str], now_ms: int) -> tuple[str, int]:
    """Exposition text with timestamps: per host two instances, each a model, the window
    figures and coverage an exporter serves, and ``up`` (0 for ``dead``, whose ledger series
    are two hours old: past a one-hour lookback). Returns the text and the alive hosts' total
    input tokens in window ``total``."""
    lines: list[str] = []
    want = 0
    for i, host in enumerate(alive + dead):
        is_alive = host in alive
        ts = now_ms - 10_000 if is_alive else now_ms - 2 * 3600 * 1000
        base = f'host="{host}",instance="{host}:9464",job="vllm-ledger"'
        lines.append(f"vllm_ledger_report_ok{{{base}}} 1 {ts}")
        for w_i, w in enumerate(FLEET_WINDOWS):
            for k in range(2):
                n = 1000 * (i + 1) + 10 * w_i + k
                pair = f'{base},window="{w}",ledger_instance="{host}:800{k}"'
                fig = f'{pair},model_name="m{(i + k) % 4}"'
                for name, v in (
                    ("input_tokens", n),
                    ("output_tokens", n // 10),
                    ("cached_tokens", n // 2),
                    ("requests", n // 100),
                    ("decode_tokens", n // 10 - 1),
                    ("decode_seconds", 1.5),
                ):
                    lines.append(f"vllm_ledger_window_{name}{{{fig}}} {v} {ts}")
                for name, v in (("complete", 1), ("uncovered_seconds", 0), ("wall_seconds", 86400)):
                    lines.append(f"vllm_ledger_window_{name}{{{pair}}} {v} {ts}")
                if is_alive and w == "total":
                    want += n
            for name, v in (("complete", 1), ("uncovered_seconds", 0), ("wall_seconds", 86400)):
                lines.append(f'vllm_ledger_window_{name}{{{base},window="{w}"}} {v} {ts}')
        lines.append(f"up{{{base}}} {1 if is_alive else 0} {now_ms - 10_000}")
    return "\n".join(lines) + "\n", want


def _fleet_run(argv: list[str]) -> tuple[float, dict[str, Any]]:
    t = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, env=ENV)
    elapsed = time.perf_counter() - t
    if p.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed:\n{p.stderr.decode()[-3000:]}")
    doc: dict[str, Any] = json.loads(p.stdout)
    return elapsed, doc


def bench_fleet(args: argparse.Namespace) -> None:
    from tests.e2e.prom import VictoriaMetrics

    work = Path(tempfile.mkdtemp(prefix="fleet-", dir=OUT))
    stores: dict[str, VictoriaMetrics] = {}
    try:
        now_ms = int(time.time() * 1000)
        alive = [f"gpu{i:03d}" for i in range(FLEET_HOSTS)]
        dead = [f"dead{i}" for i in range(FLEET_DEAD)]
        sizes = {"big": (alive, dead), "small": (alive[:2], [])}
        want: dict[str, int] = {}
        series = 0
        for name, (up_hosts, down_hosts) in sizes.items():
            vm = VictoriaMetrics(work / f"vm-{name}", work / f"vm-{name}.log").start()
            stores[name] = vm
            text, want[name] = _fleet_exposition(up_hosts, down_hosts, now_ms)
            for replica in ("r1", "r2"):  # HA replicas, no deduplication in the store
                vm.import_prometheus(text, replica=replica)
            if name == "big":
                series = 2 * text.count("\n")
        cmds = {
            name: [PY, "-m", "vllm_ledger", "fleet", "--prometheus", vm.url, "--json"]
            for name, vm in stores.items()
        }
        times: dict[str, list[float]] = {n: [] for n in cmds}
        docs: dict[str, dict[str, Any]] = {}
        for n in cmds:
            _fleet_run(cmds[n])  # untimed: page cache, .pyc, the store's caches alike
        for r in range(args.fleet_repeats):
            order = list(cmds)[r % 2 :] + list(cmds)[: r % 2]
            for n in order:
                elapsed, docs[n] = _fleet_run(cmds[n])
                times[n].append(elapsed)
        DETAILS.setdefault("timings_s", {}).update({f"fleet_{n}": t for n, t in times.items()})
        big, small = statistics.median(times["big"]), statistics.median(times["small"])
        doc = docs["big"]
        named = set(doc["missing"]) == set(dead)
        summed = doc["total"]["total"]["input"] == want["big"]
        row(
            f"fleet, {FLEET_HOSTS} hosts x 2 HA replicas + {FLEET_DEAD} dead",
            big,
            "s",
            "<= 2 s, every dead host named",
            small,
            "fleet, 2 hosts x 2 replicas",
            big / small,
            big <= 2 and named and summed,
        )
        note(
            f"fleet: {series:,} series in a real VictoriaMetrics (/api/v1/import/prometheus, "
            f"each host's window gauges under replica r1 and r2), 'fleet --json' as a fresh "
            f"process, median of {args.fleet_repeats} runs each, interleaved; "
            f"{spread('200 hosts', times['big'])}; {spread('2 hosts', times['small'])}"
        )
        note(
            f"fleet: {len(doc['hosts'])} hosts, {len(doc['missing'])} missing "
            f"({', '.join(doc['missing'])}: every dead host named: {named}); "
            f"{doc['duplicates']['series']:,} duplicate series taken once (differ in "
            f"{', '.join(doc['duplicates']['differ_in'])}); conflicts {len(doc['conflicts'])}; "
            f"total input {doc['total']['total']['input']:,} = the alive hosts' "
            f"{want['big']:,}: {summed}"
        )
    finally:
        for vm in stores.values():
            vm.stop()
        shutil.rmtree(work, ignore_errors=True)
