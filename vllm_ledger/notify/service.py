"""The running notifier: state, schedules, endpoint and outbox put together.

Threads, each with one job, none waiting on another's I/O:

- the usage ``Poller`` (every ``poll_interval_s``, ``bot.poll``) fills the figures cache; a
  host's budgets at soft or hard are queued once per budget, period and level
  (``notify/budgets.py``) as each result lands;
- the digest loop (with ``notifier.digest``) posts yesterday's usage once a day at its time
  (``notify/digest.py``);
- the ``HealthWatch`` (every ``health_interval_s`` per instance, its own deadlines) feeds the
  ``Damper``; a confirmed transition is stored and queued in one transaction (and taken as
  announced only once stored);
- the HTTP endpoint verifies and stores commands (ours, and each inbound platform's from the
  registry, one path; the reply is not built there) and queues Alertmanager's alerts
  (``notify/routes.py``);
- the command worker answers stored commands past the cursor, in order, from the caches (a
  ``usage`` command asks the hosts, bounded: ``notify/asks.py``); a resend's copy, the answer
  and the cursor are one transaction;
- the sender takes the oldest pending delivery, marks it ``sending``, posts it once, and
  records ``sent``, ``failed`` (no request reached the webhook, or it said no) or ``unknown``
  (the request was sent and no answer came: it may have arrived). Nothing is ever retried
  (``notify/sender.py``).

Each loop is a ``watch.Loop``: an error of its store, its platform or our code is counted,
logged once a minute and retried after a bounded backoff; ``healthz`` reports every loop and
answers 503 naming one that is failing, stuck or gone. A route whose store is locked,
read-only or full answers 503 with ``Retry-After``: nothing it answered 2xx is lost.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vllm_ledger.bot.health import Health
from vllm_ledger.bot.message import InstanceView, render_message
from vllm_ledger.bot.poll import Fetcher, Poller, PollResult
from vllm_ledger.bot.usage_text import usage_text
from vllm_ledger.bot.validate import Refusal, Target, read_config, validate_usage
from vllm_ledger.errors import ConfigError
from vllm_ledger.formats.status_asked import ASKS
from vllm_ledger.notify import budgets as budgets_mod
from vllm_ledger.notify import chat
from vllm_ledger.notify.asks import Asker, ask_seconds, host_of, hosts_of
from vllm_ledger.notify.config import NotifierConfig, check_exposure, notifier_config
from vllm_ledger.notify.digest import STEP_S, DigestJob
from vllm_ledger.notify.outbox import MAX_PENDING
from vllm_ledger.notify.routes import Routes
from vllm_ledger.notify.sender import Sender
from vllm_ledger.notify.server import Endpoint
from vllm_ledger.notify.state_file import StoreUnavailable, state_path
from vllm_ledger.notify.state_read import BudgetLevel
from vllm_ledger.notify.store import BOUNDARIES, Command, open_store
from vllm_ledger.notify.watch import Damper, HealthWatch, Loop, make_observer

HEALTH_PROBE_TIMEOUT_S = 3.0
# the crash tests' hook, read once at start: a store boundary after whose commit to exit
EXIT_AT_ENV = "VLLM_LEDGER_NOTIFIER_EXIT_AT"


def load_config(
    path: Path, env: Mapping[str, str] | None = None
) -> tuple[list[Target], list[Refusal], NotifierConfig]:
    """The usage targets, the refused entries and the notifier's settings of one file; a file
    that cannot be read is a ``BadArgument`` naming ``path``."""
    doc = read_config(path)
    targets, refusals = validate_usage(doc["usage"])
    return targets, refusals, notifier_config(doc, path, env)


def _settings(
    config_path: Path,
    env: Mapping[str, str] | None,
    listen: tuple[str, int] | None,
    ssh_config: Path | None,
) -> tuple[list[Target], list[Refusal], NotifierConfig]:
    """``load_config``'s answer, the command line's ``--listen`` and ``--ssh-config`` winning;
    an empty usage object is refused."""
    targets, refusals, cfg = load_config(config_path, env)
    if listen is not None:
        cfg = dataclasses.replace(cfg, listen_host=listen[0], listen_port=listen[1])
    if ssh_config is not None:
        cfg = dataclasses.replace(cfg, ssh_config=ssh_config)
    if not targets and not refusals:
        raise ConfigError(f"{config_path}: the usage object is empty", key="usage")
    return targets, refusals, cfg


def _exit_at(env: Mapping[str, str] | None) -> str | None:
    """The crash tests' store boundary (``EXIT_AT_ENV``), if set; any other value refused."""
    exit_at = (os.environ if env is None else env).get(EXIT_AT_ENV) or None
    if exit_at is not None and exit_at not in BOUNDARIES:
        raise ConfigError(f"{EXIT_AT_ENV}: give one of {', '.join(BOUNDARIES)}", key="env")
    return exit_at


