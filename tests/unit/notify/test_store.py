"""The notifier's pure parts and its state file, on a fake clock: the store's cursor, dedupe
and outbox rules, the signature, the chat words, Alertmanager's JSON
and the platform bodies (each posted once to a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.ledgers import FakeClock
from tests.rawhttp import RawServer, drip
from vllm_ledger.notify import outbox, platforms
from vllm_ledger.notify.alerts import BadAlerts, parse_alerts
from vllm_ledger.notify.chat import BadRequest, parse_request
from vllm_ledger.notify.outbox import MAX_PENDING, OutboxFull, Resent
from vllm_ledger.notify.signing import sign, verify
from vllm_ledger.notify.state_file import StateFileError, StoreUnavailable
from vllm_ledger.notify.state_read import read_summary
from vllm_ledger.notify.store import BUSY_TIMEOUT_MS, Store, open_store

STORE_START = 1_764_400_000.0  # the clock every store here starts on


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "state.sqlite", clock=FakeClock(STORE_START))
    yield s
    s.close()


def test_the_cursor_answers_each_message_once_in_order_across_reopen(tmp_path: Path) -> None:
    s = Store(tmp_path / "s.sqlite", clock=FakeClock(STORE_START))
    assert s.accept("a", "status", None, "en") == 1
    assert s.accept("b", "help", None, "en") == 2
    assert s.accept("a", "status", None, "en") is None  # replayed id
    first = s.unanswered()[0]
    s.answer(first, "reply a")
    s.close()
    s = Store(tmp_path / "s.sqlite", clock=FakeClock(STORE_START))  # a restart
    assert [c.message_id for c in s.unanswered()] == ["b"] and s.cursor() == 1
    assert s.accept("a", "status", None, "en") is None  # still known after the restart
    assert s.accept("c", "status", None, "en") == 3  # a replay used up no number
    s.close()


def test_sending_becomes_unknown_on_start_and_is_never_picked_again(store: Store) -> None:
    d1 = store.queue("health", "x")
    d2 = store.queue("health", "y")
    got = store.next_pending()
    assert got is not None and got.id == d1
    assert store.mark_interrupted() == [d1]  # the process died while it was on the wire
    nxt = store.next_pending()
    assert nxt is not None and nxt.id == d2  # the interrupted one is not picked again
    store.settle(d2, "failed", "http_status", 500)
    assert store.next_pending() is None
    assert [(f.id, f.state, f.reason) for f in store.failures()] == [
        (d2, "failed", "http_status"),
        (d1, "unknown", "interrupted"),
    ]
    done = store.resend(d2, request_id="r1")
    assert done == Resent(d2 + 1, d2, "pending", already=False)
    new = done.copy_id
    assert store.resend(d2, request_id="r1") == Resent(new, d2, "pending", already=True)  # once
    sending = store.next_pending()
    assert sending is not None and (sending.id, sending.text) == (new, "y")
    store.settle(new, "sent", None, 200)
    assert [f.id for f in store.failures()] == [d1]  # delivered by its resend
    assert store.resend(999) is None


def test_alerts_are_deduplicated_and_the_outbox_is_bounded(store: Store) -> None:
    assert store.queue_alert("alert:f|firing|t", "fire") is not None
    assert store.queue_alert("alert:f|firing|t", "fire") is None
    assert store.queue_alert("alert:f|resolved|t", "ok") is not None
    for _ in range(MAX_PENDING):
        store.queue("health", "x")
    assert store.queue("health", "dropped") is None
    with store._lock:
        summary = read_summary(store._db)
    assert summary["pending"] == MAX_PENDING and summary["dropped_total"] == 3


def test_signature_refuses_forgeries_and_old_or_future_timestamps() -> None:
    body = b'{"message_id":"1","text":"status"}'
    now = 1_764_400_000
    good = sign(b"k", str(now), body)
    assert good == "v1=" + hmac.new(b"k", b"1764400000." + body, hashlib.sha256).hexdigest()
    assert verify(b"k", str(now), good, body, now_ts=now + 300) == "ok"
    assert verify(b"k", str(now), good, body, now_ts=now + 301) == "old_timestamp"
    assert verify(b"k", str(now), good, body, now_ts=now - 301) == "old_timestamp"
    assert verify(b"k", str(now), good, body + b" ", now_ts=now) == "bad_signature"
    assert verify(b"other", str(now), good, body, now_ts=now) == "bad_signature"
    assert verify(b"k", str(now), None, body, now_ts=now) == "bad_signature"
    assert verify(b"k", "1e9", good, body, now_ts=now) == "bad_timestamp"
    assert verify(b"k", None, good, body, now_ts=now) == "bad_timestamp"


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("@小鲁班 状态", ("status", None, "zh")),
        ("@bot status", ("status", None, "en")),
        ("  status  ", ("status", None, "en")),
        ("@bot help", ("help", None, "en")),
        ("@bot 重发 #12", ("resend", 12, "zh")),
        ("@bot resend 12 now", ("help", None, "zh")),
        ("@bot rm -rf /", ("help", None, "zh")),
        ("", ("help", None, "zh")),
    ],
)
def test_commands_read_from_chat(text: str, want: tuple[str, int | None, str]) -> None:
    r = parse_request({"message_id": "m", "text": text})
    assert (r.command, r.arg, r.lang) == want


@pytest.mark.parametrize(
    "doc",
    [
        [],
        {"message_id": "", "text": "status"},
        {"message_id": "a b", "text": "status"},
        {"message_id": "x" * 129, "text": "status"},
        {"message_id": "\x1b[2J", "text": "status"},
        {"message_id": 5, "text": "status"},
        {"message_id": "m", "text": "s" * 2001},
        {"message_id": "m"},
    ],
)
def test_bad_command_bodies_are_refused(doc: Any) -> None:
    with pytest.raises(BadRequest):
        parse_request(doc)


def _am(status: str = "firing", **over: Any) -> dict[str, Any]:
    alert = {
        "status": status,
        "labels": {"alertname": "VLLMTargetDown", "instance": "gpu1:8000\x1b[2J"},
        "annotations": {"summary": "s" * 500},
        "startsAt": "2026-11-30T10:00:00.000Z",
        "fingerprint": "0123abcd",
        **over,
    }
    return {"version": "4", "status": status, "alerts": [alert]}


def test_alertmanager_json_v4() -> None:
    (a,) = parse_alerts(_am(), "en")
    assert a.key == "alert:0123abcd|firing|2026-11-30T10:00:00.000Z"
    head, labels, summary = a.text.splitlines()
    assert head == "FIRING: VLLMTargetDown" and labels == "instance=gpu1:8000 [2J"
    assert len(summary) == 120
    assert parse_alerts(_am("resolved"), "zh")[0].text.startswith("小鲁班 · 告警解除:")
    for bad in (
        {"version": "3", "alerts": []},
        _am("pending"),
        _am(fingerprint="zz"),
        _am(startsAt="yesterday"),
        _am(labels=[]),
        {"version": "4", "alerts": {}},
    ):
        with pytest.raises(BadAlerts):
            parse_alerts(bad)


class _Hook:
    def __init__(self, answer: bytes = b'{"code":0}', status: int = 200) -> None:
        self.got: list[tuple[str, dict[str, Any]]] = []
        hook = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                n = int(self.headers["Content-Length"])
                hook.got.append((self.path, json.loads(self.rfile.read(n))))
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        serve = self.server.serve_forever  # a short poll: shutdown() returns at once
        threading.Thread(target=serve, kwargs={"poll_interval": 0.02}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook?access_token=t"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_platform_bodies_and_signatures_against_a_real_server() -> None:
    now = 1_764_400_000.5
    hook = _Hook()
    try:
        assert platforms.send("feishu", hook.url, "hi", secret="sec", clock=lambda: now).ok
        assert platforms.send("dingtalk", hook.url, "hi", secret="sec", clock=lambda: now).ok
        assert platforms.send("wecom", hook.url, "hi").ok
        assert platforms.send("slack", hook.url, "hi").ok
        assert platforms.send("json", hook.url, "hi").ok  # apprise's json:// body
    finally:
        hook.close()
    feishu, ding, wecom, slack, generic = hook.got
    mac = hmac.new(b"1764400000\nsec", b"", hashlib.sha256).digest()
    assert feishu[1] == {
        "msg_type": "text",
        "content": {"text": "hi"},
        "timestamp": "1764400000",
        "sign": base64.b64encode(mac).decode(),
    }
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(ding[0]).query)
    assert q["timestamp"] == ["1764400000500"] and q["access_token"] == ["t"]
    want = hmac.new(b"sec", b"1764400000500\nsec", hashlib.sha256).digest()
    assert q["sign"] == [base64.b64encode(want).decode()]
    assert ding[1] == wecom[1] == {"msgtype": "text", "text": {"content": "hi"}}
    assert slack[1] == {"text": "hi"}
    assert generic[1]["message"] == "hi" and generic[1]["version"] == "1.0"


@pytest.mark.parametrize("platform", ["json", "slack"])
def test_a_dripping_webhook_is_cut_at_the_delivery_deadline(platform: str) -> None:
    """The webhook takes the POST and drips its answer a byte every 0.2 s (all of it: 200 s):
    the send ends failed, ``timeout``, at its ``timeout_s`` (the notifier's deliver_timeout_s)."""
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
    with RawServer(drip(head, b"x")) as hook:
        began = time.monotonic()
        out = platforms.send(platform, hook.url("/hook"), "hi", timeout_s=1.0)
        took = time.monotonic() - began
    assert out == platforms.Outcome(False, "timeout")
    assert 1.0 <= took < 1.0 + 2.0, took
    assert len(hook.requests) == 1  # one attempt


def test_a_json_scheme_is_its_http_one() -> None:
    hook = _Hook()
    try:
        url = hook.url.replace("http://", "json://")
        assert platforms.send("json", url, "hi") == platforms.Outcome(True, None, 200)
    finally:
        hook.close()
    assert hook.got == [
        (
            "/hook?access_token=t",
            {"version": "1.0", "title": "", "message": "hi", "attachments": [], "type": "info"},
        )
    ]


def test_platform_failures_are_classified_never_retried() -> None:
    refused = _Hook(b'{"code": 19021, "msg": "sign match fail"}')
    broken = _Hook(b"oops", status=500)
    try:
        assert platforms.send("feishu", refused.url, "x") == platforms.Outcome(
            False, "platform_error", 200
        )
        assert platforms.send("slack", broken.url, "x") == platforms.Outcome(
            False, "http_status", 500
        )
        assert platforms.send("json", broken.url, "x") == platforms.Outcome(
            False, "http_status", 500
        )
        assert len(refused.got) == 1 and len(broken.got) == 2  # one attempt each
    finally:
        refused.close()
        broken.close()
    assert platforms.send("wecom", None, "x") == platforms.Outcome(False, "no_webhook")
    assert platforms.send("wecom", "http://127.0.0.1:1/x", "x").reason == "connection"


def test_a_dropped_alert_stays_unseen_and_health_is_never_dropped(store: Store) -> None:
    for i in range(MAX_PENDING):
        assert store.queue("reply", f"r{i}") is not None
    assert store.queue_alerts([("alert:a|firing|t", "A")]) == ([], 1, None)
    assert store.queue_alerts([("alert:a|firing|t", "A")]) == ([], 1, None)  # still unseen
    down1 = store.record_health(19001, "down", "DOWN 1")
    up = store.record_health(19001, "up", "UP")
    down2 = store.record_health(19001, "down", "DOWN 2")  # replaces DOWN 1, last
    assert None not in (down1, up, down2)
    assert store.outbox() == (MAX_PENDING + 2, 2)
    for _ in range(3):  # three replies leave: room for the alert's repeat
        store.next_pending()
    (_alert,), dropped, _note = store.queue_alerts([("alert:a|firing|t", "A")])
    assert dropped == 0 and store.queue_alerts([("alert:a|firing|t", "A")]) == ([], 0, None)
    texts = []
    while (d := store.next_pending()) is not None:
        texts.append(d.text)
    assert texts[-3:] == ["UP", "DOWN 2", "A"] and "DOWN 1" not in texts


def test_a_store_fault_is_store_unavailable_and_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    s = Store(path, clock=FakeClock(STORE_START), busy_timeout_ms=200)  # the default: 2000
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreUnavailable) as caught:
            s.accept("m1", "help", None, "en")
        assert caught.value.reason == "locked"
        assert s.unanswered() == []  # reads go on (WAL)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert s.accept("m1", "help", None, "en") == 1
    s.close()
    s = Store(path, clock=FakeClock(STORE_START))  # what the notifier opens: 2 s
    assert s._db.execute("PRAGMA busy_timeout").fetchone() == (BUSY_TIMEOUT_MS,) == (2000,)
    s.close()


