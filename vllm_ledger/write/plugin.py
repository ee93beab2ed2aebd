"""The vLLM adapter (write side): the only module that touches vLLM's (unstable) stats classes.

vLLM builds ``LedgerStatLogger`` once per API-server process, through the
``vllm.stat_logger_plugins`` entry point, with ``engine_indexes`` listing every DP rank.
``record()`` is called on that process's asyncio output loop. It pulls out a handful of
numbers and hands them to the recorder's buffer; it never blocks and never raises. Of each
finished request it passes on the id with the counts, for the recorder's thread to join to
the attribution middleware's tags (``write/tags.py``); ids are held in memory for that join
only, never written. Prompts, outputs and credentials are never read.

Fields read (vLLM 0.30 to 0.33): ``IterationStats.iteration_timestamp``,
``.num_generation_tokens``, ``.prompt_token_stats.total`` / ``.cached_tokens``,
``.finished_requests[*].num_generation_tokens`` / ``.decode_time``. Where they live is found
once, at start, by feature detection (``write/shape.py``), never from the version string; the
shape found is logged in one line. A vLLM without them records no tokens: each iteration is
counted as rejected input (the report shows it) and serving goes on (docs/compatibility.md).
"""

from __future__ import annotations

import atexit
import logging
import operator
import os
import time
from pathlib import Path
from typing import Any

from vllm.v1.metrics.loggers import AggregateStatLoggerBase

from vllm_ledger import __version__
from vllm_ledger.bounds import (
    EARLIEST_AT,
    LATEST_AT,
    MAX_ENGINE,
    MAX_EXPECTED_WRITERS,
    MAX_WRITER_RANK,
    TOKENS_PER_ENGINE_SECOND,
)
from vllm_ledger.format.identity import (
    InstanceInfo,
    WriterIdentity,
    default_root,
    derive_run_id,
    expected_writers_from_env,
    host_name,
    process_start_ts,
    sanitize_run_id,
)
from vllm_ledger.format.zonefile import ROOT_ZONE_FILE, record_zone, zone_to_record
from vllm_ledger.units import (
    DISABLE_ENV,
    MAINTENANCE_ENV,
    PORT_ENV,
    ROOT_ENV,
    RUN_ID_ENV,
    WRITERS_ENV,
)
from vllm_ledger.write.recorder import Recorder
from vllm_ledger.write.shape import StatsShape, detect_shape
from vllm_ledger.write.tags import BOOK

logger = logging.getLogger("vllm.ledger.plugin")

# Every value taken from vLLM is checked against the one table of bounds (``bounds.py``), the
# same the reader enforces, so nothing committed can make a file unreadable: an event past them
# is counted as rejected input. No single event may hold more than one second of one engine.
MAX_TOKENS_PER_EVENT = TOKENS_PER_ENGINE_SECOND


def identity_from_config(
    vllm_config: Any, engine_indexes: list[int], env: dict[str, str] | os._Environ[str]
) -> WriterIdentity:
    """Work out run, rank, expected writers and instance facts, guarding private fields."""
    parallel = getattr(vllm_config, "parallel_config", None)
    count = getattr(parallel, "_api_process_count", 1)
    rank = getattr(parallel, "_api_process_rank", 0)
    count = count if isinstance(count, int) and count > 0 else 1
    rank = rank if isinstance(rank, int) and rank >= 0 else 0
    if count > MAX_EXPECTED_WRITERS or rank > MAX_WRITER_RANK:
        # A reader could not take such a file (bounds.py): say so at start, record nothing.
        raise ValueError(
            f"API server {rank} of {count} is past what a ledger names (at most "
            f"{MAX_EXPECTED_WRITERS} API servers, ranks to {MAX_WRITER_RANK})"
        )
    expected = count
    override, source = expected_writers_from_env(env)
    if source is not None and source != WRITERS_ENV:
        _note_alias_once(source, override)
    if override is not None:
        expected = override
    pid = os.getpid()
    launcher = os.getppid() if count > 1 else pid
    host = host_name()
    run_id = sanitize_run_id(env.get(RUN_ID_ENV, "")) or derive_run_id(
        launcher, host, process_start_ts(launcher)
    )
    model_config = getattr(vllm_config, "model_config", None)
    served = getattr(model_config, "served_model_name", None)
    if isinstance(served, str):
        names: tuple[str, ...] = (served,)
    elif isinstance(served, (list, tuple)):
        names = tuple(str(n) for n in served)
    else:
        names = (str(getattr(model_config, "model", "")),) if model_config else ()
    port_text = env.get(PORT_ENV) or ""
    port = int(port_text) if port_text.isdigit() else _port_from_argv()
    try:
        import vllm

        vllm_version = str(getattr(vllm, "__version__", ""))
    except Exception:  # pragma: no cover - vllm is importable here by construction
        vllm_version = ""
    return WriterIdentity(
        run_id=run_id,
        writer_rank=rank,
        expected_writers=expected,
        engine_indexes=tuple(int(i) for i in engine_indexes),
        pid=pid,
        instance=InstanceInfo(
            served_model_names=names,
            port=port,
            host_name=host,
            vllm_version=vllm_version,
            ledger_version=__version__,
        ),
    )


