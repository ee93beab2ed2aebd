"""``notify/service.py``: the ``Notifier``'s routes (``notify/routes.py``) called as the
endpoint calls them (body, lower-case headers) on a fake clock: what each accepts, refuses and
answers, and what it stores or queues; the replies its command worker builds; a confirmed
health change queued; and a started notifier answering over 127.0.0.1 into a chat platform
stand-in (the project's own bounded HTTP server).

The usage target is reached over ``ssh`` only when the notifier runs: there ``/bin/false``
stands in for the client, so every observation is ``unknown`` and queues nothing.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools.ports import free_port
from tests.ledgers import FakeClock
from vllm_ledger.bot.health import Health
from vllm_ledger.bot.validate import Refusal, Target
from vllm_ledger.errors import BadArgument, ConfigError
from vllm_ledger.http import server as http
from vllm_ledger.notify import chat
from vllm_ledger.notify.alerts import parse_alerts
from vllm_ledger.notify.outbox import Delivery
from vllm_ledger.notify.platforms import slack
from vllm_ledger.notify.service import Notifier, load_config
from vllm_ledger.notify.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign

SECRET = b"unit-command-secret"
SLACK_SECRET = b"unit-slack-signing-secret"
TOKEN = "unit-alertmanager-token"
NOW = 1_764_400_000.0
PORT = 19001
TARGET = {"target": "closed", "code_dir": "/srv/c", "data_dir": "/srv/u"}


def write_config(path: Path, usage: dict[str, Any], **notifier: Any) -> Path:
    path.write_text(json.dumps({"usage": usage, "notifier": {"lang": "en", **notifier}}))
    return path


Make = Callable[..., Notifier]


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Make]:
    """``make(**notifier settings)``: a Notifier whose endpoint is never served (its handlers
    are called directly), on the clocks ``clock`` and ``mono``."""
    built: list[Notifier] = []

    def build(env: dict[str, str] | None = None, **settings: Any) -> Notifier:
        config = write_config(
            tmp_path / f"private{len(built)}.json",
            {str(PORT): TARGET},
            **{"startup_wait_s": 0, **settings},
        )
        n = Notifier(
            config,
            env={"VLLM_LEDGER_COMMAND_SECRET": SECRET.decode(), **(env or {})},
            clock=FakeClock(NOW),
            monotonic=FakeClock(1000.0),
            listen=("127.0.0.1", 0),
        )
        n.endpoint.server_close()
        built.append(n)
        return n

    yield build
    for n in built:
        n.store.close()


def signed(body: bytes, ts: float = NOW, secret: bytes = SECRET) -> dict[str, str]:
    stamp = str(int(ts))
    return {
        TIMESTAMP_HEADER.lower(): stamp,
        SIGNATURE_HEADER.lower(): sign(secret, stamp, body),
    }


def command(message_id: str, text: str = "@bot help") -> bytes:
    return json.dumps({"message_id": message_id, "text": text}).encode()


def failed_delivery(n: Notifier, kind: str = "health", text: str = "DOWN") -> int:
    d = n.store.queue(kind, text)
    assert d is not None
    got = n.store.next_pending()
    assert got is not None and got.id == d
    n.store.settle(d, "failed", "http_status", 500)
    return d


def pending(n: Notifier) -> list[tuple[int, str, str]]:
    """(id, kind, text) of every pending delivery, oldest first (each then marked sending)."""
    out = []
    while (d := n.store.next_pending()) is not None:
        out.append((d.id, d.kind, d.text))
    return out


# ---- the config ----------------------------------------------------------------------------


def test_load_config_gives_targets_refusals_and_settings(tmp_path: Path) -> None:
    path = write_config(
        tmp_path / "private.json",
        {str(PORT): TARGET, "19002": {**TARGET, "target": "-oProxyCommand=x"}},
        platform="slack",
    )
    targets, refusals, cfg = load_config(path, {"VLLM_LEDGER_COMMAND_SECRET": "c"})
    assert targets == [Target(PORT, "closed", "/srv/c", "/srv/u")]
    assert [(r.key, r.field) for r in refusals] == [("19002", "target")]
    assert all(isinstance(r, Refusal) for r in refusals)
    assert (cfg.platform, cfg.lang, cfg.command_secret) == ("slack", "en", b"c")


def test_load_config_refuses_a_missing_file_and_a_file_without_usage(tmp_path: Path) -> None:
    with pytest.raises(BadArgument, match=r"cannot read .*absent\.json: No such file") as bad:
        load_config(tmp_path / "absent.json", {})
    assert (bad.value.argument, bad.value.hint) == ("path", "")
    (tmp_path / "other.json").write_text('{"notifier": {}}')
    with pytest.raises(ConfigError, match='has no "usage" object') as info:
        load_config(tmp_path / "other.json", {})
    assert info.value.key == "usage"
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(ConfigError, match='has no "usage" object'):
        load_config(tmp_path / "list.json", {})


def test_an_empty_usage_object_is_refused(tmp_path: Path) -> None:
    path = write_config(tmp_path / "private.json", {})
    with pytest.raises(ConfigError, match="the usage object is empty"):
        Notifier(path, env={"VLLM_LEDGER_COMMAND_SECRET": "c"})


def test_listen_and_ssh_config_from_the_command_line_win(tmp_path: Path) -> None:
    path = write_config(tmp_path / "c.json", {str(PORT): TARGET}, listen="127.0.0.1:9999")
    n = Notifier(
        path,
        env={"VLLM_LEDGER_COMMAND_SECRET": "c"},
        listen=("127.0.0.1", 0),
        ssh_config=tmp_path / "ssh_config",
    )
    try:
        n.endpoint.server_close()
        assert (n.cfg.listen_host, n.cfg.listen_port) == ("127.0.0.1", 0)
        assert n.cfg.ssh_config == tmp_path / "ssh_config"
        assert n.endpoint.port != 9999
    finally:
        n.store.close()


def test_the_routes_are_the_commands_resend_alerts_and_each_inbound_platform(
    make: Make,
) -> None:
    n = make()
    assert {path: bound for path, (bound, _h) in n.routes.items()} == {
        "/command": 64 * 1024,
        "/resend": 64 * 1024,
        "/alertmanager": 1024 * 1024,
        "/dingtalk/command": 64 * 1024,
        "/slack/events": 64 * 1024,
    }
    assert ("GET", "/healthz") in n.endpoint.routes


# ---- commands -----------------------------------------------------------------------------


def test_a_signed_command_is_stored_once_and_answered_202(make: Make) -> None:
    n = make()
    body = command("m1", "@bot resend #4")
    assert n.http.handle_command(body, signed(body)) == (202, {"status": "accepted", "seq": 1})
    assert n.http.handle_command(body, signed(body)) == (200, {"status": "duplicate"})
    other = command("m2", "状态")
    assert n.http.handle_command(other, signed(other)) == (202, {"status": "accepted", "seq": 2})
    stored = [(c.seq, c.message_id, c.command, c.arg, c.lang) for c in n.store.unanswered()]
    assert stored == [(1, "m1", "resend", 4, "en"), (2, "m2", "status", None, "zh")]
    assert n.store.next_pending() is None  # nothing is sent from the route itself


def test_a_command_is_refused_before_its_body_is_read(make: Make) -> None:
    n = make()
    body = command("m1")
    assert n.http.handle_command(body, {}) == (401, {"error": "bad_timestamp"})
    assert n.http.handle_command(body, signed(body, secret=b"other")) == (
        401,
        {"error": "bad_signature"},
    )
    assert n.http.handle_command(body, signed(body, ts=NOW - 301)) == (
        401,
        {"error": "old_timestamp"},
    )
    assert n.http.handle_command(body + b" ", signed(body)) == (401, {"error": "bad_signature"})
    for bad in (b"{", b"\xff\xfe", b"[]", b'{"message_id": "a b", "text": "help"}'):
        assert n.http.handle_command(bad, signed(bad)) == (400, {"error": "bad_command"})
    assert n.store.unanswered() == []


def test_commands_past_the_rate_are_refused_429_until_a_minute_passes(make: Make) -> None:
    n = make(commands_per_minute=2)
    answers = []
    for i in range(3):
        body = command(f"m{i}")
        answers.append(n.http.handle_command(body, signed(body)))
    assert answers == [
        (202, {"status": "accepted", "seq": 1}),
        (202, {"status": "accepted", "seq": 2}),
        (429, {"error": "too_many_commands"}),
    ]
    assert isinstance(n.monotonic, FakeClock)
    n.monotonic.t += 60.0
    body = command("m2")  # the refused one, sent again, is taken
    assert n.http.handle_command(body, signed(body)) == (202, {"status": "accepted", "seq": 3})


# ---- resend -------------------------------------------------------------------------------


def resend_body(request_id: str, delivery_id: object) -> bytes:
    return json.dumps({"request_id": request_id, "delivery_id": delivery_id}).encode()


def test_a_signed_resend_queues_one_copy_per_request_and_answers_a_retry_with_it(
    make: Make,
) -> None:
    n = make()
    d = failed_delivery(n, text="DOWN: vLLM :19001 is not responding\n")
    body = resend_body("r1", d)
    copy = {"delivery_id": d + 1, "resend_of": d}
    assert n.http.handle_resend(body, signed(body)) == (
        200,
        {"status": "queued", **copy, "state": "pending"},
    )
    assert n.http.handle_resend(body, signed(body, NOW + 1)) == (  # a retry: the same copy
        200,
        {"status": "already_queued", **copy, "state": "pending"},
    )
    text = "DOWN: vLLM :19001 is not responding\n"
    assert pending(n) == [(d + 1, "health", text)]  # one copy, now marked sending
    n.store.settle(d + 1, "sent", None, 200)
    assert n.http.handle_resend(body, signed(body)) == (
        200,
        {"status": "already_queued", **copy, "state": "sent"},
    )
    other = resend_body("r1", d + 1)  # the same request id for another delivery
    assert n.http.handle_resend(other, signed(other)) == (
        409,
        {"error": "request_id_reused", "resend_of": d},
    )
    again = resend_body("r2", str(d))  # a number as text is read as the number
    assert n.http.handle_resend(again, signed(again)) == (
        200,
        {"status": "queued", "delivery_id": d + 2, "resend_of": d, "state": "pending"},
    )
    assert pending(n) == [(d + 2, "health", text)]


def test_a_bad_or_unknown_resend_is_refused(make: Make) -> None:
    n = make()
    body = resend_body("r1", 1)
    assert n.http.handle_resend(body, {}) == (401, {"error": "bad_timestamp"})
    assert n.http.handle_resend(body, signed(body)) == (404, {"error": "no_such_delivery"})
    for bad in (
        b"{",
        b'{"delivery_id": 1}',
        resend_body("r 2", 1),
        resend_body("r3", "one"),
        resend_body("r4", None),
        resend_body("r5", -1),
        b"[1]",
    ):
        assert n.http.handle_resend(bad, signed(bad)) == (400, {"error": "bad_request"}), bad
    assert pending(n) == []


# ---- alerts -------------------------------------------------------------------------------


def alert_doc(status: str = "firing", fingerprint: str = "0123abcd") -> dict[str, Any]:
    return {
        "version": "4",
        "status": status,
        "alerts": [
            {
                "status": status,
                "labels": {"alertname": "VLLMTargetDown", "instance": "gpu1:8000"},
                "annotations": {"summary": "target down"},
                "startsAt": "2026-11-30T10:00:00.000Z",
                "fingerprint": fingerprint,
            }
        ],
    }


def test_alerts_need_the_token_and_are_queued_once(make: Make) -> None:
    n = make(env={"VLLM_LEDGER_ALERTMANAGER_TOKEN": TOKEN})
    body = json.dumps(alert_doc()).encode()
    assert n.http.handle_alerts(body, {}) == (401, {"error": "bad_token"})
    assert n.http.handle_alerts(body, {"authorization": "Bearer wrong"}) == (
        401,
        {"error": "bad_token"},
    )
    assert n.http.handle_alerts(body, {"authorization": TOKEN}) == (401, {"error": "bad_token"})
    auth = {"authorization": f"Bearer {TOKEN}"}
    assert n.http.handle_alerts(body, auth) == (200, {"queued": 1, "alerts": 1})
    assert n.http.handle_alerts(body, auth) == (200, {"queued": 0, "alerts": 1})
    resolved = json.dumps(alert_doc("resolved")).encode()
    assert n.http.handle_alerts(resolved, auth) == (200, {"queued": 1, "alerts": 1})
    (firing,) = parse_alerts(alert_doc(), "en")
    assert firing.text.startswith("FIRING: VLLMTargetDown\n")
    assert pending(n) == [
        (1, "alert", firing.text),
        (2, "alert", parse_alerts(alert_doc("resolved"), "en")[0].text),
    ]


def test_the_bearer_scheme_is_read_in_any_case_and_a_wrong_token_still_refused(
    make: Make,
) -> None:
    n = make(env={"VLLM_LEDGER_ALERTMANAGER_TOKEN": TOKEN})
    for i, value in enumerate(
        (f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER {TOKEN}", f"  bEaReR   {TOKEN}  ")
    ):
        body = json.dumps(alert_doc(fingerprint=f"{i:x}")).encode()
        assert n.http.handle_alerts(body, {"authorization": value}) == (
            200,
            {"queued": 1, "alerts": 1},
        ), value
    body = json.dumps(alert_doc(fingerprint="ff")).encode()
    for value in (
        "bearer wrong",
        "BEARER wrong",
        f"bearer {TOKEN}x",
        f"bearer {TOKEN[:-1]}",
        f"Basic {TOKEN}",
        f"bearer{TOKEN}",
        f"Bearer {TOKEN}, Bearer {TOKEN}",  # two Authorization lines, joined
        "bearer",
        "",
    ):
        assert n.http.handle_alerts(body, {"authorization": value}) == (
            401,
            {"error": "bad_token"},
        ), value
    assert len(pending(n)) == 4


def many_alerts(first: int, n: int, *, not_shown: int, **extra: Any) -> dict[str, Any]:
    """A group notification as Alertmanager posts it past ``max_alerts``."""
    one = alert_doc()["alerts"][0]
    return {
        "version": "4",
        "groupKey": '{}:{alertname="VLLMTargetDown", instance="gpu1:8000"}',
        "status": "firing",
        "groupLabels": {"alertname": "VLLMTargetDown", "instance": "gpu1:8000"},
        "externalURL": "http://am.example:9093",
        "truncatedAlerts": not_shown,
        "alerts": [{**one, "fingerprint": f"{i:x}"} for i in range(first, first + n)],
        **extra,
    }


NOTE_EN = (
    "NOT SHOWN: 30 alerts of this group (Alertmanager sent 100 of 130: its max_alerts)\n"
    "group: alertname=VLLMTargetDown instance=gpu1:8000\n"
    "all of them: http://am.example:9093/#/alerts?filter="
    "%7Balertname%3D%22VLLMTargetDown%22%2Cinstance%3D%22gpu1%3A8000%22%7D\n"
    "or: amtool --alertmanager.url=http://am.example:9093 alert query "
    "'alertname=\"VLLMTargetDown\"' 'instance=\"gpu1:8000\"'\n"
)


def test_alerts_left_out_by_alertmanager_are_one_note_per_group_notification(
    make: Make,
) -> None:
    n = make()
    body = json.dumps(many_alerts(0, 100, not_shown=30)).encode()
    assert n.http.handle_alerts(body, {}) == (200, {"queued": 101, "alerts": 100, "not_shown": 30})
    sent = pending(n)
    assert [kind for _id, kind, _text in sent] == ["alert"] * 101
    assert sent[-1] == (101, "alert", NOTE_EN)  # after the alerts it is about
    # Alertmanager's repeat of the same notification: nothing, as for its alerts
    assert n.http.handle_alerts(body, {}) == (200, {"queued": 0, "alerts": 100, "not_shown": 30})
    # the group grew past the cut: a new notification, a new count, a new note
    grown = json.dumps(many_alerts(0, 100, not_shown=45)).encode()
    assert n.http.handle_alerts(grown, {}) == (200, {"queued": 1, "alerts": 100, "not_shown": 45})
    assert pending(n)[0][2].startswith("NOT SHOWN: 45 alerts of this group (")
    assert n.store.summary()["not_shown_notes_total"] == 2
    assert n.store.summary()["not_shown_alerts_total"] == 75
    # none left out: no note
    whole = json.dumps(many_alerts(200, 3, not_shown=0)).encode()
    assert n.http.handle_alerts(whole, {}) == (200, {"queued": 3, "alerts": 3})
    assert n.store.summary()["not_shown_notes_total"] == 2


def test_a_note_dropped_for_a_full_outbox_is_taken_on_alertmanagers_retry(make: Make) -> None:
    n = make()
    for i in range(999):
        assert n.store.queue("reply", f"r{i}") is not None
    body = json.dumps(many_alerts(0, 1, not_shown=7)).encode()
    assert n.http.handle_alerts(body, {}) == (
        503,
        {"error": "outbox_full", "dropped": 1, "queued": 1, "alerts": 1, "not_shown": 7},
    )
    assert n.store.summary()["not_shown_notes_total"] == 0  # not counted: not queued
    n.store.next_pending()  # one reply leaves
    assert n.http.handle_alerts(body, {}) == (200, {"queued": 1, "alerts": 1, "not_shown": 7})
    summary = n.store.summary()
    assert (summary["not_shown_notes_total"], summary["not_shown_alerts_total"]) == (1, 7)


def test_a_bad_truncated_count_is_refused_whole(make: Make) -> None:
    n = make()
    for value in ("30", -1, True, 1.5, None, 10**10):
        body = json.dumps(many_alerts(0, 1, not_shown=0, truncatedAlerts=value)).encode()
        assert n.http.handle_alerts(body, {}) == (400, {"error": "bad_alerts"}), value
    body = json.dumps(many_alerts(0, 1, not_shown=3, groupLabels=[1])).encode()
    assert n.http.handle_alerts(body, {}) == (400, {"error": "bad_alerts"})
    assert pending(n) == []


def test_without_a_token_any_caller_may_post_alerts_but_not_bad_ones(make: Make) -> None:
    n = make()
    body = json.dumps(alert_doc()).encode()
    assert n.http.handle_alerts(body, {}) == (200, {"queued": 1, "alerts": 1})
    for bad in (
        b"{",
        b"\xff",
        json.dumps({**alert_doc(), "version": "3"}).encode(),
        json.dumps(alert_doc(fingerprint="not hex")).encode(),
        json.dumps({"version": "4", "alerts": [[[[[[[[[[]]]]]]]]]]}).encode(),  # too deep
    ):
        assert n.http.handle_alerts(bad, {}) == (400, {"error": "bad_alerts"}), bad
    assert [kind for _id, kind, _text in pending(n)] == ["alert"]


# ---- a platform's own requests ------------------------------------------------------------


def slack_signed(body: bytes, ts: float = NOW) -> dict[str, str]:
    stamp = str(int(ts))
    return {
        slack.TIMESTAMP_HEADER.lower(): stamp,
        slack.SIGNATURE_HEADER.lower(): slack.signature(SLACK_SECRET, stamp, body),
    }


def slack_event(event_id: str, event: dict[str, Any]) -> bytes:
    doc = {"type": "event_callback", "event_id": event_id, "event": event}
    return json.dumps(doc).encode()


def test_slack_requests_are_verified_then_answered_or_stored_as_commands(make: Make) -> None:
    n = make(env={"VLLM_LEDGER_SLACK_SIGNING_SECRET": SLACK_SECRET.decode()})
    _bound, handle = n.routes["/slack/events"]
    challenge = b'{"type": "url_verification", "challenge": "3eZbrw1aBm"}'
    assert handle(challenge, slack_signed(challenge)) == (200, {"challenge": "3eZbrw1aBm"})
    mention = slack_event("Ev1", {"type": "app_mention", "text": "<@U1> status"})
    assert handle(mention, slack_signed(mention)) == (200, {"status": "accepted", "seq": 1})
    assert handle(mention, slack_signed(mention)) == (200, {"status": "duplicate"})
    reaction = slack_event("Ev2", {"type": "reaction_added"})
    assert handle(reaction, slack_signed(reaction)) == (200, {"status": "ignored"})
    assert handle(mention, {}) == (401, {"error": "bad_timestamp"})
    assert handle(mention, slack_signed(mention, ts=NOW - 301)) == (401, {"error": "old_timestamp"})
    for bad in (b"{", b"[]", slack_event("Ev3", {"type": "app_mention", "text": 5})):
        assert handle(bad, slack_signed(bad)) == (400, {"error": "bad_event"}), bad
    stored = [(c.seq, c.message_id, c.command, c.lang) for c in n.store.unanswered()]
    assert stored == [(1, "slack:Ev1", "status", "en")]


def test_the_rate_is_per_route_and_counts_only_new_commands(make: Make) -> None:
    n = make(env={"VLLM_LEDGER_SLACK_SIGNING_SECRET": SLACK_SECRET.decode()}, commands_per_minute=1)
    _bound, handle = n.routes["/slack/events"]
    body = command("m1")
    assert n.http.handle_command(body, signed(body)) == (202, {"status": "accepted", "seq": 1})
    for _ in range(3):  # replays use up none of it
        assert n.http.handle_command(body, signed(body)) == (200, {"status": "duplicate"})
    mention = slack_event("Ev1", {"type": "app_mention", "text": "status"})
    assert handle(mention, slack_signed(mention)) == (200, {"status": "accepted", "seq": 2})
    other = command("m2")
    assert n.http.handle_command(other, signed(other)) == (429, {"error": "too_many_commands"})


# ---- replies and health -------------------------------------------------------------------


def test_replies_to_help_resend_and_status(make: Make) -> None:
    n = make()
    d = failed_delivery(n)
    for mid, text in (("h", "@bot help"), ("r", f"@bot resend {d}"), ("x", "resend 99")):
        body = command(mid, text)
        n.http.handle_command(body, signed(body))
    body = command("s", "@bot status")
    n.http.handle_command(body, signed(body))
    help_cmd, resend_cmd, unknown_cmd, status_cmd = n.store.unanswered()
    assert n.reply(help_cmd) == chat.help_text("en")
    assert n.reply(help_cmd).startswith("Help\n@bot status: ")
    assert n.answer(help_cmd) and n.answer(resend_cmd) and n.answer(unknown_cmd)
    assert pending(n) == [
        (d + 1, "reply", chat.help_text("en")),
        (d + 2, "health", "DOWN"),  # the copy, queued with the answer that names it
        (d + 3, "reply", f"notification #{d} queued again as #{d + 2}\n"),
        (d + 4, "reply", "no notification #99 to resend\n"),
    ]
    assert n.store.cursor() == 3
    lines = n.reply(status_cmd).splitlines()
    assert lines[:3] == ["Status", "deployments 1: unchecked 1", "── :19001 ──"]
    # a delivery that failed and was queued again is still named until its copy is sent
    assert lines[-2] == (
        "failed deliveries (never resent by themselves; @bot resend ID or "
        "vllm-ledger notifier resend ID):"
    )
    assert lines[-1].startswith(f"#{d} health ") and lines[-1].endswith(" failed: HTTP 500")


def test_a_confirmed_health_change_is_stored_and_queued_once(make: Make) -> None:
    n = make(damping_s=30)
    clock = n.clock
    assert isinstance(clock, FakeClock)
    n.watch.on_health(PORT, Health(PORT, "healthy", 200))  # the baseline: stored, not sent
    assert n.store.health_states() == {PORT: "up"}
    assert pending(n) == []
    clock.t = NOW + 10
    n.watch.on_health(PORT, Health(PORT, "down"))
    clock.t = NOW + 30
    n.watch.on_health(PORT, Health(PORT, "unknown"))  # neither way
    assert n.store.health_states() == {PORT: "up"} and pending(n) == []
    clock.t = NOW + 40
    n.watch.on_health(PORT, Health(PORT, "down"))
    clock.t = NOW + 50
    n.watch.on_health(PORT, Health(PORT, "down"))
    assert n.store.health_states() == {PORT: "down"}
    assert pending(n) == [(1, "health", "DOWN: vLLM :19001 is not responding\n")]


# ---- running ------------------------------------------------------------------------------


class ChatPlatform:
    """A chat platform's incoming webhook on 127.0.0.1: records each message posted to
    ``/hook`` and answers ``status`` (200, or what ``fail_with`` says for a text)."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.fail_with: dict[str, int] = {}
        self.arrived = threading.Condition()

        def hook(request: http.Request) -> http.Response:
            text = str(json.loads(request.body)["message"])  # the generic JSON body
            with self.arrived:
                self.messages.append(text)
                self.arrived.notify_all()
            return http.json_response(self.fail_with.get(text, 200), {"ok": True})

        self.server = http.Server({("POST", "/hook"): http.Route(hook, 1 << 20)}, "127.0.0.1", 0)
        self.server.start()
        self.url = f"http://127.0.0.1:{self.server.port}/hook"

    def wait_for(self, count: int, timeout_s: float = 10.0) -> list[str]:
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.messages) >= count, timeout_s)
            return list(self.messages)


