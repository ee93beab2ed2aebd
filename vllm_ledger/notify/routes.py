"""The endpoint's routes: our signed commands and resend requests, each inbound platform's own
requests, and Alertmanager's webhook. Each stores what it takes (a command once, within its
route's rate; an alert once) and wakes the loop that answers or sends it; a route whose store
cannot take the request answers 503, so nothing it answered 2xx is lost."""

from __future__ import annotations

import collections
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from vllm_ledger import strictjson
from vllm_ledger.errors import ConfigError, LedgerError
from vllm_ledger.notify import alerts as alerts_mod
from vllm_ledger.notify import chat, platforms, signing
from vllm_ledger.notify.config import NotifierConfig
from vllm_ledger.notify.outbox import OutboxFull
from vllm_ledger.notify.platforms.base import Challenge, NotACommand
from vllm_ledger.notify.server import MAX_ALERT_BYTES, MAX_COMMAND_BYTES, Route
from vllm_ledger.notify.state_file import StoreUnavailable
from vllm_ledger.notify.store import Store

Answer = tuple[int, dict[str, Any]]


class _TooMany(LedgerError):
    """The route's command rate is spent (raised inside the store's transaction)."""


class RateLimit:
    """At most ``per_minute`` events in any 60 s (by the monotonic clock)."""

    def __init__(self, per_minute: float, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.limit = int(per_minute)
        self.monotonic = monotonic
        self._times: collections.deque[float] = collections.deque()
        self._lock = threading.Lock()

    def allow(self) -> bool:
        now = self.monotonic()
        with self._lock:
            while self._times and now - self._times[0] >= 60.0:
                self._times.popleft()
            if len(self._times) >= self.limit:
                return False
            self._times.append(now)
            return True


def guarded(route: Route) -> Route:
    """A route whose store cannot take the request answers 503 (with ``Retry-After``)."""

    def handle(body: bytes, headers: dict[str, str]) -> Answer:
        try:
            return route(body, headers)
        except StoreUnavailable as exc:
            return 503, {"error": f"state_{exc.reason}"}
        except OutboxFull:
            return 503, {"error": "outbox_full"}

    return handle


class Routes:
    """The handlers over one store. ``wake_worker`` is called once a command is stored,
    ``wake_sender`` once a notification is queued."""

    def __init__(
        self,
        cfg: NotifierConfig,
        store: Store,
        *,
        clock: Callable[[], float],
        monotonic: Callable[[], float],
        wake_sender: Callable[[], None],
        wake_worker: Callable[[], None],
    ) -> None:
        self.cfg = cfg
        self.store = store
        self.clock = clock
        self.monotonic = monotonic
        self.wake_sender = wake_sender
        self.wake_worker = wake_worker
        # per route, counted only for a signed command not seen before
        self.rates: dict[str, RateLimit] = {}

    def table(self) -> dict[str, tuple[int, Route]]:
        """Each path with its body bound and its guarded handler."""
        routes: dict[str, tuple[int, Route]] = {
            "/command": (MAX_COMMAND_BYTES, guarded(self.handle_command)),
            "/resend": (MAX_COMMAND_BYTES, guarded(self.handle_resend)),
            "/alertmanager": (MAX_ALERT_BYTES, guarded(self.handle_alerts)),
        }
        for p, inbound in platforms.inbound():
            handler = guarded(self.inbound_route(p.name, inbound))
            routes[inbound.route] = (MAX_COMMAND_BYTES, handler)
        return routes

    # ---- commands ---------------------------------------------------------------------

    def _signed(self, body: bytes, headers: dict[str, str]) -> signing.Verdict:
        """Our own signature (``signing``): the command and resend routes both need it."""
        return signing.verify(
            self.cfg.command_secret,
            headers.get(signing.TIMESTAMP_HEADER.lower()),
            headers.get(signing.SIGNATURE_HEADER.lower()),
            body,
            now_ts=self.clock(),
        )

    def handle_command(self, body: bytes, headers: dict[str, str]) -> Answer:
        verdict = self._signed(body, headers)
        if verdict != "ok":
            return 401, {"error": verdict}
        try:
            doc = strictjson.loads(body, max_bytes=MAX_COMMAND_BYTES, what="command")
        except (ConfigError, UnicodeDecodeError):
            return 400, {"error": "bad_command"}
        return self._accept("/command", doc, accepted=202)

    def _accept(self, route: str, doc: object, *, accepted: int) -> Answer:
        """The one command path of every route, after its signature: parse, then store once
        unless a duplicate or past the route's rate (a replay uses up none of the rate)."""
        try:
            req = chat.parse_request(doc, self.cfg.lang)
        except chat.BadRequest:
            return 400, {"error": "bad_command"}
        rate = self.rates.setdefault(route, RateLimit(self.cfg.commands_per_minute, self.monotonic))

        def admit() -> None:
            if not rate.allow():
                raise _TooMany()

        try:
            seq = self.store.accept(req.message_id, req.command, req.arg, req.lang, admit)
        except _TooMany:
            return 429, {"error": "too_many_commands"}
        if seq is None:
            return 200, {"status": "duplicate"}
        self.wake_worker()
        return accepted, {"status": "accepted", "seq": seq}

    def inbound_route(self, name: str, inbound: platforms.Inbound) -> Route:
        """The handler of platform ``name``'s own requests (Slack's Events API, DingTalk's
        outgoing robot): answered at once with 200, the reply goes through the outbox."""

        def handle(body: bytes, headers: dict[str, str]) -> Answer:
            secret = self.cfg.inbound_secrets.get(name)
            if secret is None:
                return 404, {"error": f"{name}_not_configured"}
            verdict = inbound.verify(headers, body, secret, self.clock())
            if verdict != "ok":
                return 401, {"error": verdict}
            try:
                found = inbound.parse(
                    strictjson.loads(body, max_bytes=MAX_COMMAND_BYTES, what=inbound.body_name)
                )
            except NotACommand:
                return 200, {"status": "ignored"}
            except (ConfigError, UnicodeDecodeError, ValueError):
                return 400, {"error": f"bad_{inbound.body_name}"}
            if isinstance(found, Challenge):
                return 200, {"challenge": found.value}
            return self._accept(inbound.route, found, accepted=200)

        return handle

    def handle_resend(self, body: bytes, headers: dict[str, str]) -> Answer:
        verdict = self._signed(body, headers)
        if verdict != "ok":
            return 401, {"error": verdict}
        try:
            doc = strictjson.loads(body, max_bytes=MAX_COMMAND_BYTES, what="resend")
            req = chat.parse_request(
                {"message_id": doc["request_id"], "text": f"resend {int(doc['delivery_id'])}"}
            )
        except (ConfigError, chat.BadRequest, KeyError, TypeError, ValueError):
            return 400, {"error": "bad_request"}
        if req.arg is None:
            return 400, {"error": "bad_request"}
        done = self.store.resend(req.arg, request_id=req.message_id)
        if done is None:
            return 404, {"error": "no_such_delivery"}
        if done.resend_of != req.arg:  # one request id, one delivery
            return 409, {"error": "request_id_reused", "resend_of": done.resend_of}
        answer = {"delivery_id": done.copy_id, "resend_of": done.resend_of, "state": done.state}
        if done.already:
            return 200, {"status": "already_queued", **answer}
        self.wake_sender()
        return 200, {"status": "queued", **answer}

    # ---- alerts -----------------------------------------------------------------------

    def handle_alerts(self, body: bytes, headers: dict[str, str]) -> Answer:
        token = self.cfg.alertmanager_token
        if token is not None and not signing.equal(
            token, signing.bearer_token(headers.get("authorization"))
        ):
            return 401, {"error": "bad_token"}
        try:
            doc = strictjson.loads(body, max_bytes=MAX_ALERT_BYTES, what="alerts", max_depth=8)
            many = isinstance(doc, dict) and isinstance(doc.get("alerts"), list)
            if many and len(doc["alerts"]) > alerts_mod.MAX_ALERTS:
                return 413, {"error": "too_many_alerts", "limit": alerts_mod.MAX_ALERTS}
            found = alerts_mod.parse_alerts(doc, self.cfg.lang)
            note = alerts_mod.truncation_note(doc, found, self.cfg.lang)
        except (ConfigError, alerts_mod.BadAlerts, UnicodeDecodeError):
            return 400, {"error": "bad_alerts"}
        noted = None if note is None else (note.key, note.text, note.count)
        queued = self.store.queue_alerts([(a.key, a.text) for a in found], noted)
        if queued.ids:
            self.wake_sender()
        answer: dict[str, Any] = {"queued": len(queued.ids), "alerts": len(found)}
        if note is not None:
            answer["not_shown"] = note.count
        if queued.note_id is not None and note is not None:
            print(
                f"vllm-ledger notifier: Alertmanager left {note.count} alert(s) of one group out "
                f"of its message (max_alerts): noted in the chat as #{queued.note_id}",
                file=sys.stderr,
                flush=True,
            )
        if queued.dropped:  # not recorded as seen: Alertmanager's retry or repeat brings them
            return 503, {"error": "outbox_full", "dropped": queued.dropped, **answer}
        return 200, answer


__all__ = ["RateLimit", "Routes", "guarded"]