_alias_noted: set[str] = set()


def _note_alias_once(name: str, value: int | None) -> None:
    """One log line per process the first time a deploy_usage name is read. Never raises."""
    if name in _alias_noted:
        return
    _alias_noted.add(name)
    if value is None:
        logger.warning(
            "vllm-ledger: %s is not a whole number from 1 to 4096: ignored; "
            "set %s (its new name) to the API server count",
            name,
            WRITERS_ENV,
        )
    else:
        logger.info(
            "vllm-ledger: %s=%d read as %s (the deploy_usage name still works; "
            "docs/migrating-from-deploy-usage.md)",
            name,
            value,
            WRITERS_ENV,
        )


def _port_from_argv() -> int | None:
    """The API port: ``--port N`` or ``--port=N`` on the command line, else vLLM's 8000."""
    import sys

    # sys.argv first: an API process spawned by `vllm serve --api-server-count N` gets the
    # launcher's argv there (multiprocessing's spawn copies it), not in sys.orig_argv.
    argv = [*sys.argv, *(getattr(sys, "orig_argv", None) or [])]
    for i, arg in enumerate(argv):
        if arg == "--port" and i + 1 < len(argv) and argv[i + 1].isdigit():
            return int(argv[i + 1])
        if arg.startswith("--port=") and arg[7:].isdigit():
            return int(arg[7:])
    if any(a == "serve" for a in argv) or any("api_server" in a for a in argv):
        return 8000
    return None


def find_shape() -> StatsShape:
    """The shape of this process's vLLM stats classes (``write/shape.py``). Never raises."""
    try:
        import vllm
        from vllm.v1.metrics import loggers, stats

        return detect_shape(stats, loggers, str(getattr(vllm, "__version__", "?")))
    except Exception as exc:
        return StatsShape("?", missing=(f"stats cannot be read ({type(exc).__name__}: {exc})",))


def _getter(path: str) -> Any:
    return operator.attrgetter(path)


