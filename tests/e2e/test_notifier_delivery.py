"""The notifier's contract with real processes on 127.0.0.1, no sshd: a fake chat platform
(a real HTTP server) sends signed commands and records what the notifier posts; the notifier
runs as its own process and is killed with SIGKILL mid-delivery; vLLM's ``/health`` is a
stand-in HTTP server that the test stops and starts (a real vLLM is not needed to show
transitions: the probe reads only the status code).

The usage target of these configs is an SSH alias whose port is closed: its figures are
"unreachable" at once, which is all a reply needs here (the sshd tests show the figures).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from devtools.ports import free_port
from tests.conftest import run_cli
from tests.e2e.notifier_fakes import (
    SECRET,
    FakePlatform,
    HealthStandIn,
    NotifierProc,
    send_command,
    wait_for,
    write_config,
)
from tests.rawhttp import RawServer, drip

pytestmark = pytest.mark.e2e


def _setup(
    tmp_path: Path, platform: FakePlatform, host_port: int | None = None, **settings: Any
) -> NotifierProc:
    closed = free_port()
    (tmp_path / "ssh_config").write_text(
        f"Host closed\n  HostName 127.0.0.1\n  Port {closed}\n  User nobody\n"
        "  StrictHostKeyChecking yes\n  UserKnownHostsFile /dev/null\n"
    )
    port = free_port()
    node = host_port or free_port()
    entry = {"target": "closed", "code_dir": "/srv/code", "data_dir": "/srv/usage"}
    if host_port is not None:
        entry["host"] = "127.0.0.1"
    (tmp_path / "webhook_url").write_text(platform.hook_url + "\n")
    config = write_config(
        tmp_path / "private.json",
        {str(node): entry},
        {
            "listen": f"127.0.0.1:{port}",
            "platform": "feishu",
            "lang": "en",
            "ssh_config": "ssh_config",
            "webhook_url_file": "webhook_url",
            "poll_interval_s": 30,
            "startup_wait_s": 5,
            "deliver_timeout_s": 10,  # a test of the deadline itself gives its own
            **settings,
        },
    )
    return NotifierProc(config, {"VLLM_LEDGER_COMMAND_SECRET": SECRET.decode()}, port)


def test_sigkill_mid_delivery_sends_nothing_twice_and_the_cursor_resumes(
    tmp_path: Path, platform: FakePlatform
) -> None:
    # The held reply stays on the wire until the kill: its timeout (60 s) outlasts every wait
    # before the kill (20 s each), however slowly the machine answers.
    n = _setup(tmp_path, platform, deliver_timeout_s=60).start()
    try:
        platform.hold_when = lambda text: "#1003" in text
        for i in (1, 2, 3, 4):
            assert send_command(n.port, f"m{i}", f"@bot resend {1000 + i}")[0] == 202
        wait_for("the reply to m3 held by the platform", platform.holding.is_set)
        wait_for("every command answered", lambda: n.status()["cursor"] == 4)
        n.kill()  # the reply to m3 is on the wire; the reply to m4 waits behind it
    finally:
        platform.release.set()
        n.kill()
    n.start()
    try:
        wait_for("the reply to m4 after the restart", lambda: platform.count("#1004"))
        assert send_command(n.port, "m2", "@bot resend 1002")[0] == 200  # a replay: nothing
        assert send_command(n.port, "m5", "@bot resend 1005")[0] == 202
        wait_for("the reply to m5", lambda: platform.count("#1005"))
        time.sleep(1.0)  # room for anything that would be sent again
        for i in (1, 2, 3, 4, 5):
            assert platform.count(f"#{1000 + i}") == 1, (i, platform.posts)
        st = n.settled_status()
        assert st["cursor"] == 5 and st["deliveries"]["unanswered"] == 0
        (interrupted,) = st["failures"]
        assert interrupted["state"] == "unknown" and interrupted["reason"] == "interrupted"
        assert interrupted["id"] == 3
        assert st["deliveries"]["sent"] == 4 and st["deliveries"]["unknown"] == 1
        assert "interrupted deliveries now unknown (not resent): #3" in n.log.read_text()
    finally:
        n.stop()


def test_a_failed_delivery_is_recorded_shown_and_sent_again_only_on_resend(
    tmp_path: Path, platform: FakePlatform
) -> None:
    n = _setup(tmp_path, platform, deliver_timeout_s=5).start()
    try:
        platform.fail_when = lambda text: 500 if "#2001" in text else None
        platform.hang_when = lambda text: "#2002" in text
        send_command(n.port, "a1", "@bot resend 2001")
        send_command(n.port, "a2", "@bot resend 2002")
        wait_for("two failures", lambda: len(n.status()["failures"]) == 2)
        failures = {f["id"]: f for f in n.status()["failures"]}
        assert failures[1]["reason"] == "http_status" and failures[1]["http_status"] == 500
        assert failures[2]["reason"] == "timeout" and failures[2]["state"] == "unknown"  # sent
        rc, out, _err = run_cli("notifier", "status", "--config", str(n.config))
        assert rc == 1
        assert "#1 reply failed http_status 500" in out and "#2 reply unknown timeout" in out
        # the next status reply shows both
        send_command(n.port, "a3", "@bot status")
        reply = wait_for("the status reply", lambda: [p for p in platform.posts if "Status" in p])
        assert "#1 reply" in reply[0] and "HTTP 500" in reply[0]
        assert "#2 reply" in reply[0] and "timeout (may have arrived" in reply[0]
        time.sleep(1.5)  # nothing is resent by itself
        assert platform.count("#2001") == 1 and platform.count("#2002") == 1
        platform.fail_when = lambda text: None
        rc, out, err = run_cli(
            "notifier", "resend", "1", "--config", str(n.config),
            env={"VLLM_LEDGER_COMMAND_SECRET": SECRET.decode()},
        )  # fmt: skip
        assert rc == 0, err
        assert out.startswith("delivery #1 queued again as #")
        wait_for("the resent one", lambda: platform.count("#2001") == 2)
        time.sleep(0.5)
        assert platform.count("#2001") == 2 and platform.count("#2002") == 1
        # #1 delivered by its resend
        assert [f["id"] for f in n.settled_status()["failures"]] == [2]
    finally:
        n.stop()


def test_a_dripping_json_webhook_is_cut_at_deliver_timeout(
    tmp_path: Path, platform: FakePlatform
) -> None:
    """The generic JSON webhook takes the POST, then drips its answer a byte every 0.2 s (the
    whole of it would take 200 s): the delivery ends at deliver_timeout_s (1 s) as unknown
    (it was sent), ``timeout``, and the sender is free for the next one."""
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
    held_s: list[float] = []

    def dripping(conn: socket.socket, request: bytes) -> None:
        began = time.monotonic()
        try:
            drip(head, b"x")(conn, request)
        finally:
            held_s.append(time.monotonic() - began)

    with RawServer(dripping) as hook:
        n = _setup(tmp_path, platform, deliver_timeout_s=1)
        config = json.loads(n.config.read_text())
        config["notifier"]["platform"] = "json"
        n.config.write_text(json.dumps(config))
        (tmp_path / "webhook_url").write_text(hook.url("/hook") + "\n")
        n.start()
        try:
            assert send_command(n.port, "d1", "@bot help")[0] == 202
            assert send_command(n.port, "d2", "@bot help")[0] == 202
            wait_for("both cut", lambda: len(held_s) == 2)
            failures = wait_for("both recorded", lambda: n.status()["failures"])
        finally:
            n.stop()
    assert [(f["state"], f["reason"]) for f in failures] == [("unknown", "timeout")] * 2
    # cut at the deadline: the hook sees the hang-up within a drip or two of it
    assert all(0.5 <= s < 1.0 + 2.0 for s in held_s), held_s
    body = json.loads(hook.requests[0].partition(b"\r\n\r\n")[2])
    assert (body["version"], body["title"], body["type"]) == ("1.0", "", "info")
    assert body["message"].startswith("Help\n")


def test_down_once_up_once_and_no_storm_while_flapping(
    tmp_path: Path, platform: FakePlatform
) -> None:
    vllm = HealthStandIn().start()
    n = _setup(
        tmp_path, platform, host_port=vllm.port, health_interval_s=0.1, damping_s=3.0
    ).start()
    try:
        wait_for("the baseline", lambda: n.status()["health"].get(str(vllm.port)))
        assert platform.posts == []  # the first state is the baseline: not announced
        vllm.stop()
        wait_for("one DOWN", lambda: platform.count("DOWN"))
        vllm.start()
        wait_for("one UP", lambda: platform.count("UP"))
        # flapping every 0.3 s, for 3 s: each down far shorter than the 3 s damping (room for
        # a health probe or two that a loaded machine delays past an up)
        for _ in range(5):
            vllm.stop()
            time.sleep(0.3)
            vllm.start()
            time.sleep(0.3)
        time.sleep(3.5)
        assert platform.posts == [
            f"DOWN: vLLM .1:{vllm.port} is not responding\n",
            f"UP: vLLM .1:{vllm.port} is healthy again\n",
        ]
    finally:
        n.stop()
        vllm.stop()


def test_a_burst_of_100_commands_is_answered_once_each_and_the_rate_is_bounded(
    tmp_path: Path, platform: FakePlatform
) -> None:
    n = _setup(tmp_path, platform, commands_per_minute=100).start()
    try:
        codes: list[int] = []
        lock = threading.Lock()

        def burst(k: int) -> None:
            for i in range(k, 100, 4):
                code, _ = send_command(n.port, f"b{i}", f"@bot resend {5000 + i}")
                with lock:
                    codes.append(code)

        threads = [threading.Thread(target=burst, args=(k,)) for k in range(4)]
        began = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # The limit is a sliding minute: the 101st, sent within it, is refused.
        assert time.monotonic() - began < 50
        assert sorted(codes) == [202] * 100
        assert send_command(n.port, "b100", "@bot help")[0] == 429  # the 101st in a minute
        wait_for("100 replies", lambda: len(platform.posts) >= 100)
        time.sleep(0.5)
        assert sorted(platform.posts) == sorted(
            f"no notification #{5000 + i} to resend\n" for i in range(100)
        )
        assert n.status()["cursor"] == 100
    finally:
        n.stop()


def test_status_json_is_read_only_and_names_no_secret(
    tmp_path: Path, platform: FakePlatform
) -> None:
    n = _setup(tmp_path, platform).start()
    try:
        send_command(n.port, "s1", "@bot help")
        wait_for("the help reply", lambda: platform.count("Help"))
    finally:
        n.stop()
    st = n.status()
    assert st["deliveries"]["sent"] == 1
    text = json.dumps(st) + n.log.read_text()
    assert SECRET.decode() not in text and platform.hook_url not in text
