"""The notification bot's status: validate the config, poll hosts over SSH, render the reply.

    validate.py   the ``usage`` config -> ``Target`` (or a one-line refusal)
    poll.py       each target's status fetched and classified, cache, background thread
    ssh_command.py the command run on the host and the ssh argv that runs it
    capped.py     a child run with a hard deadline and a capped output, its group killed
    transport.py  the status without SSH: run here (local) or an exporter's /status (http)
    health.py     a simple HTTP ``/health`` probe per node port
    message.py    the reply to "status" (Chinese by default, English on request)
    message_words.py  its words per language, as data
    humanize.py   numbers and labels as the replies write them (``1.2M``, ``+08:00``, ``.12``)
    host.py       what the status command adds on the host: its budgets, an ask's answer
    usage_text.py the reply to "usage" and the daily digest
    budget_text.py the message when a budget reaches its soft or hard level
    pricing.py    the digest's cost: a price file's chargeback rates

Standard library only (``host.py`` and ``pricing.py`` read through the read side and ``plan``).
"""

from __future__ import annotations

from vllm_ledger.bot.health import Health, probe, probe_all
from vllm_ledger.bot.message import InstanceView, render_message
from vllm_ledger.bot.poll import CacheEntry, Fetcher, Poller, PollResult
from vllm_ledger.bot.ssh_command import remote_command, ssh_argv
from vllm_ledger.bot.validate import Refusal, Target, load_usage, validate_usage

__all__ = [
    "CacheEntry",
    "Fetcher",
    "Health",
    "InstanceView",
    "PollResult",
    "Poller",
    "Refusal",
    "Target",
    "load_usage",
    "probe",
    "probe_all",
    "remote_command",
    "render_message",
    "ssh_argv",
    "validate_usage",
]
