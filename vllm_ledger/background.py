"""The rank-0 maintenance pass, kept out of the serving process: a low-priority child.

The API process of rank 0 starts one daemon thread that sleeps, then spawns
``python -m vllm_ledger.maintenance ROOT`` (compaction of finished files and the summary of
finished files, ``maintenance.py``) and waits for it to exit: a minute after start, then
every six hours. The child lowers itself to the idle CPU class (``nice`` 19, and
``SCHED_IDLE`` where the kernel allows), so its SQLite reads and Python work never take the
serving loop's GIL and yield the cores to anything else. All the API process does is one
``fork``/``exec`` and a wait in ``poll()`` that holds no GIL.

The child imports only the standard library and this package, found through the same folder
this module was loaded from (a bundle on ``PYTHONPATH`` or an installed package alike). A
pass that fails or hangs never touches serving: its exit status and last error line are
logged once, and a pass that runs past ``PASS_TIMEOUT_S`` is killed (SQLite rolls its
transaction back). A child still running when vLLM exits finishes on its own; the pass holds
a lock, so two never overlap.

Standard library only, and no read-side import: this runs inside vLLM.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

logger = logging.getLogger("vllm.ledger.maintenance")

FIRST_DELAY_S = 60.0
INTERVAL_S = 6 * 3600.0
PASS_TIMEOUT_S = 1800.0
_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent)


def child_argv(root: Path) -> list[str]:
    """The child's command line: this interpreter, the pass's module, the root."""
    return [sys.executable, "-m", "vllm_ledger.maintenance", str(root)]


def child_env(env: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The serving process's environment with this package's folder first on PYTHONPATH."""
    out = dict(env)
    rest = out.get("PYTHONPATH", "")
    out["PYTHONPATH"] = _PACKAGE_PARENT + (os.pathsep + rest if rest else "")
    return out


def spawn_pass(root: Path) -> subprocess.Popen[bytes]:
    """Start one maintenance pass in a child process (it lowers its own priority)."""
    return subprocess.Popen(
        child_argv(root),
        env=child_env(os.environ),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        close_fds=True,
        start_new_session=True,  # a Ctrl-C meant for vLLM does not cut a pass in half
    )


def wait_for_pass(proc: subprocess.Popen[bytes], timeout_s: float = PASS_TIMEOUT_S) -> int:
    """Wait for the child (no GIL held while waiting); kill it past the limit. Never raises."""
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        with contextlib.suppress(Exception):
            proc.communicate(timeout=10)
        logger.warning(
            "vllm-ledger: maintenance pass killed after %.0f s (pid %d); it runs again later",
            timeout_s,
            proc.pid,
        )
        return -9
    if proc.returncode != 0:
        lines = (err or b"").decode("utf-8", "replace").strip().splitlines()
        logger.warning(
            "vllm-ledger: maintenance pass exited with status %s: %s",
            proc.returncode,
            (lines[-1] if lines else "no message")[:300],
        )
    return proc.returncode


def start_background(
    root: Path,
    *,
    first_delay_s: float = FIRST_DELAY_S,
    interval_s: float = INTERVAL_S,
    sleep: Callable[[float], None] = time.sleep,
) -> threading.Thread:
    """A daemon thread that runs a pass in a child after ``first_delay_s``, then every
    ``interval_s``. For the writer of API rank 0 inside vLLM: never raises, never blocks."""

    def loop() -> None:
        sleep(first_delay_s)
        while True:
            try:
                wait_for_pass(spawn_pass(root))
            except Exception as exc:  # e.g. no fork possible: serving goes on
                logger.warning("vllm-ledger: maintenance pass not started: %s", exc)
            sleep(interval_s)

    t = threading.Thread(target=loop, name="vllm-ledger-maintenance", daemon=True)
    t.start()
    return t
