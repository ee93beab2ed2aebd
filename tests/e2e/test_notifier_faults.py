"""The notifier under faults, as real processes on 127.0.0.1 (no sshd): its state file locked
by another process, an outbox overflowing into a hanging webhook, a crash right after each
commit of the command and resend paths, replays, and state files it cannot use."""

from __future__ import annotations

import collections
import json
import os
import sqlite3
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.e2e.notifier_fakes import (
    FakePlatform,
    healthz,
    post_json,
    send_command,
    setup_notifier,
    signed_headers,
    wait_for,
)
from vllm_ledger.notify.service import EXIT_AT_ENV
from vllm_ledger.notify.state_file import state_path
from vllm_ledger.notify.store import BOUNDARIES, Store

pytestmark = pytest.mark.e2e


def test_a_lock_held_15_s_loses_no_reply_and_no_loop(
    tmp_path: Path, platform: FakePlatform
) -> None:
    # The held reply's deadline (60 s) outlasts the steps between its hold and its release.
    n = setup_notifier(tmp_path, platform, deliver_timeout_s=60).start()
    try:
        platform.hold_when = lambda text: "#7000" in text
        assert send_command(n.port, "c0", "@bot resend 7000")[0] == 202
        wait_for("c0's reply on the wire", platform.holding.is_set)
        lock = sqlite3.connect(state_path(n.config), isolation_level=None)
        lock.execute("BEGIN EXCLUSIVE")
        locked_at = time.monotonic()
        platform.release.set()  # c0's reply arrives; recording it waits for the lock
        body = json.dumps({"message_id": "c1", "text": "@bot resend 7001"}).encode()
        code, doc, retry = post_json(n.port, "/command", json.loads(body), signed_headers(body))
        assert (code, doc, retry) == (503, {"error": "state_locked"}, "5")
        code, health = wait_for("healthz 503", lambda: (h := healthz(n.port))[0] == 503 and h)
        assert health["loops"]["sender"]["state"] == "failing", health
        time.sleep(max(0.0, 15.0 - (time.monotonic() - locked_at)))
        lock.execute("ROLLBACK")
        lock.close()
        assert send_command(n.port, "c1", "@bot resend 7001")[0] == 202  # the retry
        wait_for("c1's reply", lambda: platform.count("#7001"))
        wait_for("healthz 200", lambda: healthz(n.port)[0] == 200)
        assert send_command(n.port, "c2", "@bot resend 7002")[0] == 202
        wait_for("c2's reply", lambda: platform.count("#7002"))
        assert [platform.count(f"#{7000 + i}") for i in range(3)] == [1, 1, 1]
        st = n.settled_status()
        assert st["deliveries"]["sent"] == 3 and st["failures"] == []
        assert {r["state"] for r in st["loops"].values()} == {"ok"}
    finally:
        n.stop()


def _alerts(first: int) -> dict[str, Any]:
    return {
        "version": "4",
        "alerts": [
            {
                "status": "firing",
                "fingerprint": f"{i:x}",
                "startsAt": "2026-11-30T10:00:00Z",
                "labels": {"alertname": f"A{i:04d}"},
                "annotations": {},
            }
            for i in range(first, first + 100)
        ],
    }


