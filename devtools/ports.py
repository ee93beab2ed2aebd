"""Ports on 127.0.0.1 for the servers the tests, the demo and the benchmarks start.

A port from ``bind(0)`` comes from the kernel's ephemeral range, the range every outgoing
connection also draws its local port from, and it is free again the moment the probe socket
closes. Two servers asked for ports in a row, before either listens, can be handed the same
number; so can a client connecting meanwhile, or the other pytest-xdist worker. The ports here
come from below the ephemeral range instead: a block of its own for each pytest-xdist worker,
each number handed out once per process (until the block wraps), and each one checked free by a
bind before it is handed out.
"""

from __future__ import annotations

import itertools
import os
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

LOWEST_PORT = 20_000
BLOCK_PORTS = 1_000  # per pytest-xdist worker
DEFAULT_EPHEMERAL_LOW = 32_768  # Linux's default ip_local_port_range starts here
RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_low(range_file: Path = RANGE_FILE) -> int:
    """The lowest port the kernel hands to ``bind(0)`` and to outgoing connections."""
    try:
        low = int(range_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return DEFAULT_EPHEMERAL_LOW
    return low if low > LOWEST_PORT + BLOCK_PORTS else DEFAULT_EPHEMERAL_LOW


def worker_index(worker: str | None) -> int:
    """pytest-xdist's ``gw3`` is 3; no worker (a plain run, the demo) is 0."""
    match = re.fullmatch(r"gw(\d+)", worker or "")
    return int(match.group(1)) if match else 0


def block_start(index: int, low: int) -> int:
    """The first port of a worker's block, the blocks laid end to end below ``low``."""
    blocks = max(1, (low - LOWEST_PORT) // BLOCK_PORTS)
    return LOWEST_PORT + (index % blocks) * BLOCK_PORTS


def candidates(start: int, offset: int) -> Iterator[int]:
    """Every port of the block once, from ``offset`` on, then round again."""
    for step in itertools.count():
        yield start + (offset + step) % BLOCK_PORTS


def is_free(port: int) -> bool:
    """Whether a listener could bind 127.0.0.1:port now (no SO_REUSEADDR: stricter)."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


_lock = threading.Lock()
_ports = candidates(
    block_start(worker_index(os.environ.get("PYTEST_XDIST_WORKER")), ephemeral_low()),
    os.getpid() % BLOCK_PORTS,  # two plain runs side by side start apart
)


def free_port() -> int:
    """A port nothing listens on now, not handed out before by this process."""
    with _lock:
        for _ in range(BLOCK_PORTS):
            port = next(_ports)
            if is_free(port):
                return port
    raise OSError(f"no free port in this worker's block of {BLOCK_PORTS}: stop stray servers")
