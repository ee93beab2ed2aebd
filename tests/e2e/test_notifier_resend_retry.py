"""``vllm-ledger notifier resend ID`` is one request however often it is run: a real notifier
process, ended (``os._exit``) right after each commit on the resend's way (the copy queued,
the copy marked sending, the copy's outcome recorded: ``VLLM_LEDGER_NOTIFIER_EXIT_AT``, read
once at start), started again, and the same command run again by the operator. The retry is
answered "already queued" with the first copy, and the chat platform stand-in on 127.0.0.1
gets that one copy (none when the crash cut it before it was posted: the copy is ``unknown``,
and the answer names the command that sends it once more, which then delivers exactly one).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.e2e.notifier_fakes import (
    FakePlatform,
    NotifierProc,
    send_command,
    setup_notifier,
    wait_for,
)
from vllm_ledger.notify.service import EXIT_AT_ENV

pytestmark = pytest.mark.e2e


def _failed_help_reply(n: NotifierProc, platform: FakePlatform) -> None:
    """Delivery #1: the help reply, refused once by the platform (HTTP 500)."""
    refused = threading.Event()

    def once(_text: str) -> int | None:
        if refused.is_set():
            return None
        refused.set()
        return 500

    platform.fail_when = once
    assert send_command(n.port, "h1", "@bot help")[0] == 202
    wait_for("#1 failed", lambda: n.status()["deliveries"]["failed"] == 1)


def _resend(n: NotifierProc, delivery: int) -> tuple[int, str, str]:
    return run_cli("notifier", "resend", str(delivery), "--config", str(n.config), env=n.env)


# boundary -> the copy's state once settled, and how many copies the chat got
CASES = {None: ("sent", 1), "resend": ("sent", 1), "sending": ("unknown", 0), "settle": ("sent", 1)}


@pytest.mark.parametrize("boundary", list(CASES), ids=lambda b: b or "no-crash")
def test_a_resend_retried_after_a_crash_at_each_commit_is_queued_once(
    tmp_path: Path, platform: FakePlatform, boundary: str | None
) -> None:
    n = setup_notifier(tmp_path, platform).start()
    try:
        _failed_help_reply(n, platform)
    finally:
        n.stop()
    if boundary is not None:
        n.env[EXIT_AT_ENV] = boundary
    n.start()
    try:
        rc, out, err = _resend(n, 1)
        if boundary is not None:  # ended at the boundary, before or just after its answer
            assert n.proc is not None and n.proc.wait(20) == 70
            n.proc = None
            del n.env[EXIT_AT_ENV]
            n.start()
        if rc == 2:  # the crash came before the answer
            assert boundary is not None, err
            (line,) = err.splitlines()
            assert line.startswith(f"vllm-ledger: error: the notifier at 127.0.0.1:{n.port} did")
            assert "run the same command again" in line and "docs/notifier.md" in line
        else:
            assert (rc, out, err) == (0, "delivery #1 queued again as #2\n", "")
        assert rc == 2 or boundary in (None, "sending", "settle"), (rc, out, err)
        n.settled_status()
        state, copies = CASES[boundary]
        retry = _resend(n, 1)  # the operator runs the same command again
        settled = n.status()
    finally:
        n.stop()
    line = f"delivery #1 already queued again as #2 (now {state}): nothing more queued"
    if state == "unknown":
        line += f"; to send it once more: vllm-ledger notifier resend 2 --config {n.config}"
    assert retry == (0, line + "\n", "")
    assert platform.count("Help") == 1 + copies, platform.posts  # the refused first try + copies
    assert [r["id"] for r in settled["recent"]] == [2, 1]  # one copy in the outbox
    assert settled["recent"][0]["resend_of"] == 1


def test_a_copy_cut_while_sending_is_sent_once_more_by_the_command_its_retry_names(
    tmp_path: Path, platform: FakePlatform
) -> None:
    n = setup_notifier(tmp_path, platform).start()
    try:
        _failed_help_reply(n, platform)
    finally:
        n.stop()
    n.env[EXIT_AT_ENV] = "sending"
    n.start()
    _resend(n, 1)
    assert n.proc is not None and n.proc.wait(20) == 70
    n.proc = None
    del n.env[EXIT_AT_ENV]
    n.start()
    try:
        assert _resend(n, 1)[1].endswith(f"notifier resend 2 --config {n.config}\n")
        assert _resend(n, 2) == (0, "delivery #2 queued again as #3\n", "")
        wait_for("the copy of the copy sent", lambda: n.status()["deliveries"]["sent"] == 1)
        assert _resend(n, 2)[1].startswith("delivery #2 already queued again as #3 (now sent)")
    finally:
        n.stop()
    assert platform.count("Help") == 2, platform.posts  # the refused first try, one copy
