"""The bench's probe (bench/probe/): it runs inside a serving vLLM from a copy beside a bundle,
so it imports only the standard library, the ledger, vLLM and the bench's clock, and its
modules find one another in that copy as in the checkout; its timers count what they wrap."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import threading
from pathlib import Path

from bench.probe import slices, timers
from bench.probe.stats import HIST_BUCKETS, STATS
from bench.profiling import probe_folder

PROBE = Path(__file__).resolve().parent.parent / "bench" / "probe"
CLOCK = {"vllm_ledger_bench_mwclock", "bench"}  # the clock: the copy's name, the checkout's


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_the_probe_imports_the_standard_library_the_ledger_vllm_and_the_clock_only() -> None:
    allowed = set(sys.stdlib_module_names) | {"vllm_ledger", "vllm"} | CLOCK
    found = {p.name: sorted(_imports(p) - allowed) for p in sorted(PROBE.glob("*.py"))}
    assert {name: bad for name, bad in found.items() if bad} == {}
    assert "logger.py" in found and "middleware.py" in found


def test_the_copied_probe_imports_by_the_names_the_server_is_given(tmp_path: Path) -> None:
    """Only the folder on the path (no checkout): the entry point's module is there, the control
    middleware imports by the name ``--middleware`` gives, with the copied clock."""
    folder = probe_folder(tmp_path / "probe")
    (info,) = folder.glob("vllm_ledger-*.dist-info")
    entry = (info / "entry_points.txt").read_text()
    assert "ledger = vllm_ledger_bench_probe.logger:ProbedLedgerStatLogger" in entry
    assert not list(folder.rglob("__pycache__"))
    script = (
        "import importlib, importlib.util, json\n"
        "m = importlib.import_module('vllm_ledger_bench_probe.middleware')\n"
        "spec = importlib.util.find_spec('vllm_ledger_bench_probe.logger')\n"
        "print(json.dumps({'null': m.NullMiddleware.__name__, 'clock': m.mwclock.__name__,\n"
        "    'logger': spec.origin, 'bench': importlib.util.find_spec('bench') is not None}))\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={"PYTHONPATH": str(folder), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout.strip().splitlines()[-1])
    assert doc == {
        "null": "NullMiddleware",
        "clock": "vllm_ledger_bench_mwclock",
        "logger": str(folder / "vllm_ledger_bench_probe" / "logger.py"),
        "bench": False,
    }
    assert "class ProbedLedgerStatLogger(" in Path(doc["logger"]).read_text()


def test_a_timed_path_counts_its_calls_and_names_the_recorder_slice_it_ran_in() -> None:
    before = dict(STATS["check_file"])
    calls: list[int] = []
    wrapped = timers.timed("check_file", lambda x: calls.append(x), "file check")
    slices.on_this_thread()
    slices.open_slice()
    wrapped(7)
    slices.close_slice()
    assert calls == [7]
    assert STATS["check_file"]["n"] == before["n"] + 1
    assert STATS["check_file"]["wall_s"] >= before["wall_s"]
    assert STATS["slices"]["file check"]["n"] >= 1


def test_a_wall_timer_puts_each_call_in_one_bucket_of_its_histogram() -> None:
    STATS["_test"] = {"n": 0, "wall_s": 0.0, "cpu_s": 0.0, "max_wall_s": 0.0}
    STATS["_test"]["hist"] = [0] * HIST_BUCKETS
    try:
        wrapped = timers.timed_wall("_test", lambda: None)
        for _ in range(5):
            wrapped()
        assert STATS["_test"]["n"] == 5
        assert sum(STATS["_test"]["hist"]) == 5
    finally:
        del STATS["_test"]


def test_the_recorder_s_waits_count_the_cpu_its_thread_is_charged_in_them() -> None:
    before = dict(STATS["wait"])
    waker = slices.TimedWaker(threading.Event())
    slices.on_this_thread()
    slices.open_slice()
    assert waker.wait(0.001) is False
    waker.set()
    assert waker.wait(1.0) is True
    slices.close_slice()
    assert STATS["wait"]["n"] == before["n"] + 2
    assert STATS["wait"]["cpu_s"] >= before["cpu_s"]