def read_only(path: Path) -> None:
    Store(path, clock=time.time).close()
    path.chmod(0o444)


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (lambda p: p.write_bytes(b"x" * 4096), "is damaged"),
        (read_only, "is read-only"),
        (lambda p: os.mkfifo(p), "is not a regular file"),
    ],
)
def test_a_state_file_it_cannot_use_is_named_with_what_to_do(
    tmp_path: Path, make: Any, what: str
) -> None:
    path = tmp_path / "private.notifier.sqlite"
    make(path)
    with pytest.raises(StateFileError) as caught:
        open_store(path, clock=FakeClock(STORE_START))
    text = str(caught.value)
    assert text.startswith(f"the notifier's state file {path} {what}")
    assert f"move it aside (mv {path} {path}.bad)" in text and "\n" not in text


# ---- resend requests and the notes of alerts left out --------------------------------------


def test_a_resend_request_committed_before_a_crash_is_answered_with_its_copy(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.sqlite"
    s = Store(path, clock=FakeClock(STORE_START))
    d = s.queue("alert", "FIRING: X")
    assert d is not None
    s.close()  # the notifier is killed right after the commit, before its answer
    s = Store(path, clock=FakeClock(STORE_START))
    first = s.resend(d, request_id="cli-resend-1")
    s.close()
    s = Store(path, clock=FakeClock(STORE_START))
    try:
        assert first == Resent(d + 1, d, "pending", already=False)
        assert s.resend(d, request_id="cli-resend-1") == Resent(d + 1, d, "pending", True)
        for _ in range(MAX_PENDING):  # a full outbox does not hide an earlier answer
            s.queue("health", "x")
        assert s.resend(d, request_id="cli-resend-1") == Resent(d + 1, d, "pending", True)
        with pytest.raises(OutboxFull):
            s.resend(d, request_id="cli-resend-2")
        with s._lock:
            copies = s._db.execute("SELECT count(*) FROM outbox WHERE resend_of = ?", (d,))
            assert copies.fetchone()[0] == 1
    finally:
        s.close()


def test_a_resend_request_is_forgotten_with_the_delivery_it_names(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outbox, "MAX_OUTBOX_ROWS", 4)
    d = store.queue("reply", "old")
    assert d is not None and store.next_pending() is not None
    store.settle(d, "failed", "http_status", 500)
    copy = store.resend(d, request_id="r-old")
    assert copy is not None and copy.copy_id == d + 1
    while store.next_pending() is not None:
        pass
    for i in range(4):  # #1 and its copy pruned as settled rows past the bound
        store.queue("reply", f"new {i}")
        while (p := store.next_pending()) is not None:
            store.settle(p.id, "sent", None, 200)
    assert store.resend(d) is None
    later = store.queue("reply", "later")
    assert later is not None
    assert store.resend(later, request_id="r-later") is not None
    with store._lock:
        kept = store._db.execute("SELECT request_id FROM resends ORDER BY 1").fetchall()
    assert kept == [("r-later",)]


def test_a_note_is_queued_once_and_counted(store: Store) -> None:
    alerts = [("alert:a|firing|t", "A"), ("alert:b|firing|t", "B")]
    note = ("not_shown:k1", "NOT SHOWN: 30", 30)
    assert store.queue_alerts(alerts, note) == ([1, 2, 3], 0, 3)
    assert store.queue_alerts(alerts, note) == ([], 0, None)  # the repeat
    assert store.queue_alerts(alerts, ("not_shown:k2", "NOT SHOWN: 31", 31)) == ([4], 0, 4)
    summary = store.summary()
    assert (summary["not_shown_notes_total"], summary["not_shown_alerts_total"]) == (2, 61)
    assert [d.text for d in iter(store.next_pending, None)] == [
        "A",
        "B",
        "NOT SHOWN: 30",
        "NOT SHOWN: 31",
    ]
