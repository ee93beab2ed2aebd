"""A child run with a hard deadline and a capped output: no shell, stdin from /dev/null,
stderr discarded, in its own process group, killed whole at the deadline (for the whole run,
not for each read) or once stdout passes ``MAX_OUTPUT_BYTES``."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

MAX_OUTPUT_BYTES = 64 * 1024


@dataclass(frozen=True)
class CappedRun:
    """What a capped child run gave: ``ended`` is exit | timeout | overflow."""

    ended: str
    exit_code: int | None
    stdout: bytes


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_capped(
    argv: Sequence[str],
    *,
    deadline_s: float,
    max_bytes: int = MAX_OUTPUT_BYTES,
    monotonic: Callable[[], float] = time.monotonic,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> CappedRun:
    """Run ``argv`` (no shell) in a new process group; kill the group at the deadline or cap.

    The deadline is for the whole run, not for each read: output that trickles in (a byte
    every second) does not extend it."""
    deadline = monotonic() + deadline_s
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
        env=env,
        cwd=cwd,
    )
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    chunks: list[bytes] = []
    size = 0
    ended = "exit"
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                left = deadline - monotonic()
                if left <= 0:
                    ended = "timeout"
                    break
                if not sel.select(timeout=left):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > max_bytes:
                    ended = "overflow"
                    break
        if ended == "exit":
            try:
                proc.wait(timeout=max(0.0, deadline - monotonic()))
            except subprocess.TimeoutExpired:
                ended = "timeout"
    finally:
        # The whole group: ssh and anything it started (a ProxyCommand, a control master).
        _kill_group(proc)
        proc.stdout.close()
        proc.wait()
    code = proc.returncode if ended == "exit" else None
    return CappedRun(ended, code, b"".join(chunks)[: max_bytes + 1])


__all__ = ["MAX_OUTPUT_BYTES", "CappedRun", "run_capped"]