class LedgerStatLogger(AggregateStatLoggerBase):
    """A stat logger that keeps this API process's per-second token ledger.

    The write side alone runs no maintenance; the entry point ``vllm_ledger.plugin`` (the
    class vLLM loads) adds the rank-0 maintenance pass, which needs the read side.
    """

    @staticmethod
    def start_maintenance(root: Path) -> None:
        """Start the rank-0 background maintenance pass (none on the write side alone)."""

    def __init__(
        self,
        vllm_config: Any = None,
        engine_indexes: list[int] | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        # Extra arguments are taken, not refused: a vLLM that builds its loggers differently
        # must still start (the shape check below names the change and nothing is recorded).
        self.engine_indexes = list(engine_indexes or [0])
        self.recorder: Recorder | None = None
        self.book = BOOK
        self.faults_total = 0
        self.shape = StatsShape("?", missing=("not detected",))
        self._supported = False  # the shape's, found once (``_use_shape``): read per call
        env = os.environ
        if env.get(DISABLE_ENV, "").strip() not in ("", "0"):
            logger.info("vllm-ledger: disabled by VLLM_LEDGER_DISABLE")
            return
        if not env.get(ROOT_ENV, "").strip():
            # Switching the ledger on is explicit (docs/ledger.md#switching-it-on-and-off): an
            # installed plugin records nothing until VLLM_LEDGER_DIR names a root that outlives
            # the process.
            logger.info(
                "vllm-ledger: installed but not recording: set VLLM_LEDGER_DIR to the ledger "
                "root (a host directory that outlives the container) to switch it on"
            )
            return
        try:
            self.shape = find_shape()
            self._use_shape(self.shape)
            identity = identity_from_config(vllm_config, self.engine_indexes, env)
            root = default_root(env)
            self.recorder = Recorder(root, identity, book=self.book)
            self.recorder.start()
            self.book.consumer = self.shape.joins
            atexit.register(self.shutdown)
            if identity.writer_rank == 0:
                self._record_zone(root, env)
            if identity.writer_rank == 0 and env.get(MAINTENANCE_ENV, "1") != "0":
                try:
                    self.start_maintenance(root)
                except Exception as exc:  # the ledger itself is running: keep it
                    self.faults_total += 1
                    logger.warning("vllm-ledger: no background maintenance: %s", exc)
            if self.shape.supported:
                logger.info(
                    "vllm-ledger: recording to %s (run %s, writer %d of %d, engines %s; %s)",
                    root,
                    identity.run_id,
                    identity.writer_rank,
                    identity.expected_writers,
                    list(identity.engine_indexes),
                    self.shape.describe(),
                )
            else:
                logger.error(
                    "vllm-ledger: not recording tokens: unsupported vLLM stats (%s); serving "
                    "goes on and each iteration is counted as rejected input in %s "
                    "(docs/compatibility.md; run `vllm-ledger doctor --only interface`)",
                    self.shape.describe(),
                    root,
                )
        except Exception as exc:  # never break vLLM's start-up
            self.faults_total += 1
            self.recorder = None
            logger.error("vllm-ledger: not recording: %s", exc)

    def _finished(self, f: Any) -> tuple[Any, ...]:
        """A finished request's numbers where the layout changed, or without the join."""
        g, d = self._get_f_generation(f), self._get_decode(f)
        if not self._join:
            return (g, d)
        return (g, d, self._get_f_id(f), self._get_f_prompt(f), self._get_f_cached(f))

    def _use_shape(self, shape: StatsShape) -> None:
        """Readers for a changed layout; the 0.30-0.33 layout keeps the inline fast path."""
        self._supported = shape.supported
        self._standard = shape.standard
        self._join = shape.joins
        self._get_f_id = _getter(shape.finished_id)
        self._get_f_prompt = _getter(shape.finished_prompt)
        self._get_f_cached = _getter(shape.finished_cached)
        self._get_ts = _getter(shape.timestamp)
        self._get_prompt = _getter(shape.prompt)
        self._get_cached = _getter(shape.cached)
        self._get_generation = _getter(shape.generation)
        self._get_finished = _getter(shape.finished)
        self._get_f_generation = _getter(shape.finished_generation)
        self._get_decode = _getter(shape.decode)

    def _record_zone(self, root: Path, env: Any) -> None:
        """Record the zone (``$VLLM_LEDGER_TZ`` or the bundle's) in ``ROOT/zone`` once, for the
        readers (format/zonefile.py). A failure is counted and logged, never raised."""
        try:
            name = zone_to_record(env)
            if name is None:
                return
            done, zone = record_zone(root, name)
        except Exception as exc:
            self.faults_total += 1
            logger.warning("vllm-ledger: zone not recorded in %s: %s", root / ROOT_ZONE_FILE, exc)
            return
        if done == "written":
            logger.info("vllm-ledger: recorded the zone %s in %s", zone, root / ROOT_ZONE_FILE)
        elif done == "kept":
            logger.warning(
                "vllm-ledger: %s already records the zone %s; kept it (remove the file to "
                "record %s)",
                root / ROOT_ZONE_FILE,
                zone,
                name,
            )

    def record(
        self,
        scheduler_stats: Any,
        iteration_stats: Any,
        mm_cache_stats: Any = None,
        engine_idx: int = 0,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        recorder = self.recorder
        if recorder is None or iteration_stats is None:
            return
        book = self.book
        try:
            if not self._supported:
                raise ValueError("unsupported vLLM stats")
            # Checks are written out inline: this runs for every engine iteration.
            if self._standard:
                ts = iteration_stats.iteration_timestamp
                pts = iteration_stats.prompt_token_stats
                prompt = pts.total
                cached = pts.cached_tokens
                generation = iteration_stats.num_generation_tokens
                finished_requests = iteration_stats.finished_requests
            else:
                ts = self._get_ts(iteration_stats)
                prompt = self._get_prompt(iteration_stats)
                cached = self._get_cached(iteration_stats)
                generation = self._get_generation(iteration_stats)
                finished_requests = self._get_finished(iteration_stats)
            # The bounds of bounds.py, inlined: NaN fails both comparisons, bool is not int.
            if not (
                type(ts) is float
                and EARLIEST_AT <= ts < LATEST_AT
                and type(engine_idx) is int
                and 0 <= engine_idx <= MAX_ENGINE
                and type(prompt) is int
                and 0 <= prompt <= MAX_TOKENS_PER_EVENT
                and type(cached) is int
                and 0 <= cached <= MAX_TOKENS_PER_EVENT
                and type(generation) is int
                and 0 <= generation <= MAX_TOKENS_PER_EVENT
            ):
                raise ValueError("out of range")
            if type(finished_requests) is not list and type(finished_requests) is not tuple:
                raise ValueError("finished_requests is not a list")
            # Each finished request's numbers, as they are: the recorder's thread checks them
            # against the bounds (a bad one makes the event rejected input) and joins them to
            # the middleware's tags, off this loop.
            if not finished_requests:
                finished: tuple[Any, ...] = ()
            elif self._standard and self._join:
                # The stats objects themselves (vLLM makes them anew for each finish and never
                # changes them after): the recorder's thread reads their fields, off this loop.
                finished = tuple(finished_requests)
            else:
                finished = tuple([self._finished(f) for f in finished_requests])
            # book.tick(), written out: one more record() call, its number for the recorder.
            book.records = tick = book.records + 1
            recorder.submit((ts, engine_idx, prompt, generation, cached, finished, tick))
        except Exception:
            self.faults_total += 1
            try:
                recorder.reject(time.time())
            except Exception:
                pass

    def log_engine_initialized(self) -> None:
        pass

    def log(self) -> None:
        pass

    def shutdown(self) -> None:
        """Drain and close within the limit; called at exit. Never raises."""
        recorder = self.recorder
        if recorder is None:
            return
        try:
            recorder.close()
        except Exception:
            self.faults_total += 1
