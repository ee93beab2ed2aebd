"""The rank-0 maintenance pass, kept out of the serving process: a low-priority child.

The API process of rank 0 starts one daemon thread that sleeps, then spawns
``python -m vllm_ledger.maintenance ROOT`` (compaction of finished files and the summary of
finished files, ``maintenance.py``) and waits for it to exit: a minute after start, then
every six hours. The child lowers itself to the idle CPU class (``nice`` 19, and
``SCHED_IDLE`` where the kernel allows), so its SQLite reads and Python work never take the
serving loop's GIL and yield the cores to anything else. All the API process does is one
``fork``/``exec`` and a wait in ``poll()`` on a pidfd (the child's exit) and its stderr pipe,
which holds no GIL.

The child imports only the standard library and this package, found through the same folder
this module was loaded from (a bundle on ``PYTHONPATH`` or an installed package alike). A
pass that fails or hangs never touches serving: its exit status and last error line are
logged once, and a pass that runs past ``PASS_TIMEOUT_S`` is killed (SQLite rolls its
transaction back); the pass holds a lock, so two never overlap.

No zombie is left. The API process is often PID 1 of its container, or the child of a PID 1
that reaps nothing (a container without an init), so the parent reaps the child itself on
every path (``end_child``): the wait ends on the child's exit, not on its stderr pipe (a
process the child left behind could hold the pipe open forever), the whole process group of
the child (its own session) is killed before the child is reaped, and a member of that group
this process inherited (as PID 1 or a subreaper does) is reaped too. A pass still running when
the API process exits is ended and reaped at exit (``end_running_pass``) rather than left to
a PID 1 that may never reap it; the next start runs it again. Only a SIGKILL of the API
process itself leaves the child to its new parent.

Standard library only, and no read-side import: this runs inside vLLM.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import select
import signal
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
POLL_STEP_S = 0.5  # how often the child's exit is checked where no pidfd can be had
ERR_KEEP_BYTES = 4096  # of the child's stderr: its last line is logged
_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent)

# The passes this process runs now, ended at its exit (``end_running_pass``); the pid that
# started them (a forked child inherits the set, and must not end its parent's pass).
_running: set[subprocess.Popen[bytes]] = set()
_owner_pid = os.getpid()


def child_argv(root: Path) -> list[str]:
    """The child's command line: this interpreter, the pass's module, the root."""
    return [sys.executable, "-m", "vllm_ledger.maintenance", str(root)]


def child_env(env: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The serving process's environment with this package's folder first on PYTHONPATH."""
    out = dict(env)
    rest = out.get("PYTHONPATH", "")
    out["PYTHONPATH"] = _PACKAGE_PARENT + (os.pathsep + rest if rest else "")
    return out


def spawn_child(argv: list[str]) -> subprocess.Popen[bytes]:
    """Start ``argv`` as a pass is started: in a session (and process group) of its own, so a
    Ctrl-C meant for vLLM does not cut it in half and ``end_child`` can end all of it."""
    return subprocess.Popen(
        argv,
        env=child_env(os.environ),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        close_fds=True,
        start_new_session=True,
    )


def spawn_pass(root: Path) -> subprocess.Popen[bytes]:
    """Start one maintenance pass in a child process (it lowers its own priority)."""
    return spawn_child(child_argv(root))


def wait_for_pass(proc: subprocess.Popen[bytes], timeout_s: float = PASS_TIMEOUT_S) -> int:
    """Wait for the child (no GIL held while waiting); kill it past the limit; reap it on every
    path (``end_child``). Its exit status, negative for a signal. Never raises."""
    err = bytearray()
    exited = False
    try:
        exited = _wait_exit(proc, timeout_s, err)
    except Exception as exc:  # the child is still ended and reaped below
        logger.warning("vllm-ledger: waiting for the maintenance pass failed: %s", exc)
    finally:
        status = end_child(proc)
    if not exited:
        logger.warning(
            "vllm-ledger: maintenance pass killed after %.0f s (pid %d); it runs again later",
            timeout_s,
            proc.pid,
        )
    elif status != 0:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        logger.warning(
            "vllm-ledger: maintenance pass exited with status %s: %s",
            status,
            (lines[-1] if lines else "no message")[:300],
        )
    return status


