"""The notifier: the chat bot (docs/bot-status.md) as one long-running process.

    config.py     the config's ``notifier`` object; secrets from files or the environment
    store.py      the durable state (SQLite beside the config): its one writer, each step
                  one transaction
    state_file.py the state file's place, the files refused at start, SQLite faults named
    state_schema.py  its tables and migrations
    outbox.py     the outbox's rows, bounds and shared statements; resend copies
    dedupe.py     keys handled once: alerts seen, budget and digest messages made once
    state_read.py what ``notifier status`` and the status reply read of it
    signing.py    every HMAC and secret comparison; our signature on command requests
    chat.py       commands read from a chat, and the notifier's own words
    alerts.py     Alertmanager's webhook JSON v4 -> notifications, deduplicated; the note
                  for alerts it left out past ``max_alerts`` (``truncatedAlerts``)
    watch.py      health every ~10 s per instance, flap damping
    budgets.py    a host's budgets at soft or hard -> notifications made once
    digest.py     the daily (and weekly) digest: its settings, when it is due, its step
    asks.py       the hosts (ports sharing a data dir are one), each asked once for an ask
    platforms/    the chat platforms, one module each (Feishu/Lark, DingTalk, WeCom, Slack,
                  generic JSON): body, success rule, signature, inbound requests; the
                  registry and the one ``send``
    server.py     the HTTP endpoint's routes (commands, each platform's inbound route,
                  resend, Alertmanager) on the one bounded server, ``vllm_ledger.http.server``
    routes.py     the endpoint's handlers: commands within their rate, resend, Alertmanager
    sender.py     the sender's step: each delivery posted once, settled by its outcome
    service.py    the threads put together: ``Notifier``
    resend.py     ``notifier resend ID``'s request: one request id per delivery, so a retry
                  is answered with the copy already queued
    unit.py       the systemd unit

Contract: a command is answered once, in order (the cursor); a notification is sent exactly
once or marked ``unknown`` (sent, no answer: it may have arrived); a failure is recorded with
its reason and never resent by itself; no loop ends for an error (``watch.Loop``).
"""

from __future__ import annotations

from vllm_ledger.notify.config import NotifierConfig, notifier_config
from vllm_ledger.notify.service import Notifier, load_config
from vllm_ledger.notify.signing import sign, verify
from vllm_ledger.notify.state_file import state_path
from vllm_ledger.notify.store import Store
from vllm_ledger.notify.watch import Damper

__all__ = [
    "Damper",
    "Notifier",
    "NotifierConfig",
    "Store",
    "load_config",
    "notifier_config",
    "sign",
    "state_path",
    "verify",
]
