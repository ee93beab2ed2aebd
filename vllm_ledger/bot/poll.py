"""Fetch each instance's status over SSH: argv only, hard deadlines, capped output. Stdlib.

An entry's ``transport`` may instead be ``local`` (the same command run here, through the same
``run_capped`` and ``classify``) or ``http`` (the exporter's ``/status`` through the one HTTP
client, the body parsed by the same ``formats.status.parse``): ``bot/transport.py``. The
deadline, the output cap, the states and the cache below hold for all three.

For a validated ``Target`` the poller runs::

    ssh -o BatchMode=yes -o ConnectTimeout=5 ... -T -x -- TARGET \\
        'cd CODE_DIR && PYTHONPATH=CODE_DIR exec python3 -m vllm_ledger status --root DATA_DIR'

as an argv list (never through a local shell), in its own process group, with stdin from
/dev/null and stderr discarded. Stdout is read up to ``MAX_OUTPUT_BYTES``; past that, or past
the target's deadline, the whole process group is killed. The bytes are parsed by
``formats.status.parse``; only range-checked numbers come out (and today's top key names,
shape-checked: ``formats/status_keys.py``).

Outcomes per instance: ``ok``, ``unreachable`` (ssh exit 255: refused, unknown host key,
bad key, no route), ``timeout`` (deadline passed), ``unparseable`` (too much output or not a
valid status document), ``remote_failed`` (the status command itself exited non-zero, other
than 3, "nothing matched", whose document is read: a ledger-side fault, e.g. a missing
data_dir).

``Poller`` polls the targets concurrently, at most ``MAX_PARALLEL_SSH`` ssh processes at once
(the others wait for a free slot), once or every ``interval_s`` in a background thread, and
keeps a cache stamped with the *local* receive time (monotonic, for staleness) and the
estimated clock offset of the remote host. Each ssh has its own total deadline (output that
trickles in does not extend it), so a round of N targets ends within
``ceil(N / MAX_PARALLEL_SSH) * deadline_s`` whatever the remotes do.

The command and its ssh argv are built in ``bot/ssh_command.py``; the capped run is
``bot/capped.py``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from vllm_ledger.bot import transport as transports
from vllm_ledger.bot.capped import MAX_OUTPUT_BYTES, CappedRun, run_capped
from vllm_ledger.bot.health import Health, from_status
from vllm_ledger.bot.ssh_command import DEFAULT_CONNECT_TIMEOUT_S, ssh_argv
from vllm_ledger.bot.validate import Target
from vllm_ledger.errors import RemoteError, StatusParseError
from vllm_ledger.formats import status as status_format
from vllm_ledger.names import EXIT_NOTHING_MATCHED, POLL_STALE_AFTER_S

DEFAULT_DEADLINE_S = 20.0
DEFAULT_INTERVAL_S = 30.0
CLOCK_HINT_S = 5.0
MAX_PARALLEL_SSH = 8  # ssh processes alive at once, per Poller

STATES: tuple[str, ...] = ("ok", "unreachable", "timeout", "unparseable", "remote_failed")


@dataclass(frozen=True)
class PollResult:
    """One poll of one instance. Only ``status`` carries remote data: validated numbers."""

    port: int
    state: str
    status: status_format.StatusDoc | None
    sent_ts: float
    received_ts: float
    received_monotonic: float
    round_trip_s: float

    @property
    def clock_offset_s(self) -> float | None:
        """Remote clock minus local clock, against the local receive time.

        The remote reads its clock after the SSH handshake, just before it prints, so the
        receive time is the closest local instant; the true offset lies between this value
        and the one against the send time (``clock_offset_range_s``).
        """
        if self.status is None:
            return None
        return self.status.clock_ts - (self.sent_ts + self.round_trip_s)

    @property
    def clock_offset_range_s(self) -> tuple[float, float] | None:
        if self.status is None:
            return None
        return (
            self.status.clock_ts - (self.sent_ts + self.round_trip_s),
            self.status.clock_ts - self.sent_ts,
        )

    @property
    def clock_hint(self) -> bool:
        """True when the whole offset range lies beyond ``CLOCK_HINT_S`` on one side."""
        rng = self.clock_offset_range_s
        return rng is not None and (rng[0] > CLOCK_HINT_S or rng[1] < -CLOCK_HINT_S)


def classify(run: CappedRun) -> tuple[str, status_format.StatusDoc | None]:
    if run.ended == "timeout":
        return "timeout", None
    if run.ended == "overflow":
        return "unparseable", None
    if run.exit_code == 255:
        return "unreachable", None
    if run.exit_code not in (0, EXIT_NOTHING_MATCHED):  # 3: a whole document all the same
        return "remote_failed", None
    try:
        return "ok", status_format.parse(run.stdout, max_bytes=MAX_OUTPUT_BYTES)
    except StatusParseError:
        return "unparseable", None


Runner = Callable[[Target], CappedRun]


@dataclass
class Fetcher:
    """Fetch one target's status; its options come from code and the command line only.
    ``ssh`` is the client program (tests pass a stand-in; default: ``ssh`` on PATH); ``ask``
    a word of ``formats.status_asked.ASKS`` the command ends with."""

    ssh_options: Sequence[str] = ()
    deadline_s: float = DEFAULT_DEADLINE_S
    connect_timeout_s: int = DEFAULT_CONNECT_TIMEOUT_S
    max_bytes: int = MAX_OUTPUT_BYTES
    clock: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic
    ssh: str | None = None
    ask: str | None = None

    def run(self, target: Target) -> CappedRun:
        """The ssh (or, for a ``local`` entry, the status command) run, capped."""
        env, cwd = None, None
        if target.transport == "local":
            argv = transports.local_argv(target, self.ask)
            env, cwd = transports.local_env(target), target.code_dir or None
        else:
            argv = ssh_argv(
                target,
                ssh_options=self.ssh_options,
                connect_timeout_s=self.connect_timeout_s,
                ssh=self.ssh,
                ask=self.ask,
            )
        try:
            return run_capped(
                argv,
                deadline_s=self.deadline_s,
                max_bytes=self.max_bytes,
                monotonic=self.monotonic,
                env=env,
                cwd=cwd,
            )
        except FileNotFoundError as exc:
            raise RemoteError(
                f"{argv[0]} is not installed here",
                target=target.target,
                hint="install openssh-client" if target.transport == "ssh" else "fix its python",
            ) from exc
        except OSError as exc:
            raise RemoteError(
                f"{argv[0]} could not be started: {exc.strerror}", target=target.target
            ) from exc

    def __call__(self, target: Target) -> PollResult:
        sent_ts = self.clock()
        sent_mono = self.monotonic()
        if target.transport == "http":
            state, doc = transports.fetch_http(
                target, deadline_s=self.deadline_s, max_bytes=self.max_bytes, ask=self.ask
            )
        else:
            state, doc = classify(self.run(target))
        received_mono = self.monotonic()
        received_ts = self.clock()
        return PollResult(
            target.port,
            state,
            doc,
            sent_ts,
            received_ts,
            received_mono,
            max(0.0, received_mono - sent_mono),
        )


@dataclass(frozen=True)
class CacheEntry:
    """The latest poll of an instance, and the latest one that succeeded."""

    latest: PollResult
    last_ok: PollResult | None

    def age_s(self, now_monotonic: float) -> float | None:
        """Seconds since the last good figures arrived, by the local monotonic clock."""
        if self.last_ok is None:
            return None
        return max(0.0, now_monotonic - self.last_ok.received_monotonic)

    def stale(self, now_monotonic: float, stale_after_s: float = POLL_STALE_AFTER_S) -> bool:
        age = self.age_s(now_monotonic)
        return age is None or age > stale_after_s


def reported_health(entry: CacheEntry | None, port: int) -> Health:
    """vLLM's health as the deployment host's status command probed it (127.0.0.1:PORT),
    from the latest poll only: a failed poll is a ledger-side fault and says nothing about
    vLLM, so it gives ``unknown``, never ``down``."""
    if entry is None or entry.latest.state != "ok" or entry.latest.status is None:
        return Health(port, "unknown")
    row = entry.latest.status.instance(port)
    return from_status(port, row.health if row is not None else None)


class Poller:
    """Poll targets concurrently, at most ``max_parallel`` at once; keep a cache; optionally
    every ``interval_s`` in a thread. ``on_result`` is called with each result as it lands
    (the notifier's budget messages); it must not raise."""

    def __init__(
        self,
        targets: Sequence[Target],
        fetch: Callable[[Target], PollResult],
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        monotonic: Callable[[], float] = time.monotonic,
        max_parallel: int = MAX_PARALLEL_SSH,
        on_result: Callable[[Target, PollResult], None] | None = None,
    ) -> None:
        if max_parallel < 1:
            raise ValueError(f"max_parallel must be at least 1, not {max_parallel}")
        self.targets = list(targets)
        self.max_parallel = max_parallel
        self.fetch = fetch
        self.interval_s = interval_s
        self.monotonic = monotonic
        self.on_result = on_result
        self._cache: dict[int, CacheEntry] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.rounds_total = 0

    def _store(self, result: PollResult) -> None:
        with self._lock:
            prev = self._cache.get(result.port)
            last_ok = result if result.state == "ok" else (prev.last_ok if prev else None)
            self._cache[result.port] = CacheEntry(result, last_ok)

    def _one(self, target: Target) -> PollResult:
        result = self.fetch(target)
        self._store(result)  # each target lands as soon as it is done
        if self.on_result is not None:
            self.on_result(target, result)  # its own errors are its own (never raised here)
        return result

    def poll_once(self) -> dict[int, PollResult]:
        """Poll every target, ``max_parallel`` at a time; returns when the last has ended (each
        by its own deadline)."""
        if not self.targets:
            return {}
        with ThreadPoolExecutor(
            max_workers=min(len(self.targets), self.max_parallel),
            thread_name_prefix="vllm-ledger-poll",
        ) as pool:
            results = list(pool.map(self._one, self.targets))
        self.rounds_total += 1
        return {r.port: r for r in results}

    def cache(self) -> dict[int, CacheEntry]:
        with self._lock:
            return dict(self._cache)

    def start(self) -> None:
        """Poll in a daemon thread until ``stop()``; the caller is never blocked."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="vllm-ledger-poller", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            began = self.monotonic()
            with contextlib.suppress(Exception):  # a poll fault must not end the thread
                self.poll_once()
            self._stop.wait(max(0.0, self.interval_s - (self.monotonic() - began)))

    def stop(self, timeout_s: float | None = None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None


__all__ = [
    "CLOCK_HINT_S",
    "MAX_PARALLEL_SSH",
    "STATES",
    "CacheEntry",
    "Fetcher",
    "PollResult",
    "Poller",
    "classify",
    "reported_health",
]
