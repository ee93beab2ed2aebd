"""Health observation: every ~10 s per instance, on its own schedule, with flap damping; and
``Loop``, what keeps each of the notifier's loops going and says how it is doing.

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

``Loop`` runs one step function until stopped. A step that raises (its store locked or full,
its platform, a fault of our own) is counted, logged once a minute with the count, and tried
again after a backoff that doubles from ``BACKOFF_FIRST_S`` to ``BACKOFF_MAX_S``: the thread
never ends for an error. ``Loop.state`` is ``ok``, ``failing`` (the last step raised),
``stuck`` (no step finished within ``stall_s``) or ``gone`` (its thread ended).
"""

from __future__ import annotations

import logging
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
BACKOFF_FIRST_S = 0.1
BACKOFF_MAX_S = 5.0
LOG_EVERY_S = 60.0
Up = Literal["up", "down"]
LoopState = Literal["ok", "failing", "stuck", "gone"]
log = logging.getLogger("vllm_ledger.notify")


class Loop:
    """One background loop: its thread, its last progress and its errors."""

    def __init__(
        self,
        name: str,
        *,
        stall_s: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.stall_s = stall_s
        self.monotonic = monotonic
        self.progress_monotonic = monotonic()
        self.errors_total = 0
        self.failing: str | None = None  # the last step's error, while it fails
        self.thread: threading.Thread | None = None
        self._backoff_s = 0.0
        self._logged_monotonic: float | None = None
        self._unlogged = 0
        self._lock = threading.Lock()

    def progressed(self) -> None:
        """A step finished: the loop is making progress."""
        with self._lock:
            self.progress_monotonic = self.monotonic()
            if self.failing is not None:
                log.warning("%s: recovered after %d error(s)", self.name, self._unlogged)
                self._logged_monotonic = None
                self._unlogged = 0
            self.failing = None
            self._backoff_s = 0.0

    def failed(self, exc: BaseException) -> float:
        """A step raised: counted, logged at most once a minute; the seconds to wait."""
        with self._lock:
            self.errors_total += 1
            self._unlogged += 1
            self.failing = f"{type(exc).__name__}: {exc}"[:200]
            now = self.monotonic()
            if self._logged_monotonic is None or now - self._logged_monotonic >= LOG_EVERY_S:
                log.error(
                    "%s: %d error(s) since the last report, retrying; the last: %s",
                    self.name,
                    self._unlogged,
                    self.failing,
                )
                self._logged_monotonic = now
                self._unlogged = 0
            self._backoff_s = min(BACKOFF_MAX_S, max(BACKOFF_FIRST_S, self._backoff_s * 2))
            return self._backoff_s

    def state(self) -> LoopState:
        if self.thread is not None and not self.thread.is_alive():
            return "gone"
        if self.failing is not None:
            return "failing"
        if self.monotonic() - self.progress_monotonic > self.stall_s:
            return "stuck"
        return "ok"

    def report(self) -> dict[str, object]:
        return {
            "state": self.state(),
            "last_progress_s_ago": round(self.monotonic() - self.progress_monotonic, 1),
            "errors_total": self.errors_total,
            "error": self.failing,
        }

    def run(self, step: Callable[[], float], stop: threading.Event) -> None:
        """Call ``step`` (it returns how long to wait before the next) until ``stop``."""
        while not stop.is_set():
            try:
                wait_s = step()
            except Exception as exc:  # every error: counted, logged, retried
                wait_s = self.failed(exc)
            else:
                self.progressed()
            if wait_s > 0:
                stop.wait(wait_s)

    def start(self, step: Callable[[], float], stop: threading.Event) -> None:
        self.thread = threading.Thread(
            target=self.run, args=(step, stop), name=f"vllm-ledger-{self.name}", daemon=True
        )
        self.thread.start()


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

    def observe(
        self, port: int, health: Health, now_ts: float, *, commit: bool = True
    ) -> tuple[str | None, Up] | None:
        """(old reported state or None for the baseline, new state) when a change is now
        confirmed; otherwise None. With ``commit=False`` the change is taken as reported only
        once the caller calls ``confirm`` (after storing it): until then every observation
        proposes it again."""
        seen = up_or_down(health)
        if seen is None:
            return None
        old = self.reported.get(port)
        if old is None:  # the baseline: known at once, announced never
            if commit:
                self.reported[port] = seen
            return (None, seen)
        if seen == old:
            self._candidate.pop(port, None)
            return None
        cand = self._candidate.get(port)
        if cand is None or cand.state != seen:
            cand = self._candidate[port] = _Candidate(seen, now_ts)
        if now_ts - cand.since_ts >= self.damping_s:
            if commit:
                self.confirm(port, seen)
            return (old, seen)
        return None

    def confirm(self, port: int, state: Up) -> None:
        """``state`` is now the reported one of ``port``."""
        self._candidate.pop(port, None)
        self.reported[port] = state


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
        self.latest: dict[int, Health] = {}
        # no progress for this long (each observation has its own deadline) is stuck
        self.loop = Loop("health", stall_s=max(60.0, 3 * interval_s), monotonic=monotonic)

    def _one(self, t: Target) -> None:
        try:
            h = self.observe(t)
        except Exception:  # an observation fault is "unknown", never the end of the watch
            h = Health(t.port, "unknown")
        with self._lock:
            self.latest[t.port] = h
            self._busy.discard(t.port)
        try:
            self.on_health(t.port, h)
        except Exception as exc:  # the store: counted; the next observation proposes it again
            self.loop.failed(exc)
        else:
            self.loop.progressed()

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
                try:
                    self.tick(pool)
                except Exception as exc:  # never the end of the watch
                    self._stop.wait(self.loop.failed(exc))
                self._stop.wait(0.1)
            pool.shutdown(wait=False, cancel_futures=True)

    def health(self) -> dict[int, Health]:
        with self._lock:
            return dict(self.latest)

    def start(self) -> None:
        if self.loop.thread is None and self.targets:
            self.loop.progressed()
            self.loop.thread = threading.Thread(
                target=self._loop, name="vllm-ledger-health", daemon=True
            )
            self.loop.thread.start()

    def stop(self, timeout_s: float | None = None) -> None:
        self._stop.set()
        if self.loop.thread is not None:
            self.loop.thread.join(timeout_s)


__all__ = [
    "MAX_PARALLEL",
    "Damper",
    "HealthWatch",
    "Loop",
    "LoopState",
    "make_observer",
    "up_or_down",
]
