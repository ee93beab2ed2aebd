"""py-spy in the profile: installed into the venv on demand (a measuring tool, not a project
dependency), and its raw (collapsed) output of the API process, recorded with ``--threads
--gil``, read as samples per thread and, for the ledger's threads and the main thread, per
part of the code they were in.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def executable() -> str | None:
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
