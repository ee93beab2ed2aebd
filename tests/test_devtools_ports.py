"""Ports for test servers: below the ephemeral range, a block per worker, never twice."""

from __future__ import annotations

import socket
from pathlib import Path

from devtools.ports import (
    BLOCK_PORTS,
    DEFAULT_EPHEMERAL_LOW,
    LOWEST_PORT,
    block_start,
    candidates,
    ephemeral_low,
    free_port,
    is_free,
    worker_index,
)


def test_ephemeral_low_reads_the_kernel_range_and_falls_back(tmp_path: Path) -> None:
    f = tmp_path / "range"
    f.write_text("40000\t60999\n")
    assert ephemeral_low(f) == 40000
    f.write_text("garbage\n")
    assert ephemeral_low(f) == DEFAULT_EPHEMERAL_LOW
    f.write_text("1024 60999\n")  # no room below it: the default
    assert ephemeral_low(f) == DEFAULT_EPHEMERAL_LOW
    assert ephemeral_low(tmp_path / "missing") == DEFAULT_EPHEMERAL_LOW


def test_workers_get_blocks_of_their_own_below_the_ephemeral_range() -> None:
    assert [worker_index(w) for w in (None, "", "gw0", "gw7", "master")] == [0, 0, 0, 7, 0]
    starts = [block_start(i, 32768) for i in range(12)]
    assert starts[0] == LOWEST_PORT and starts[1] == LOWEST_PORT + BLOCK_PORTS
    assert len(set(starts)) == 12 and max(starts) + BLOCK_PORTS <= 32768
    assert block_start(12, 32768) == LOWEST_PORT  # wraps rather than reaching the range


def test_candidates_cover_the_block_once_before_repeating() -> None:
    it = candidates(20000, 998)
    first = [next(it) for _ in range(BLOCK_PORTS)]
    assert first[:3] == [20998, 20999, 20000]
    assert sorted(first) == list(range(20000, 21000))
    assert next(it) == 20998


def test_free_port_never_hands_out_the_same_port_twice_nor_a_bound_one() -> None:
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    assert all(LOWEST_PORT <= p < ephemeral_low() for p in ports)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert not is_free(s.getsockname()[1])