def _pidfd(pid: int) -> int | None:
    """A pidfd of ``pid`` (readable once it exits), or None where the kernel (before 5.3) or a
    seccomp filter refuses one: the wait then checks every ``POLL_STEP_S``."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _exited(pid: int) -> bool:
    """Whether child ``pid`` has exited, leaving it unreaped (its process group id stays its
    own until ``end_child`` reaps it, so no other process can be signalled by that id)."""
    try:
        flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
        return os.waitid(os.P_PID, pid, flags) is not None
    except ChildProcessError:  # reaped already: nothing left to wait for
        return True


def _read(fd: int, err: bytearray) -> int | None:
    """Append what ``fd`` holds now to ``err`` (its last ``ERR_KEEP_BYTES``): the bytes read,
    0 at EOF, None when nothing is there now (a non-blocking ``fd``)."""
    try:
        chunk = os.read(fd, 65536)
    except BlockingIOError:
        return None
    err += chunk
    del err[:-ERR_KEEP_BYTES]
    return len(chunk)


def _wait_exit(proc: subprocess.Popen[bytes], timeout_s: float, err: bytearray) -> bool:
    """Whether the child exited within ``timeout_s``, its stderr gathered into ``err``
    meanwhile. One ``poll()`` on its pidfd and its stderr pipe, woken by either."""
    deadline = time.monotonic() + timeout_s
    pidfd = _pidfd(proc.pid)
    errfd = proc.stderr.fileno() if proc.stderr is not None else None
    poller = select.poll()
    for fd in (pidfd, errfd):
        if fd is not None:
            poller.register(fd, select.POLLIN)
    try:
        while not _exited(proc.pid):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            step_s = left if pidfd is not None else min(left, POLL_STEP_S)
            for fd, _event in poller.poll(step_s * 1000):
                if fd == errfd and _read(fd, err) == 0:
                    poller.unregister(fd)
        if errfd is not None:  # what it wrote before it exited, without waiting for EOF
            os.set_blocking(errfd, False)
            while _read(errfd, err):
                pass
        return True
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _own_group(proc: subprocess.Popen[bytes]) -> int | None:
    """The child's process group where it leads one of its own and is not reaped yet (so the
    id is still the child's), else None."""
    if proc.returncode is not None:
        return None
    try:
        return proc.pid if os.getpgid(proc.pid) == proc.pid else None
    except OSError:
        return None


def end_child(proc: subprocess.Popen[bytes]) -> int:
    """End the child and reap it, leaving no zombie: SIGKILL to its process group (to the child
    alone where it shares this process's group), a blocking ``waitpid`` (no GIL held), then
    every member of its group this process inherited (as PID 1 or a subreaper does, when the
    child exits before them). Its exit status. Safe to call twice, and from two threads."""
    group = _own_group(proc)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group is not None:
            os.killpg(group, signal.SIGKILL)
        elif proc.returncode is None:
            proc.kill()
    status = proc.wait()
    if proc.stderr is not None:
        proc.stderr.close()
    while group is not None:
        try:
            os.waitpid(-group, 0)  # each was killed with the group: it exits promptly
        except ChildProcessError:
            group = None
    return status


def end_running_pass() -> None:
    """At exit of the API process: end and reap a pass still running (its transaction rolls
    back; the next start runs it again), so that no pass outlives it as a zombie under a PID 1
    that does not reap."""
    if os.getpid() != _owner_pid:
        return
    for proc in list(_running):
        with contextlib.suppress(Exception):
            end_child(proc)


