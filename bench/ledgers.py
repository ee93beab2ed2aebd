"""The bench's synthetic ledgers: each root generated once under bench/out/ by tests/generate.py
(through the project's own Recorder, on a fake clock ending at ``NOW``) and reused by later
runs, put back as its writers left it before each use.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from bench.results import note
from tests.generate import generate

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out"
NOW = 1_795_000_000  # a fixed instant: generated ledgers are reused between runs


def dataset(name: str, **kw: Any) -> Path:
    path = OUT / name
    done = path / ".complete"
    if not done.exists():
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        t = time.monotonic()
        generate(path, now=NOW, **kw)
        done.write_text(json.dumps(kw))
        print(f"  (generated {name} in {time.monotonic() - t:.0f} s)", flush=True)
    removed = tidy(path)
    if removed:
        note(
            f"removed {removed} empty -wal/-shm file(s) an earlier read left in bench/out/{name} "
            "(they change how a reader opens the file; the opens part checks readers leave none)"
        )
    return path


def tidy(root: Path) -> int:
    """Put a generated root back as its writers left it: every writer closed cleanly, so an
    empty ``-wal`` (and its ``-shm``) beside a ledger was made by a reader."""
    removed = 0
    for wal in root.rglob("*.ledger.sqlite-wal"):
        if wal.stat().st_size == 0:
            shm = wal.with_name(wal.name[: -len("-wal")] + "-shm")
            for p in (wal, shm):
                if p.exists():
                    p.unlink()
                    removed += 1
    return removed


def size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def summary_present(root: Path) -> bool:
    return (root / ".vllm-ledger-summary.json").exists()