def post(port: int, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def wait_until(done: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_running_notifier_answers_sends_and_records_each_delivery(tmp_path: Path) -> None:
    platform = ChatPlatform()
    config = write_config(
        tmp_path / "private.json",
        {str(PORT): TARGET},
        listen=f"127.0.0.1:{free_port()}",
        startup_wait_s=0,
        poll_interval_s=3600,
        health_interval_s=3600,
    )
    env = {
        "VLLM_LEDGER_COMMAND_SECRET": SECRET.decode(),
        "VLLM_LEDGER_WEBHOOK_URL": platform.url,
    }
    before = Notifier(config, env=env, ssh="/bin/false")  # a delivery left on the wire
    before.endpoint.server_close()
    left = before.store.queue("health", "left sending")
    assert before.store.next_pending() is not None
    before.store.close()
    (firing,) = parse_alerts(alert_doc(), "en")
    platform.fail_with[firing.text] = 500
    n = Notifier(config, env=env, ssh="/bin/false")
    n.start()
    try:
        assert n.interrupted == [left]
        body = command("m1", "@bot help")
        ts = time.time()
        headers = {
            TIMESTAMP_HEADER: str(int(ts)),
            SIGNATURE_HEADER: sign(SECRET, str(int(ts)), body),
        }
        assert post(n.endpoint.port, "/command", body, headers) == (
            202,
            {"status": "accepted", "seq": 1},
        )
        assert platform.wait_for(1) == [chat.help_text("en")]
        alert = json.dumps(alert_doc()).encode()
        assert post(n.endpoint.port, "/alertmanager", alert, {}) == (
            200,
            {"queued": 1, "alerts": 1},
        )
        assert platform.wait_for(2)[1] == firing.text
        assert wait_until(lambda: len(n.store.failures()) == 2)
        failed: list[Delivery] = n.store.failures()
        assert [(f.kind, f.state, f.reason, f.http_status) for f in failed] == [
            ("alert", "failed", "http_status", 500),
            ("health", "unknown", "interrupted", None),
        ]
        assert n.store.unanswered() == []  # the command was answered, once
    finally:
        n.stop()
        platform.server.stop()
    assert platform.messages == [chat.help_text("en"), firing.text]


def test_listening_beyond_loopback_needs_the_alertmanager_token(tmp_path: Path) -> None:
    config = write_config(tmp_path / "private.json", {str(PORT): TARGET})
    env = {"VLLM_LEDGER_COMMAND_SECRET": SECRET.decode()}
    with pytest.raises(ConfigError) as caught:
        Notifier(config, env=env, listen=("0.0.0.0", 0))
    assert str(caught.value).startswith(
        "notifier.alertmanager_token_file: listening on 0.0.0.0 (beyond loopback) needs a "
        "bearer token for /alertmanager"
    )
    n = Notifier(
        config, env={**env, "VLLM_LEDGER_ALERTMANAGER_TOKEN": TOKEN}, listen=("0.0.0.0", 0)
    )
    n.endpoint.server_close()
    n.store.close()


def test_more_than_100_alerts_is_413_and_nothing_is_queued(make: Make) -> None:
    n = make()
    doc = alert_doc()
    doc["alerts"] = [{**doc["alerts"][0], "fingerprint": f"{i:x}"} for i in range(101)]
    assert n.http.handle_alerts(json.dumps(doc).encode(), {}) == (
        413,
        {"error": "too_many_alerts", "limit": 100},
    )
    assert pending(n) == []


def test_a_locked_state_file_is_503_and_a_failing_loop_fails_healthz(
    make: Make, tmp_path: Path
) -> None:
    n = make()
    _bound, handle = n.routes["/command"]
    other = sqlite3.connect(n.store.path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        body = command("m1")
        assert handle(body, signed(body)) == (503, {"error": "state_locked"})
        loop = n.loops["sender"]
        assert loop.failed(RuntimeError("database is locked")) == 0.1
        code, doc = n.healthz()
        assert (code, doc["error"]) == (503, "loop sender failing")
        assert doc["loops"]["sender"]["errors_total"] == 1
        assert doc["outbox"] == {"pending": 0, "limit": 1000, "dropped_total": 0}
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert handle(body, signed(body)) == (202, {"status": "accepted", "seq": 1})
    n.loops["sender"].progressed()
    assert n.healthz()[0] == 200
