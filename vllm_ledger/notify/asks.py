"""Asking the hosts: each deployment host once, whatever the number of its node ports.

Targets that reach the same data dir through the same SSH target are one host (``Host``):
one document answers for all its ports, so it is asked once and named by its ports
(``.12:19001, .12:19002``). ``Asker`` asks every host for one word of
``formats.status_asked.ASKS`` over the same fixed status command (the word is the command's
last two words, ``--ask WORD``: ``bot/poll.py``), at most ``MAX_PARALLEL_SSH`` at once, each
within its deadline, so an answer takes at most ``ceil(hosts / 8)`` deadlines. An answer for
``usage`` is kept ``cache_s`` (30 s): a burst of the same question asks the hosts once.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from vllm_ledger.bot.humanize import ip_last_part
from vllm_ledger.bot.poll import MAX_PARALLEL_SSH, Fetcher, PollResult
from vllm_ledger.bot.usage_text import HostAnswer
from vllm_ledger.bot.validate import Target
from vllm_ledger.formats.status_asked import Ask

CACHE_S = 30.0


def port_label(t: Target) -> str:
    """``.12:19001`` (an IP's last part and the port), or ``:19001``."""
    last = ip_last_part(t.host)
    return f"{last}:{t.port}" if last else f":{t.port}"


@dataclass(frozen=True)
class Host:
    """One deployment host's data dir: the id its notifications are kept under (never shown),
    our label of it, and the target it is asked through (its lowest port's)."""

    id: str
    where: str
    target: Target


def hosts_of(targets: Sequence[Target]) -> list[Host]:
    """The targets grouped by (SSH target, data dir), in port order."""
    groups: dict[tuple[str, str], list[Target]] = {}
    for t in sorted(targets, key=lambda t: t.port):
        groups.setdefault((t.target, t.data_dir), []).append(t)
    return [
        Host(f"{target}:{data_dir}", ", ".join(port_label(t) for t in ts), ts[0])
        for (target, data_dir), ts in groups.items()
    ]


def host_of(hosts: Sequence[Host], t: Target) -> Host | None:
    """The host ``t`` reaches."""
    for h in hosts:
        if (h.target.target, h.target.data_dir) == (t.target, t.data_dir):
            return h
    return None


def ask_seconds(hosts: Sequence[Host], deadline_s: float) -> float:
    """The longest an ask of every host takes: ``ceil(hosts / 8)`` deadlines."""
    return -(-len(hosts) // MAX_PARALLEL_SSH) * deadline_s


class Asker:
    """Ask every host one word, in parallel; answers for ``usage`` cached ``cache_s``."""

    def __init__(
        self,
        hosts: Sequence[Host],
        fetcher: Fetcher,
        *,
        cache_s: float = CACHE_S,
        monotonic: Callable[[], float] = time.monotonic,
        max_parallel: int = MAX_PARALLEL_SSH,
    ) -> None:
        self.hosts = list(hosts)
        self.fetcher = fetcher
        self.cache_s = cache_s
        self.monotonic = monotonic
        self.max_parallel = max_parallel
        self._cache: dict[str, tuple[float, list[HostAnswer]]] = {}
        self._lock = threading.Lock()  # one ask at a time: the hosts are asked once

    def _one(self, fetch: Callable[[Target], PollResult], host: Host) -> HostAnswer:
        try:
            got = fetch(host.target)
        except Exception:  # no ssh client, a fault of ours: no figures, said so
            return HostAnswer(host.where, "remote_failed", None)
        return HostAnswer(host.where, got.state, got.status)

    def __call__(self, ask: Ask, *, fresh: bool = False) -> list[HostAnswer]:
        """Every host's answer to ``ask``, in host order; ``fresh``: never from the cache."""
        with self._lock:
            now = self.monotonic()
            kept = self._cache.get(ask.word)
            if not fresh and kept is not None and now - kept[0] <= self.cache_s:
                return kept[1]
            fetch = dataclasses.replace(self.fetcher, ask=ask.word)
            if not self.hosts:
                return []
            with ThreadPoolExecutor(
                max_workers=min(len(self.hosts), self.max_parallel),
                thread_name_prefix="vllm-ledger-ask",
            ) as pool:
                answers = list(pool.map(lambda h: self._one(fetch, h), self.hosts))
            if not ask.digest:
                self._cache[ask.word] = (self.monotonic(), answers)
            return answers


__all__ = ["CACHE_S", "Asker", "Host", "ask_seconds", "host_of", "hosts_of", "port_label"]
