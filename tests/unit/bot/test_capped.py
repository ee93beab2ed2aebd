"""A capped child run: its output and exit status, the cap past which it is killed, and a
deadline for the whole run."""

from __future__ import annotations

import sys

from vllm_ledger.bot.capped import CappedRun, run_capped


def test_a_run_that_ends_gives_its_output_and_exit_status() -> None:
    run = run_capped([sys.executable, "-c", "print('hi'); raise SystemExit(3)"], deadline_s=30.0)
    assert run == CappedRun("exit", 3, b"hi\n")


def test_output_past_the_cap_ends_the_run_as_overflow() -> None:
    code = "import sys; sys.stdout.write('x' * 100000); sys.stdout.flush()"
    run = run_capped([sys.executable, "-c", code], deadline_s=30.0, max_bytes=1000)
    assert run.ended == "overflow" and run.exit_code is None
    assert 1000 < len(run.stdout) <= 1001


def test_a_run_past_its_deadline_is_killed_as_timeout() -> None:
    code = "import time; print('a', flush=True); time.sleep(60)"
    run = run_capped([sys.executable, "-c", code], deadline_s=2.0)
    assert run == CappedRun("timeout", None, b"a\n")