def start_background(
    root: Path,
    *,
    first_delay_s: float = FIRST_DELAY_S,
    interval_s: float = INTERVAL_S,
    sleep: Callable[[float], None] = time.sleep,
    spawn: Callable[[Path], subprocess.Popen[bytes]] = spawn_pass,
) -> threading.Thread:
    """A daemon thread that runs a pass in a child (``spawn``) after ``first_delay_s``, then
    every ``interval_s``; a pass still running at exit is ended and reaped. For the writer of
    API rank 0 inside vLLM: never raises, never blocks."""
    global _owner_pid
    _owner_pid = os.getpid()
    atexit.unregister(end_running_pass)
    atexit.register(end_running_pass)

    def loop() -> None:
        sleep(first_delay_s)
        while True:
            try:
                proc = spawn(root)
            except Exception as exc:  # e.g. no fork possible: serving goes on
                logger.warning("vllm-ledger: maintenance pass not started: %s", exc)
            else:
                _running.add(proc)
                with contextlib.suppress(Exception):  # it logs; the next pass still runs
                    wait_for_pass(proc)
                _running.discard(proc)
            sleep(interval_s)

    t = threading.Thread(target=loop, name="vllm-ledger-maintenance", daemon=True)
    t.start()
    return t


# ---- the enforcer: a long-lived child while budgets are set (docs/budgets.md) ---------------

ENFORCER_FIRST_DELAY_S = 5.0
ENFORCER_BACKOFF_S = (5.0, 300.0)  # a child that exits is started again after this, doubling
ENFORCER_WAIT_CHUNK_S = 3600.0


def enforcer_argv(root: Path, config: Path) -> list[str]:
    return [sys.executable, "-m", "vllm_ledger.enforcer", str(root), "--config", str(config)]


def spawn_enforcer(root: Path, config: Path) -> subprocess.Popen[bytes]:
    """Start the enforcer in a child process (it lowers its own priority)."""
    return spawn_child(enforcer_argv(root, config))


def supervise_enforcer(
    root: Path,
    config: Path,
    *,
    sleep: Callable[[float], None] = time.sleep,
    spawn: Callable[[Path, Path], subprocess.Popen[bytes]] = spawn_enforcer,
    keep_going: Callable[[], bool] = lambda: True,
) -> None:
    """Run the enforcer in a child and start it again whenever it exits (backing off from 5 s
    to 5 min); it is ended and reaped at the API process's exit like a pass. Never raises."""
    sleep(ENFORCER_FIRST_DELAY_S)
    backoff = ENFORCER_BACKOFF_S[0]
    while keep_going():
        try:
            proc = spawn(root, config)
        except Exception as exc:  # e.g. no fork possible: serving goes on, unenforced
            logger.warning("vllm-ledger: enforcer not started: %s", exc)
        else:
            _running.add(proc)
            err = bytearray()
            started = time.monotonic()
            with contextlib.suppress(Exception):
                while not _wait_exit(proc, ENFORCER_WAIT_CHUNK_S, err):
                    pass
            status = end_child(proc)
            _running.discard(proc)
            lines = err.decode("utf-8", "replace").strip().splitlines()
            logger.warning(
                "vllm-ledger: the enforcer exited with status %s (%s); hard budgets are not "
                "enforced until it runs again (docs/budgets.md)",
                status,
                (lines[-1] if lines else "no message")[:300],
            )
            if time.monotonic() - started > 600:
                backoff = ENFORCER_BACKOFF_S[0]
        sleep(backoff)
        backoff = min(backoff * 2, ENFORCER_BACKOFF_S[1])


def start_enforcer(root: Path, config: Path) -> threading.Thread:
    """A daemon thread supervising the enforcer child, for the writer of API rank 0."""
    global _owner_pid
    _owner_pid = os.getpid()
    atexit.unregister(end_running_pass)
    atexit.register(end_running_pass)
    t = threading.Thread(
        target=supervise_enforcer, args=(root, config), name="vllm-ledger-enforcer", daemon=True
    )
    t.start()
    return t