def test_1100_alerts_into_a_hanging_webhook_each_arrive_once(
    tmp_path: Path, platform: FakePlatform
) -> None:
    n = setup_notifier(tmp_path, platform, deliver_timeout_s=30).start()
    try:
        platform.hold_when = lambda text: "A0000" in text
        bodies = [_alerts(k * 100) for k in range(11)]
        answers = [post_json(n.port, "/alertmanager", body)[:2] for body in bodies]
        assert answers[0] == (200, {"queued": 100, "alerts": 100})
        code, last = answers[-1]
        assert code == 503 and last["error"] == "outbox_full" and last["dropped"] > 0
        dropped = sum(a.get("dropped", 0) for _c, a in answers)
        assert n.status()["outbox"]["dropped_total"] == dropped
        platform.release.set()
        wait_for("the outbox sent", lambda: len(platform.posts) == 1100 - dropped, 60)
        for body in bodies:  # Alertmanager's repeat
            assert post_json(n.port, "/alertmanager", body)[0] == 200
        wait_for("every alert", lambda: len(platform.posts) == 1100, 60)
        time.sleep(0.5)
        names = collections.Counter(p.splitlines()[0] for p in platform.posts)
        assert len(names) == 1100 and set(names.values()) == {1}
    finally:
        n.stop()


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_a_crash_after_any_commit_sends_nothing_twice(
    tmp_path: Path, platform: FakePlatform, boundary: str
) -> None:
    n = setup_notifier(tmp_path, platform).start()
    try:  # delivery #1, the one resent below
        assert send_command(n.port, "h1", "@bot help")[0] == 202
        wait_for("the help reply", lambda: n.status()["deliveries"]["sent"] == 1)
    finally:
        n.stop()
    n.env[EXIT_AT_ENV] = boundary
    n.start()
    body = json.dumps({"request_id": "r1", "delivery_id": 1}).encode()
    with pytest.raises(OSError):  # the process ends before it answers, or right after
        if boundary == "resend":
            post_json(n.port, "/resend", json.loads(body), signed_headers(body))
        else:
            send_command(n.port, "m2", "@bot resend 1")
        assert n.proc is not None
        n.proc.wait(20)
        raise OSError("ended")
    assert n.proc is not None and n.proc.wait(20) == 70
    n.proc = None
    del n.env[EXIT_AT_ENV]
    n.start()
    try:  # the chat platform, or the resend command, asks again
        if boundary == "resend":
            code, doc, _retry = post_json(n.port, "/resend", json.loads(body), signed_headers(body))
            # The same request, handled once: answered with the copy it queued.
            assert (code, doc["status"], doc["delivery_id"]) == (200, "already_queued", 2)
        else:
            assert send_command(n.port, "m2", "@bot resend 1")[0] in (200, 202)
            wait_for("the resend's reply", lambda: platform.count("queued again"))
        n.settled_status()
        time.sleep(1.0)  # room for anything that would be sent twice
        copies = 1 if boundary == "sending" else 2  # a copy cut while sending stays unknown
        assert platform.count("Help") == copies, platform.posts
        assert platform.count("queued again") == (0 if boundary == "resend" else 1)
    finally:
        n.stop()


def read_only(path: Path) -> None:
    Store(path, clock=time.time).close()
    path.chmod(0o444)


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (lambda p: p.write_bytes(b"not a database " * 300), "is damaged"),
        (read_only, "is read-only"),
        (lambda p: os.mkfifo(p), "is not a regular file"),
    ],
)
def test_a_state_file_it_cannot_use_is_one_line_and_exit_2(
    tmp_path: Path, platform: FakePlatform, make: Any, what: str
) -> None:
    n = setup_notifier(tmp_path, platform)
    path = state_path(n.config)
    make(path)
    rc, out, err = run_cli("notifier", "--config", str(n.config), env=n.env)
    assert rc == 2 and out == ""
    (line,) = err.splitlines()
    assert line.startswith(f"vllm-ledger: error: the notifier's state file {path} {what}"), line
    assert f"move it aside (mv {path} {path}.bad)" in line and "docs/notifier.md" in line
    with pytest.raises(OSError):  # nothing was left listening
        urllib.request.urlopen(f"http://127.0.0.1:{n.port}/healthz", timeout=2)


def test_replays_and_a_busy_thread_leave_the_rate_to_real_commands(
    tmp_path: Path, platform: FakePlatform
) -> None:
    n = setup_notifier(tmp_path, platform).start()
    try:
        answers: list[int] = []
        body = {"message_id": "once", "text": "@bot help"}
        raw = json.dumps(body).encode()

        def replay() -> None:
            for _ in range(26):
                answers.append(post_json(n.port, "/command", body, signed_headers(raw))[0])

        threads = [threading.Thread(target=replay) for _ in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(answers) == [200] * 129 + [202]
        assert send_command(n.port, "fresh", "@bot help")[0] == 202
    finally:
        n.stop()
