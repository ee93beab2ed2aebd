"""Run a golden case's recorded commands on fresh copies of its ledgers, and normalise output.

Shared by test_golden.py and make_golden.py, so the expected files are made exactly as the
test checks them. Only the command line is used (``python -m vllm_ledger`` through
``cli_clock.py``), never the package's modules.

A case folder holds:

* ``root/``: ledger files as the project's Recorder wrote them (checkpointed: no -wal/-shm);
* ``mtimes.json``: ``files``, each file's modification time (ns) when the case was made, and
  ``empty_files``, the zero-byte ``-wal`` files that the maintenance pass's own read-only
  opens left beside finished ledgers (the summary of finished files records their size and
  time; they hold no data, so the committed root leaves them out);
* ``commands.json``: ``{"commands": {slug: {"argv": [...], "clock": ts, "mtimes": m}}}``,
  where ``{root}`` in argv stands for the copy's path, ``clock`` is the wall clock the command
  runs under, and ``mtimes`` is ``"fresh"`` (a plain copy: files look modified now, as after a
  git checkout, so the summary of finished files matches none) or ``"restored"`` (the copy
  gets ``mtimes.json``'s times back and its empty files, so the summary's entries match and
  answer, as in the root the maintenance pass left);
* ``expected/<slug>.txt``: the command's normalised stdout, and ``expected/exit.json``: each
  slug's exit code and normalised stderr.

Normalisation (the same for stdout and stderr): the copy's path, as given and resolved, becomes
``{root}``; the value of every JSON ``"generated_at"`` (report) and ``"clock"`` (status) key
becomes ``"{wall_clock}"``. Both would differ between runs; nothing else does, because the wall
clock is fixed per command.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CASES = HERE / "cases"
LAUNCHER = HERE / "cli_clock.py"
ROOT = "{root}"
EXIT_FILE = "exit.json"

_NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_WALL_CLOCK_KEYS = re.compile(r'("(?:generated_at|clock)":\s*)' + _NUMBER)


def case_names() -> list[str]:
    return sorted(p.parent.name for p in CASES.glob("*/commands.json"))


def load_commands(case_dir: Path) -> dict[str, dict[str, Any]]:
    return json.loads((case_dir / "commands.json").read_text())["commands"]


def fresh_root(case_dir: Path, dest: Path, mtimes: str) -> Path:
    """A plain copy of the case's ledgers (contents only), with mtimes restored on request."""
    shutil.copytree(case_dir / "root", dest, copy_function=shutil.copyfile)
    if mtimes == "restored":
        doc = json.loads((case_dir / "mtimes.json").read_text())
        for rel, ns in doc["files"].items():
            os.utime(dest / rel, ns=(ns, ns))
        for rel, ns in doc["empty_files"].items():
            (dest / rel).write_bytes(b"")
            os.utime(dest / rel, ns=(ns, ns))
    elif mtimes != "fresh":
        raise ValueError(f"mtimes must be 'fresh' or 'restored', not {mtimes!r}")
    return dest


def normalise(text: str, root: Path) -> str:
    for path in sorted({str(root), str(root.resolve())}, key=len, reverse=True):
        text = text.replace(path, ROOT)
    return _WALL_CLOCK_KEYS.sub(r'\1"{wall_clock}"', text)


def run_case(case_dir: Path, work: Path) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """Every command of the case, each on its own fresh copy under ``work``.

    Returns (slug -> normalised stdout, slug -> {"exit": code, "stderr": normalised stderr}).
    """
    commands = load_commands(case_dir)
    jobs, roots = [], []
    for i, cmd in enumerate(commands.values()):
        root = fresh_root(case_dir, work / f"{i:03d}" / "root", cmd["mtimes"])
        roots.append(root)
        argv = [str(root) if a == ROOT else a for a in cmd["argv"]]
        jobs.append({"argv": argv, "clock": cmd["clock"]})
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("VLLM_LEDGER_DIR", None)
    proc = subprocess.run(
        [sys.executable, str(LAUNCHER)],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{LAUNCHER.name} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    results = json.loads(proc.stdout)
    stdout, status = {}, {}
    for slug, root, res in zip(commands, roots, results, strict=True):
        stdout[slug] = normalise(res["stdout"], root)
        status[slug] = {"exit": res["exit"], "stderr": normalise(res["stderr"], root)}
    return stdout, status
