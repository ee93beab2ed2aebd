"""Health observation: every ~10 s per instance, on its own schedule, with flap damping.

``Damper`` is pure: it turns observations into reported transitions. A state is reported
only once it has been observed, unchanged, for ``damping_s``; an instance that flips back
within that time reports nothing (no storm). ``unknown`` (nothing could be observed: the SSH
query failed, a ledger-side fault) neither confirms nor cancels anything, so a ledger fault is
never reported as vLLM going down. The first known state after a start with no stored state
is the baseline and is not announced.

``HealthWatch`` runs the schedule: each target is due every ``interval_s``, observed in a
pool of at most ``MAX_PARALLEL`` workers, each within its own deadline; a target whose last
observation is still running is skipped, never queued twice, so a hung host delays no other.
A target with a ``host`` is probed over HTTP (``bot.health.probe``); one with only an SSH
target runs the fixed status command, whose document carries the host's own probe of
127.0.0.1 at the node port.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

from vllm_ledger.bot.health import Health, probe
from vllm_ledger.bot.poll import CacheEntry, Fetcher, PollResult, reported_health
from vllm_ledger.bot.validate import Target

MAX_PARALLEL = 8  # observations (ssh processes or HTTP probes) running at once
Up = Literal["up", "down"]


def up_or_down(h: Health) -> Up | None:
    if h.state == "healthy":
        return "up"
    if h.state in ("unhealthy", "down"):
        return "down"
    return None


@dataclass
class _Candidate:
    state: Up
    since_ts: float


class Damper:
    """Observations in, at most one transition per confirmed change out. Pure."""

    def __init__(self, damping_s: float, reported: dict[int, str] | None = None) -> None:
        self.damping_s = damping_s
        self.reported: dict[int, str] = dict(reported or {})
        self._candidate: dict[int, _Candidate] = {}

    def observe(self, port: int, health: Health, now_ts: float) -> tuple[str | None, Up] | None:
        """(old reported state or None for the baseline, new state) when a change is now
        confirmed; otherwise None."""
        seen = up_or_down(health)
        if seen is None:
            return None
        old = self.reported.get(port)
        if old is None:  # the baseline: known at once, announced never
            self.reported[port] = seen
            return (None, seen)
        if seen == old:
            self._candidate.pop(port, None)
            return None
        cand = self._candidate.get(port)
        if cand is None or cand.state != seen:
            cand = self._candidate[port] = _Candidate(seen, now_ts)
        if now_ts - cand.since_ts >= self.damping_s:
            self._candidate.pop(port, None)
            self.reported[port] = seen
            return (old, seen)
        return None


Observe = Callable[[Target], Health]


def make_observer(fetch: Fetcher, *, probe_timeout_s: float) -> Observe:
    """How one target is observed: HTTP when the config names a host, else over SSH."""

    def observe(t: Target) -> Health:
        if t.host is not None:
            return probe(t.host, t.port, timeout_s=probe_timeout_s)
        result: PollResult = fetch(t)
        return reported_health(CacheEntry(result, result if result.state == "ok" else None), t.port)

    return observe


class HealthWatch:
    """Observe every target every ``interval_s`` in the background; call ``on_health``."""

    def __init__(
        self,
        targets: Sequence[Target],
        observe: Observe,
        on_health: Callable[[int, Health], None],
        *,
        interval_s: float,
        monotonic: Callable[[], float] = time.monotonic,
        max_parallel: int = MAX_PARALLEL,
    ) -> None:
        self.targets = list(targets)
        self.observe = observe
        self.on_health = on_health
        self.interval_s = interval_s
        self.monotonic = monotonic
        self.max_parallel = max_parallel
        self._due = {t.port: 0.0 for t in self.targets}
        self._busy: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.latest: dict[int, Health] = {}

    def _one(self, t: Target) -> None:
        try:
            h = self.observe(t)
        except Exception:  # an observation fault is "unknown", never the end of the watch
            h = Health(t.port, "unknown")
        with self._lock:
            self.latest[t.port] = h
            self._busy.discard(t.port)
        with contextlib.suppress(Exception):
            self.on_health(t.port, h)

    def tick(self, pool: ThreadPoolExecutor) -> None:
        now = self.monotonic()
        for t in self.targets:
            with self._lock:
                if t.port in self._busy or now < self._due[t.port]:
                    continue
                self._busy.add(t.port)
                self._due[t.port] = now + self.interval_s
            pool.submit(self._one, t)

    def _loop(self) -> None:
        with ThreadPoolExecutor(
            max_workers=max(1, min(len(self.targets), self.max_parallel)),
            thread_name_prefix="vllm-ledger-health",
        ) as pool:
            while not self._stop.is_set():
                self.tick(pool)
                self._stop.wait(0.1)
            pool.shutdown(wait=False, cancel_futures=True)

    def health(self) -> dict[int, Health]:
        with self._lock:
            return dict(self.latest)

    def start(self) -> None:
        if self._thread is None and self.targets:
            self._thread = threading.Thread(
                target=self._loop, name="vllm-ledger-health", daemon=True
            )
            self._thread.start()

    def stop(self, timeout_s: float | None = None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None


__all__ = ["MAX_PARALLEL", "Damper", "HealthWatch", "make_observer", "up_or_down"]
