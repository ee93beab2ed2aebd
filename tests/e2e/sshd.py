"""A throwaway OpenSSH server on 127.0.0.1 for tests, and ledgers to serve.

``Sshd(workdir)`` writes a host key, an ``sshd_config`` that allows key logins only (root
included, as these tests run as root) with ``StrictModes no`` for temporary directories, and
an ``authorized_keys`` file the test fills with forced-command lines. The server runs as a
non-daemon child (``/usr/sbin/sshd -D -e -f CONFIG``) and is stopped by pid, together with
the per-connection processes it forked (found by walking /proc from its pid).

The client side never touches ~/.ssh: ``client_config()`` writes an ``ssh -F`` file whose
``Host`` aliases carry their own key, port and known_hosts file.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from devtools.ports import free_port
from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.write.iteration import IterationEvent
from vllm_ledger.write.recorder import Recorder

SSHD = "/usr/sbin/sshd"
PRIVSEP_DIR = Path("/run/sshd")  # Debian's sshd refuses to start without it


def keygen(path: Path, comment: str = "test") -> Path:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return path


def children_of(pid: int) -> list[int]:
    """Every descendant of ``pid`` (by /proc ppid links), deepest first."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents[int(entry)] = ppid
    out: list[int] = []
    frontier = [pid]
    while frontier:
        nxt = [c for c, p in parents.items() if p in frontier]
        out.extend(nxt)
        frontier = nxt
    return out[::-1]


def kill_pid(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@dataclass
class ClientHost:
    alias: str
    port: int
    key: Path
    known_hosts: Path


class Sshd:
    def __init__(self, workdir: Path) -> None:
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.host_key = keygen(self.dir / "host_ed25519", "host")
        self.authorized_keys = self.dir / "authorized_keys"
        self.authorized_keys.write_text("")
        self.port = free_port()
        self.config = self.dir / "sshd_config"
        self.log = self.dir / "sshd.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.config.write_text(
            f"Port {self.port}\n"
            "ListenAddress 127.0.0.1\n"
            f"HostKey {self.host_key}\n"
            f"AuthorizedKeysFile {self.authorized_keys}\n"
            "PidFile none\n"
            "StrictModes no\n"
            "PermitRootLogin prohibit-password\n"
            "PubkeyAuthentication yes\n"
            "PasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\n"
            "UsePAM no\n"
            "AllowTcpForwarding no\n"
            "X11Forwarding no\n"
            "PermitTTY no\n"
            "PrintMotd no\n"
            "LogLevel VERBOSE\n"
            "MaxStartups 50\n"
            "MaxSessions 50\n"
        )

    def host_public_line(self) -> str:
        return (self.dir / "host_ed25519.pub").read_text().strip()

    def authorize(self, lines: Sequence[str]) -> None:
        self.authorized_keys.write_text("".join(line.rstrip("\n") + "\n" for line in lines))

    def start(self, ready_within_s: float = 30.0) -> None:
        PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        subprocess.run([SSHD, "-t", "-f", str(self.config)], check=True)
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + ready_within_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {self.log.read_text()}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("sshd did not start listening")

    def stop(self) -> None:
        if self.proc is None:
            return
        for pid in children_of(self.proc.pid):
            kill_pid(pid)
        kill_pid(self.proc.pid)
        self.proc.wait()
        self.proc = None

    def client_config(self, path: Path, hosts: Sequence[ClientHost]) -> Path:
        """An ``ssh -F`` file; the default known_hosts trusts this server's host key."""
        blocks = []
        for h in hosts:
            blocks.append(
                f"Host {h.alias}\n"
                "  HostName 127.0.0.1\n"
                f"  Port {h.port}\n"
                "  User root\n"
                f"  IdentityFile {h.key}\n"
                "  IdentitiesOnly yes\n"
                f"  UserKnownHostsFile {h.known_hosts}\n"
                "  GlobalKnownHostsFile /dev/null\n"
                "  StrictHostKeyChecking yes\n"
                "  CheckHostIP no\n"
                "  LogLevel ERROR\n"
            )
        path.write_text("".join(blocks))
        return path

    def known_hosts(self, path: Path, ports: Sequence[int] = ()) -> Path:
        key = self.host_public_line().split()
        names = [f"[127.0.0.1]:{p}" for p in (ports or [self.port])]
        path.write_text(f"{','.join(names)} {key[0]} {key[1]}\n")
        return path


def write_instance_ledger(
    root: Path,
    port: int,
    events: Sequence[IterationEvent],
    run_id: str = "run-a",
    host_name: str = "testhost",
) -> None:
    """One closed writer of one run of the instance on ``port``, through the real Recorder."""
    rec = Recorder(
        root,
        WriterIdentity(
            run_id, 0, 1, pid=4242, instance=InstanceInfo(("tiny",), port, host_name, "0.32.0")
        ),
    )
    rec.start()
    for e in events:
        assert rec.submit(e)
    assert rec.close(timeout_s=30.0)
