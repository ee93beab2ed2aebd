"""Shared tools for the fault-injection suite: files, mounts, WAL frames, writer processes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.ledgers import FakeClock
from vllm_ledger.format import connect
from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.read import snapshot as reader
from vllm_ledger.read.discovery import discover_paths
from vllm_ledger.read.open_ledger import read_ledger
from vllm_ledger.read.windows import Window
from vllm_ledger.write.recorder import Recorder

REPO = Path(__file__).resolve().parents[2]
WRITER_PROC = Path(__file__).resolve().parent / "writer_proc.py"
ALL_TIME = Window("all", 0, 2**40)
WAL_HEADER_BYTES = 32
WAL_FRAME_HEADER_BYTES = 24


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def wait_for(pred: Callable[[], bool], timeout_s: float = 20.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or pred}")
        time.sleep(0.01)


def identity(run_id: str, rank: int = 0, expected: int = 1, port: int = 8000) -> WriterIdentity:
    return WriterIdentity(
        run_id,
        rank,
        expected,
        pid=4000 + rank,
        instance=InstanceInfo(("tiny",), port, "testhost", "0.32.0"),
    )


def pumped_recorder(
    root: Path, run_id: str, start_ts: float, **kw: object
) -> tuple[Recorder, FakeClock]:
    """A Recorder driven by ``pump()`` on a fake clock (no thread): every step is exact."""
    clock = FakeClock(start_ts)
    rec = Recorder(root, identity(run_id), clock=clock, **kw)  # type: ignore[arg-type]
    return rec, clock


def ledger_files(root: Path) -> list[Path]:
    return sorted(discover_paths([root]))


def snapshot(path: Path, now_ts: float | None = None) -> reader.LedgerSnapshot:
    return read_ledger(path, [ALL_TIME], now_ts=now_ts)


def total_sums(snap: reader.LedgerSnapshot) -> reader.Sums:
    out = reader.Sums()
    for s in snap.window_sums(ALL_TIME).values():
        out.add(s)
    return out


# ---- mounts ------------------------------------------------------------------------------


@contextlib.contextmanager
def tmpfs(size: str = "256k") -> Iterator[Path]:
    """A real tmpfs of ``size`` mounted on a fresh directory, unmounted at the end."""
    where = Path(tempfile.mkdtemp(prefix="ledger-tmpfs-", dir="/tmp"))
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)], check=True
    )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
        with contextlib.suppress(OSError):
            where.rmdir()


def fill_disk(directory: Path) -> Path:
    """Write a filler file until the file system says it is full."""
    filler = directory / "filler.bin"
    with open(filler, "wb", buffering=0) as f:
        chunk = b"\xff" * 4096
        with contextlib.suppress(OSError):
            while True:
                f.write(chunk)
    with open(filler, "ab", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\xff")
    return filler


# ---- WAL frames --------------------------------------------------------------------------


def wal_commit_ends(wal: Path) -> list[int]:
    """Byte offsets just after each commit frame of a WAL file, in order."""
    data = wal.read_bytes()
    if len(data) < WAL_HEADER_BYTES:
        return []
    page_size = struct.unpack(">I", data[8:12])[0]
    frame = WAL_FRAME_HEADER_BYTES + page_size
    ends = []
    off = WAL_HEADER_BYTES
    while off + frame <= len(data):
        db_size_after_commit = struct.unpack(">I", data[off + 4 : off + 8])[0]
        if db_size_after_commit:
            ends.append(off + frame)
        off += frame
    return ends


def wal_page_size(wal: Path) -> int:
    return int(struct.unpack(">I", wal.read_bytes()[8:12])[0])


# ---- a writer in its own process -----------------------------------------------------------


@dataclass
class WriterProc:
    """tests/faults/writer_proc.py running in its own process; its stdout lines collected."""

    proc: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    _reader: threading.Thread | None = None

    @classmethod
    def start(
        cls, *args: str, user: str | None = None, env: dict[str, str] | None = None
    ) -> WriterProc:
        cmd = [sys.executable, str(WRITER_PROC), *args]
        if user is not None:
            cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
        full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
        p = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env, cwd="/"
        )
        wp = cls(p)
        wp._reader = threading.Thread(target=wp._read, daemon=True)
        wp._reader.start()
        return wp

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_line(self, prefix: str, timeout_s: float = 60.0) -> str:
        def found() -> bool:
            if self.proc.poll() is not None and self._reader is not None:
                self._reader.join(1)
            return any(x.startswith(prefix) for x in self.lines) or (
                self.proc.poll() is not None and not self._reader_alive()
            )

        wait_for(found, timeout_s, f"line {prefix!r}")
        for x in self.lines:
            if x.startswith(prefix):
                return x
        err = self.proc.stderr.read() if self.proc.stderr else ""
        raise AssertionError(f"writer exited without {prefix!r}: {err[-3000:]}")

    def _reader_alive(self) -> bool:
        return self._reader is not None and self._reader.is_alive()

    def finish(self, timeout_s: float = 30.0) -> tuple[int, str]:
        """The exit status and standard error, once every line of standard output is read
        (the lines are what the test judges the file by: none may be left in the pipe)."""
        rc = self.proc.wait(timeout_s)
        if self._reader is not None:
            self._reader.join(timeout_s)
            assert not self._reader.is_alive(), (
                "the writer's standard output was not read to its end"
            )
        err = self.proc.stderr.read() if self.proc.stderr else ""
        return rc, err

    def acks(self) -> dict[int, int]:
        """seq -> events committed up to and including that commit, as acknowledged."""
        return {int(x.split()[1]): int(x.split()[2]) for x in self.lines if x.startswith("ACK ")}

    def pres(self) -> dict[int, int]:
        """seq -> events that commit would make durable, announced before it ran."""
        return {int(x.split()[1]): int(x.split()[2]) for x in self.lines if x.startswith("PRE ")}


def copy_ledger_image(src: Path, dest_root: Path, run_id: str) -> Path:
    """Copy one ledger's db, -wal and .seq (never -shm) into ``dest_root/run_id``."""
    d = dest_root / run_id
    d.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", ".seq"):
        p = Path(f"{src}{suffix}")
        if p.exists():
            shutil.copyfile(p, d / f"{src.name}{suffix}")
    return d / src.name


def quick_check(path: Path) -> str:
    return connect.quick_check(path)
