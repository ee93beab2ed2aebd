"""verify waits only when the figures can still change: a run whose writers all closed is
compared once and its difference given at once; a live one is re-checked, and the command says
first, in one line, how long it waits and why. Sleeps are counted, never timed."""

from __future__ import annotations

import time
from pathlib import Path

from tests.inproc import run_cli
from tests.unit.read.test_verify import (
    AT,
    RUN_START,
    MetricsServer,
    _run,
    _with_output,
    created_at,
)
from vllm_ledger.read.verify import Difference, verify


def test_a_closed_run_differs_at_once_without_sleeping(tmp_path: Path) -> None:
    _run(tmp_path, "run-a", RUN_START, prompt=1065, gen=121, cached=576, n=12)
    slept: list[float] = []
    told: list[tuple[float, str]] = []
    with MetricsServer([_with_output(122)]) as server:
        result = verify(
            [tmp_path],
            server.url,
            wait_s=10,
            clock=lambda: AT,
            sleep=slept.append,
            on_wait=lambda s, why: told.append((s, why)),
        )
    assert result.differences == (
        Difference("output", "vllm:generation_tokens_total", ledger=121, vllm=122),
    )
    assert (slept, told, result.waited_s, server.requests) == ([], [], 0.0, 1)


def test_a_live_run_says_once_that_it_waits_then_waits(tmp_path: Path) -> None:
    _run(tmp_path, "run-a", RUN_START, prompt=1065, gen=121, cached=576, n=12, live_at=AT)
    now = [AT]
    slept: list[float] = []
    told: list[tuple[float, str]] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    with MetricsServer([_with_output(122)]) as server:
        result = verify(
            [tmp_path],
            server.url,
            wait_s=3,
            clock=lambda: now[0],
            sleep=sleep,
            on_wait=lambda s, why: told.append((s, why)),
        )
    assert not result.match and slept == [1.0, 1.0, 1.0]
    assert told == [
        (
            3.0,
            "run run-a has 1 live writer, and its ledger commits about once a second: the "
            "figures may still catch up",
        )
    ]


def test_the_command_prints_a_closed_runs_mismatch_without_a_waiting_line(
    tmp_path: Path,
) -> None:
    now = float(int(time.time()))
    _run(tmp_path, "run-a", now - 7200, prompt=1065, gen=121, cached=576, n=12)
    with MetricsServer([created_at(_with_output(122), now - 7200)]) as server:
        code, out, err = run_cli(
            "verify", "--root", str(tmp_path), "--metrics-url", server.url, "--wait", "10m"
        )
    assert (code, err, server.requests) == (1, "", 1)  # one read: nothing to wait for
    assert out == (
        "MISMATCH: run run-a\n  output: ledger 121 vs vllm:generation_tokens_total 122 (diff -1)\n"
    )


def test_the_command_says_how_long_it_waits_and_why(tmp_path: Path) -> None:
    now = float(int(time.time()))
    _run(tmp_path, "run-a", now - 600, prompt=1065, gen=121, cached=576, n=12, live_at=now)
    with MetricsServer([created_at(_with_output(122), now - 600)]) as server:
        code, out, err = run_cli(
            "verify", "--root", str(tmp_path), "--metrics-url", server.url, "--wait", "1s"
        )
    assert code == 1 and out.startswith("MISMATCH: run run-a\n")
    assert err == (
        "waiting up to 1 s for the ledger to agree: run run-a has 1 live writer, and its ledger "
        "commits about once a second: the figures may still catch up\n"
    )
