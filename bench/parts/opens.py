"""The part ``opens``: how often one command (``report --html``, ``timeline``) opens each ledger
file, counted with strace, and what files the read leaves in the root.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

from bench.ledgers import NOW
from bench.results import DETAILS, note, row
from bench.timing import ENV, PY
from tests.generate import generate

_OPEN = re.compile(r'\bopen(?:at)?\((?:AT_FDCWD|-?\d+), "([^"]+)"')


def count_opens(trace: str) -> Counter[str]:
    """Paths named by open/openat calls in an `strace -f` log (a call split by another
    thread's call shows its path on its first line only, so each call counts once)."""
    return Counter(m.group(1) for m in _OPEN.finditer(trace) if "resumed>" not in m.group(0))


def bench_opens(args: argparse.Namespace) -> None:
    strace = shutil.which("strace")
    if strace is None:
        note("opens: skipped: strace is not installed (scripts/setup.sh installs it)")
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench-opens-"))
    try:
        small = tmp / "small"
        generate(small, writers=2, days=0.05, runs=2, now=NOW)  # 2 runs x 2 writers: 4 files
        commands = {
            "report --html FILE": ["report", "--html", str(tmp / "page.html")],
            "timeline --window total": ["timeline", "--window", "total"],
        }
        for label, cmd in commands.items():
            root = tmp / f"root-{len(list(tmp.iterdir()))}"
            shutil.copytree(small, root)  # fresh: an earlier read must not change this one
            ledgers = sorted(str(p) for p in root.rglob("*.ledger.sqlite"))
            before = {str(p) for p in root.rglob("*")}
            log = tmp / "strace.txt"
            p = subprocess.run(
                [strace, "-f", "-qq", "-e", "trace=openat,open", "-o", str(log),
                 PY, "-m", "vllm_ledger", *cmd, "--root", str(root), "--at", str(NOW)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV,
            )  # fmt: skip
            if p.returncode != 0:
                raise SystemExit(f"strace {label} failed:\n{p.stderr[-3000:]}")
            opens = count_opens(log.read_text())
            per_file = [opens[f] for f in ledgers]
            created = sorted(
                os.path.relpath(q, root) for q in {str(p) for p in root.rglob("*")} - before
            )
            side = {
                suffix: sum(opens[f + suffix] for f in ledgers)
                for suffix in ("-wal", "-shm", ".seq")
            }
            DETAILS.setdefault("opens", {})[label] = {
                "per_file": {
                    os.path.relpath(f, root): n for f, n in zip(ledgers, per_file, strict=True)
                },
                "side_files": side,
                "created_in_root": created,
            }
            n = len(ledgers)
            row(
                f"{label}: opens of the {n} ledger files",
                sum(per_file),
                "opens",
                "each file once",
                n,
                "files (2 runs x 2 writers)",
                sum(per_file) / n,
                all(c == 1 for c in per_file),
            )
            row(
                "  files the read left in the root",
                len(created),
                "files",
                "0 (readers create none)",
                None,
                "",
                None,
                not created,
            )
            note(
                f"{label}: opens per file {per_file}; opens of -wal/-shm/.seq {side}; "
                f"left in the root: {_kinds(created)}"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    note(f"opens: counted with `strace -f -e trace=openat,open` on {PY} -m vllm_ledger ...")


def _kinds(paths: list[str]) -> str:
    """'4 x -wal, 4 x -shm' for a list of file names."""
    kinds = Counter(re.sub(r"^.*?\.ledger\.sqlite", "", os.path.basename(p)) or p for p in paths)
    return ", ".join(f"{n} x {k}" for k, n in sorted(kinds.items())) or "nothing"
