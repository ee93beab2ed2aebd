"""Progress on stderr only: ``progress.when_slow`` says a slow step (and again while it lasts),
a quick one says nothing; ``progress.quiet_stderr`` keeps what vLLM writes away from the
progress lines."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from vllm_ledger.progress import quiet_stderr, when_slow


def test_a_slow_step_says_so_on_stderr_a_quick_one_says_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with when_slow("compact", "compacting", after_s=60.0):
        pass
    assert capsys.readouterr() == ("", "")
    seen = threading.Event()
    with when_slow("compact", "compacting", after_s=0.0, every_s=0.01):
        deadline = time.monotonic() + 10
        err = ""
        while not seen.is_set() and time.monotonic() < deadline:
            err += capsys.readouterr().err
            if "(still, " in err:
                seen.set()
    out, rest = capsys.readouterr()
    assert out == "" and seen.is_set()
    assert (err + rest).splitlines()[0] == "compact: compacting"


def test_what_vllm_writes_on_stderr_is_kept_from_the_progress_lines(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with quiet_stderr("doctor") as quiet:
        os.write(2, b"Triton is not installed.\n")  # as C code writes it
        os.write(1, b"WARNING an older vLLM on stdout\n")
        # a handler bound to the process's stderr stream (pytest swapped sys.stderr itself)
        print("INFO a logger line", file=sys.__stderr__, flush=True)
        quiet.say("[1/1] interface: importing vLLM")
    out, err = capfd.readouterr()
    assert (out, err) == ("", "doctor: [1/1] interface: importing vLLM\n")
    assert quiet.count == 3
    assert quiet.lines == [
        "Triton is not installed.",
        "WARNING an older vLLM on stdout",
        "INFO a logger line",
    ]
