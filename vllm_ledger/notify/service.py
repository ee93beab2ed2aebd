"""The running notifier: state, schedules, endpoint and outbox put together.

Threads, each with one job, none waiting on another's I/O:

- the usage ``Poller`` (every ``poll_interval_s``, ``bot.poll``) fills the figures cache;
- the ``HealthWatch`` (every ``health_interval_s`` per instance, its own deadlines) feeds the
  ``Damper``; a confirmed transition is stored and queued in one transaction;
- the HTTP endpoint verifies and stores commands (ours, and each inbound platform's from the
  registry, one path; the reply is not built there) and queues Alertmanager's alerts;
- the command worker answers stored commands past the cursor, in order, from the caches;
- the sender takes the oldest pending delivery, marks it ``sending``, posts it once, and
  records ``sent`` or ``failed`` with its reason. Nothing is ever retried by itself.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vllm_ledger import strictjson
from vllm_ledger.bot.health import Health
from vllm_ledger.bot.message import InstanceView, render_message
from vllm_ledger.bot.poll import Fetcher, Poller
from vllm_ledger.bot.validate import MAX_CONFIG_BYTES, Refusal, Target, validate_usage
from vllm_ledger.errors import BadArgument, ConfigError
from vllm_ledger.notify import alerts as alerts_mod
from vllm_ledger.notify import chat, platforms, signing
from vllm_ledger.notify.config import NotifierConfig, notifier_config
from vllm_ledger.notify.platforms.base import Challenge, NotACommand
from vllm_ledger.notify.server import MAX_ALERT_BYTES, MAX_COMMAND_BYTES, Endpoint, Route
from vllm_ledger.notify.store import Command, Store, state_path
from vllm_ledger.notify.watch import Damper, HealthWatch, make_observer

HEALTH_PROBE_TIMEOUT_S = 3.0


def load_config(
    path: Path, env: Mapping[str, str] | None = None
) -> tuple[list[Target], list[Refusal], NotifierConfig]:
    """The usage targets, the refused entries and the notifier's settings of one file; a file
    that cannot be read is a ``BadArgument`` naming ``path``."""
    try:
        doc: Any = strictjson.load_file(
            path, max_bytes=MAX_CONFIG_BYTES, hint="is it the notification config?"
        )
    except OSError as exc:
        raise BadArgument(
            f"cannot read {path}: {exc.strerror}", argument="path", value=path
        ) from exc
    if not isinstance(doc, dict) or "usage" not in doc:
        raise ConfigError(f'{path} has no "usage" object', key="usage")
    targets, refusals = validate_usage(doc["usage"])
    return targets, refusals, notifier_config(doc, path, env)


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


class Notifier:
    def __init__(
        self,
        config_path: Path,
        *,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        ssh: str | None = None,
        listen: tuple[str, int] | None = None,
        ssh_config: Path | None = None,
    ) -> None:
        self.targets, self.refusals, self.cfg = load_config(config_path, env)
        if listen is not None:  # the command line's --listen and --ssh-config win
            self.cfg = dataclasses.replace(self.cfg, listen_host=listen[0], listen_port=listen[1])
        if ssh_config is not None:
            self.cfg = dataclasses.replace(self.cfg, ssh_config=ssh_config)
        if not self.targets and not self.refusals:
            raise ConfigError(f"{config_path}: the usage object is empty", key="usage")
        self.clock = clock
        self.monotonic = monotonic
        self.store = Store(state_path(config_path), clock=clock)
        cfg = self.cfg
        options = ["-F", str(cfg.ssh_config)] if cfg.ssh_config is not None else []
        self.poller = Poller(
            self.targets,
            Fetcher(ssh_options=options, deadline_s=cfg.poll_deadline_s, ssh=ssh),
            interval_s=cfg.poll_interval_s,
        )
        self.damper = Damper(cfg.damping_s, self.store.health_states())
        health_fetch = Fetcher(ssh_options=options, deadline_s=cfg.health_deadline_s, ssh=ssh)
        self.watch = HealthWatch(
            self.targets,
            make_observer(
                health_fetch, probe_timeout_s=min(HEALTH_PROBE_TIMEOUT_S, cfg.health_deadline_s)
            ),
            self._on_health,
            interval_s=cfg.health_interval_s,
        )
        self.rate = RateLimit(cfg.commands_per_minute, monotonic)
        self.routes: dict[str, tuple[int, Route]] = {
            "/command": (MAX_COMMAND_BYTES, self.handle_command),
            "/resend": (MAX_COMMAND_BYTES, self.handle_resend),
            "/alertmanager": (MAX_ALERT_BYTES, self.handle_alerts),
        }
        for p, inbound in platforms.inbound():
            self.routes[inbound.route] = (MAX_COMMAND_BYTES, self.inbound_route(p.name, inbound))
        self.endpoint = Endpoint(cfg.listen_host, cfg.listen_port, self.routes)
        self._stop = threading.Event()
        self._wake_sender = threading.Event()
        self._wake_worker = threading.Event()
        self._threads: list[threading.Thread] = []
        self._started_monotonic = monotonic()
        self.interrupted: list[int] = []

    # ---- life -------------------------------------------------------------------------

    def start(self) -> None:
        self.interrupted = self.store.mark_interrupted()
        self._started_monotonic = self.monotonic()
        for name, loop in (("sender", self._send_loop), ("commands", self._command_loop)):
            t = threading.Thread(target=loop, name=f"vllm-ledger-{name}", daemon=True)
            t.start()
            self._threads.append(t)
        self.poller.start()
        self.watch.start()
        self.endpoint.start()

    def stop(self) -> None:
        self.endpoint.stop()
        self._stop.set()
        self._wake_sender.set()
        self._wake_worker.set()
        self.watch.stop(timeout_s=1.0)
        self.poller.stop(timeout_s=1.0)
        for t in self._threads:
            t.join(self.cfg.deliver_timeout_s + 1.0)
        self.store.close()

    def wait(self) -> None:
        self._stop.wait()

    # ---- health -----------------------------------------------------------------------

    def _host(self, port: int) -> str | None:
        return next((t.host for t in self.targets if t.port == port), None)

    def _on_health(self, port: int, h: Health) -> None:
        change = self.damper.observe(port, h, self.clock())
        if change is None:
            return
        old, new = change
        text = (
            None if old is None else chat.health_text(port, self._host(port), old, h, self.cfg.lang)
        )
        self.store.record_health(port, new, text)
        self._wake_sender.set()

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

    def handle_command(self, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        verdict = self._signed(body, headers)
        if verdict != "ok":
            return 401, {"error": verdict}
        try:
            doc = strictjson.loads(body, max_bytes=MAX_COMMAND_BYTES, what="command")
        except (ConfigError, UnicodeDecodeError):
            return 400, {"error": "bad_command"}
        return self._accept(doc, accepted=202)

    def _accept(self, doc: object, *, accepted: int) -> tuple[int, dict[str, Any]]:
        """The one command path of every route, after its signature: rate, parse, store once."""
        if not self.rate.allow():
            return 429, {"error": "too_many_commands"}
        try:
            req = chat.parse_request(doc, self.cfg.lang)
        except chat.BadRequest:
            return 400, {"error": "bad_command"}
        seq = self.store.accept(req.message_id, req.command, req.arg, req.lang)
        if seq is None:
            return 200, {"status": "duplicate"}
        self._wake_worker.set()
        return accepted, {"status": "accepted", "seq": seq}

    def inbound_route(self, name: str, inbound: platforms.Inbound) -> Route:
        """The handler of platform ``name``'s own requests (Slack's Events API, DingTalk's
        outgoing robot): answered at once with 200, the reply goes through the outbox."""

        def handle(body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
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
            return self._accept(found, accepted=200)

        return handle

    def handle_resend(self, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
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
        new = self.store.resend(req.arg, request_key=f"resend:{req.message_id}")
        if new is None:
            return 404, {"error": "no_such_delivery_or_repeated_request"}
        self._wake_sender.set()
        return 200, {"delivery_id": new, "resend_of": req.arg}

    def reply(self, cmd: Command) -> str:
        if cmd.command == "help":
            return chat.help_text(cmd.lang)
        if cmd.command == "resend" and cmd.arg is not None:
            return chat.resend_text(cmd.arg, self.store.resend(cmd.arg), cmd.lang)
        # status: right after a start, wait (bounded) for the first figures
        deadline = self._started_monotonic + self.cfg.startup_wait_s
        while (
            self.poller.rounds_total == 0
            and self.monotonic() < deadline
            and not self._stop.is_set()
        ):
            self._stop.wait(0.1)
        health = self.watch.health()
        cache = self.poller.cache()
        views = [
            InstanceView(t.port, t.host, health.get(t.port), cache.get(t.port))
            for t in self.targets
        ]
        text = render_message(
            views,
            now_monotonic=self.monotonic(),
            lang=cmd.lang,
            refused=[(r.key, r.field) for r in self.refusals],
        )
        return text + chat.failures_block(self.store.failures(), cmd.lang)

    def _command_loop(self) -> None:
        while not self._stop.is_set():
            self._wake_worker.wait(0.5)
            self._wake_worker.clear()
            for cmd in self.store.unanswered():
                if self._stop.is_set():
                    return
                try:
                    text: str | None = self.reply(cmd)
                except Exception:  # a reply that cannot be built is skipped, not retried
                    text = None
                self.store.answer(cmd, text)
                self._wake_sender.set()

    # ---- alerts -----------------------------------------------------------------------

    def handle_alerts(self, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        token = self.cfg.alertmanager_token
        if token is not None and not signing.equal(
            f"Bearer {token}", headers.get("authorization", "")
        ):
            return 401, {"error": "bad_token"}
        try:
            found = alerts_mod.parse_alerts(
                strictjson.loads(body, max_bytes=MAX_ALERT_BYTES, what="alerts", max_depth=8),
                self.cfg.lang,
            )
        except (ConfigError, alerts_mod.BadAlerts, UnicodeDecodeError):
            return 400, {"error": "bad_alerts"}
        queued = [d for a in found if (d := self.store.queue_alert(a.key, a.text)) is not None]
        if queued:
            self._wake_sender.set()
        return 200, {"queued": len(queued), "alerts": len(found)}

    # ---- outbox -----------------------------------------------------------------------

    def _send_loop(self) -> None:
        while not self._stop.is_set():
            d = self.store.next_pending()
            if d is None:
                self._wake_sender.wait(0.5)
                self._wake_sender.clear()
                continue
            try:
                out = platforms.send(
                    self.cfg.platform,
                    self.cfg.webhook_url,
                    d.text,
                    secret=self.cfg.webhook_secret,
                    timeout_s=self.cfg.deliver_timeout_s,
                    clock=self.clock,
                )
            except Exception:  # a fault of ours: recorded, not retried
                out = platforms.Outcome(False, "connection")
            with contextlib.suppress(Exception):
                self.store.settle(d.id, "sent" if out.ok else "failed", out.reason, out.http_status)


__all__ = ["Notifier", "RateLimit", "load_config"]
