"""Fresh processes timed: every command runs on the venv's python (the baseline included),
each once untimed and then round by round beside the others, so machine noise falls on all
alike; and a report's peak RSS, measured by the process itself.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.ledgers import NOW
from bench.results import DETAILS

REPO = Path(__file__).resolve().parent.parent
# Every timed command runs on the venv's python, the baseline included.
PY = (
    str(REPO / ".venv" / "bin" / "python")
    if (REPO / ".venv/bin/python").exists()
    else sys.executable
)
ENV = dict(os.environ, PYTHONPATH=str(REPO))
RSS_WRAPPER = (
    "import resource, runpy, sys\n"
    "sys.argv = ['vllm-ledger', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('vllm_ledger', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
)


def report_cmd(root: Path, *extra: str) -> list[str]:
    return [
        PY,
        "-m",
        "vllm_ledger",
        "report",
        "--json",
        "--root",
        str(root),
        "--at",
        str(NOW),
        *extra,
    ]


def _timed_run(argv: list[str]) -> float:
    t = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    elapsed = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{p.stderr.decode()[-3000:]}")
    return elapsed


def interleaved(cmds: dict[str, list[str]], repeats: int) -> dict[str, list[float]]:
    """Wall seconds of fresh processes: one untimed run of each (page cache, .pyc), then
    ``repeats`` rounds, each running every command once, starting one further each round."""
    names = list(cmds)
    for n in names:
        _timed_run(cmds[n])
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        k = r % len(names)
        for n in names[k:] + names[:k]:
            times[n].append(_timed_run(cmds[n]))
    DETAILS.setdefault("timings_s", {}).update(times)
    return times


def med_ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1000


def spread(name: str, xs: list[float]) -> str:
    q = statistics.quantiles(xs, n=4)
    return f"{name}: median {med_ms(xs):.1f} ms, quartiles {q[0] * 1e3:.1f}-{q[2] * 1e3:.1f} ms"


def peak_rss_mb(root: Path) -> float:
    """Peak RSS of one report, measured by the process itself (RUSAGE_CHILDREN would keep
    the largest child seen so far, such as the vLLM-importing hot-path bench)."""
    p = subprocess.run(
        [PY, "-c", RSS_WRAPPER, *report_cmd(root)[3:]], capture_output=True, text=True, env=ENV
    )
    return int(p.stderr.strip().splitlines()[-1]) / 1024