def _loops(cfg: NotifierConfig, ask_s: float, monotonic: Callable[[], float]) -> dict[str, Loop]:
    """Each loop with the seconds past which it counts as stuck (a digest loop with one)."""
    loops = {
        "sender": Loop("sender", stall_s=cfg.deliver_timeout_s + 60.0, monotonic=monotonic),
        "commands": Loop(
            "commands", stall_s=cfg.startup_wait_s + ask_s + 60.0, monotonic=monotonic
        ),
        "usage": Loop(
            "usage",
            stall_s=cfg.poll_interval_s + cfg.poll_deadline_s + 60.0,
            monotonic=monotonic,
        ),
    }
    if cfg.digest is not None:
        loops["digest"] = Loop("digest", stall_s=STEP_S + ask_s + 60.0, monotonic=monotonic)
    return loops


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
        self.targets, self.refusals, self.cfg = _settings(config_path, env, listen, ssh_config)
        check_exposure(self.cfg)
        self.clock = clock
        self.monotonic = monotonic
        self.store = open_store(state_path(config_path), clock=clock, exit_at=_exit_at(env))
        cfg = self.cfg
        options = ["-F", str(cfg.ssh_config)] if cfg.ssh_config is not None else []
        poll_fetch = Fetcher(ssh_options=options, deadline_s=cfg.poll_deadline_s, ssh=ssh)
        self.poller = Poller(
            self.targets, poll_fetch, interval_s=cfg.poll_interval_s, on_result=self._on_usage
        )
        self.hosts = hosts_of(self.targets)
        self.asker = Asker(self.hosts, poll_fetch, monotonic=monotonic)
        self._budget_rows: dict[str, list[BudgetLevel]] = {}
        ask_s = ask_seconds(self.hosts, cfg.poll_deadline_s)
        self.damper = Damper(cfg.damping_s, self.store.health_states())
        health_fetch = Fetcher(ssh_options=options, deadline_s=cfg.health_deadline_s, ssh=ssh)
        self.watch = HealthWatch(
            self.targets,
            make_observer(
                health_fetch, probe_timeout_s=min(HEALTH_PROBE_TIMEOUT_S, cfg.health_deadline_s)
            ),
            self._on_health,
            interval_s=cfg.health_interval_s,
            monotonic=monotonic,
        )
        self._stop = threading.Event()
        self._wake_sender = threading.Event()
        self._wake_worker = threading.Event()
        self.http = Routes(
            cfg,
            self.store,
            clock=clock,
            monotonic=monotonic,
            wake_sender=self._wake_sender.set,
            wake_worker=self._wake_worker.set,
        )
        self.routes = self.http.table()
        self.endpoint = Endpoint(cfg.listen_host, cfg.listen_port, self.routes, health=self.healthz)
        self.sender = Sender(cfg, self.store, clock=clock, wake=self._wake_sender)
        self.loops = _loops(cfg, ask_s, monotonic)
        self.digest: DigestJob | None = None
        if cfg.digest is not None:
            self.digest = DigestJob(
                cfg.digest,
                self.store,
                lambda ask: self.asker(ask, fresh=True),
                lang=cfg.lang,
                clock=clock,
                posted=self._wake_sender.set,
            )
        self._usage_rounds = 0
        self._started_monotonic = monotonic()
        self.interrupted: list[int] = []

    # ---- life -------------------------------------------------------------------------

    def start(self) -> None:
        self.interrupted = self.store.mark_interrupted()
        self._started_monotonic = self.monotonic()
        self.loops["sender"].start(self.sender.step, self._stop)
        self.loops["commands"].start(self._command_step, self._stop)
        if self.digest is not None:
            self.loops["digest"].start(self.digest.step, self._stop)
        self.poller.start()
        self.loops["usage"].thread = self.poller._thread
        self.loops["usage"].progressed()
        self.watch.start()
        self.endpoint.start()

    def stop(self) -> None:
        self.endpoint.stop()
        self._stop.set()
        self._wake_sender.set()
        self._wake_worker.set()
        self.watch.stop(timeout_s=1.0)
        self.poller.stop(timeout_s=1.0)
        for name in ("sender", "commands", "digest"):
            t = self.loops[name].thread if name in self.loops else None
            if t is not None:
                t.join(self.cfg.deliver_timeout_s + 1.0)
        self.store.close()

    def wait(self) -> None:
        self._stop.wait()

    # ---- health of the notifier itself -------------------------------------------------

    def loop_reports(self) -> dict[str, dict[str, object]]:
        """Each running loop: its state, seconds since its last progress, its errors."""
        rounds = self.poller.rounds_total
        if rounds != self._usage_rounds:
            self._usage_rounds = rounds
            self.loops["usage"].progressed()
        loops = dict(self.loops)
        if self.watch.loop.thread is not None:
            loops["health"] = self.watch.loop
        return {name: loop.report() for name, loop in sorted(loops.items())}

    def healthz(self) -> tuple[int, dict[str, Any]]:
        """``GET /healthz``: 200 when every loop is ok, else 503 naming those that are not;
        with each loop's report and the outbox's depth and drops. Reads no SQLite."""
        loops = self.loop_reports()
        depth, dropped = self.sender.outbox
        doc: dict[str, Any] = {
            "status": "ok",
            "loops": loops,
            "outbox": {"pending": depth, "limit": MAX_PENDING, "dropped_total": dropped},
        }
        bad = [f"{name} {r['state']}" for name, r in loops.items() if r["state"] != "ok"]
        if bad:
            doc["status"] = "unavailable"
            doc["error"] = "loop " + ", ".join(bad)
            return 503, doc
        return 200, doc

    # ---- health -----------------------------------------------------------------------

    def _host(self, port: int) -> str | None:
        return next((t.host for t in self.targets if t.port == port), None)

    def _on_health(self, port: int, h: Health) -> None:
        change = self.damper.observe(port, h, self.clock(), commit=False)
        if change is None:
            return
        old, new = change
        text = (
            None if old is None else chat.health_text(port, self._host(port), old, h, self.cfg.lang)
        )
        self.store.record_health(port, new, text)  # raises: proposed again next time
        self.damper.confirm(port, new)
        self._wake_sender.set()

    # ---- budgets ----------------------------------------------------------------------

    def _on_usage(self, target: Target, result: PollResult) -> None:
        """A poll landed: queue its host's budgets at soft or hard (once each) and keep them for
        ``notifier status``. A store fault is counted; the next poll proposes them again."""
        doc = result.status
        host = host_of(self.hosts, target)
        if result.state != "ok" or doc is None or host is None:
            return
        try:
            found = budgets_mod.notices(host.id, host.where, doc, self.cfg.lang)
            if found:
                queued = self.store.queue_once("budget", found)
                if queued.ids:
                    self._wake_sender.set()
            rows = budgets_mod.levels(host.where, doc, self.cfg.lang)
            if rows != self._budget_rows.get(host.id, []):
                self.store.record_budgets(host.id, rows)
                self._budget_rows[host.id] = rows
        except Exception as exc:
            self.loops["usage"].failed(exc)

    # ---- commands ---------------------------------------------------------------------

    def reply(self, cmd: Command) -> str:
        """The reply to a help or status command (a resend's is built by ``answer``)."""
        if cmd.command == "help":
            return chat.help_text(cmd.lang)
        ask = ASKS.get(cmd.command)
        if ask is not None and not ask.digest:  # usage: the hosts asked now, bounded
            return usage_text(self.asker(ask), ask, cmd.lang)
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

    def answer(self, cmd: Command) -> bool:
        """Answer one command in one transaction (a resend's copy included); False while the
        outbox is full (the command stays past the cursor)."""
        if cmd.command == "resend" and cmd.arg is not None:
            arg, lang = cmd.arg, cmd.lang
            return self.store.answer(
                cmd, lambda new: chat.resend_text(arg, new, lang), resend=cmd.arg
            )
        try:
            text: str | None = self.reply(cmd)
        except StoreUnavailable:
            raise  # tried again, the command still past the cursor
        except Exception:  # a reply that cannot be built is skipped, not retried
            logging.getLogger("vllm_ledger.notify").exception("reply to #%d", cmd.seq)
            text = None
        return self.store.answer(cmd, text)

    def _command_step(self) -> float:
        """Answer what is past the cursor, in order; the seconds to wait before the next."""
        self._wake_worker.wait(0.5)
        self._wake_worker.clear()
        for cmd in self.store.unanswered():
            if self._stop.is_set():
                return 0.0
            if not self.answer(cmd):
                return 0.5  # the outbox is full: its sender makes room
            self._wake_sender.set()
        return 0.0


__all__ = ["Notifier", "load_config"]
