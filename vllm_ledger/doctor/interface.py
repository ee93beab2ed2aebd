"""The ``interface`` check: the installed vLLM still hands the plugin what it reads.

vLLM's stats classes (``IterationStats``, its prompt token stats, ``FinishedRequestStats``)
must have every field the plugin reads, with the types it expects; ``AggregateStatLoggerBase``
must build and call loggers the way the plugin is written for; and one real ``record()``
through the real plugin must land in a temporary ledger that reads back exactly.

``interface_problems`` (over the two modules, passed in), ``round_trip_problem`` and
``interface_row`` are pure; ``round_trip`` and ``check_interface`` are the edges: vLLM is
imported only there, when this check runs.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import inspect
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from vllm_ledger.doctor.base import Row, quiet_ledger_log
from vllm_ledger.read.discovery import discover_paths
from vllm_ledger.read.open_ledger import read_ledger
from vllm_ledger.read.snapshot import Sums
from vllm_ledger.read.windows import Window
from vllm_ledger.write.shape import StatsShape, detect_shape

# The fields the plugin reads (write/plugin.py's docstring lists them), with their types.
ITERATION_FIELDS: tuple[tuple[str, type], ...] = (
    ("iteration_timestamp", float),
    ("num_generation_tokens", int),
    ("finished_requests", list),
)
PROMPT_FIELDS: tuple[tuple[str, type], ...] = (("total", int), ("cached_tokens", int))
FINISHED_FIELDS: tuple[tuple[str, type], ...] = (
    ("num_generation_tokens", int),
    ("decode_time", float),
)
RECORD_PARAMS = ("scheduler_stats", "iteration_stats", "mm_cache_stats", "engine_idx")
INIT_PARAMS = ("vllm_config", "engine_indexes")
# How many stats fields that is: the prompt token stats themselves count as one.
FIELD_COUNT = len(ITERATION_FIELDS) + 1 + len(PROMPT_FIELDS) + len(FINISHED_FIELDS)

ALL_TIME = Window("all", 0, 2**40)

FIX = (
    "this vLLM changed what the plugin reads: pin a vLLM release docs/compatibility.md lists "
    "as checked (0.30.0 to 0.33.0) or update vllm_ledger/write/shape.py, then run the doctor "
    "again; until then the plugin records no tokens (serving goes on; each iteration is "
    "counted as rejected input)"
)


def _declared(cls: Any, name: str) -> Any:
    """The declared type of a dataclass field (a type, or its name as a string), else None."""
    for f in dataclasses.fields(cls):
        if f.name == name:
            return f.type
    return None


def _type_ok(declared: Any, want: type) -> bool:
    if declared is want:
        return True
    return isinstance(declared, str) and declared.strip("'\"") == want.__name__


def interface_problems(stats: Any, loggers: Any) -> list[str]:
    """What in vLLM's stats module and loggers module differs from what the plugin reads."""
    problems: list[str] = []
    it_cls = getattr(stats, "IterationStats", None)
    fin_cls = getattr(stats, "FinishedRequestStats", None)
    base = getattr(loggers, "AggregateStatLoggerBase", None)
    for name, obj in (
        ("IterationStats", it_cls),
        ("FinishedRequestStats", fin_cls),
        ("AggregateStatLoggerBase", base),
    ):
        if obj is None:
            problems.append(f"vLLM has no {name}")
    if it_cls is not None:
        it = it_cls()
        for field, want in ITERATION_FIELDS:
            if not hasattr(it, field):
                problems.append(f"IterationStats has no {field}")
            elif type(getattr(it, field)) is not want:
                got = type(getattr(it, field)).__name__
                problems.append(f"IterationStats.{field} is {got}, not {want.__name__}")
        pts = getattr(it, "prompt_token_stats", None)
        if pts is None:
            problems.append("IterationStats has no prompt_token_stats")
        else:
            pcls = type(pts)
            for field, want in PROMPT_FIELDS:
                value = getattr(pts, field, None)
                if value is None:
                    problems.append(f"{pcls.__name__} has no {field}")
                    continue
                declared = _declared(pcls, field) if dataclasses.is_dataclass(pcls) else want
                if type(value) is not want or not _type_ok(declared, want):
                    problems.append(f"{pcls.__name__}.{field} is not {want.__name__}")
    if fin_cls is not None:
        if not dataclasses.is_dataclass(fin_cls):
            problems.append("FinishedRequestStats is no longer a dataclass")
        else:
            for field, want in FINISHED_FIELDS:
                declared = _declared(fin_cls, field)
                if declared is None:
                    problems.append(f"FinishedRequestStats has no field {field}")
                elif not _type_ok(declared, want):
                    problems.append(f"FinishedRequestStats.{field} is {declared}, not {want}")
    if base is not None:
        params = list(inspect.signature(base.record).parameters.values())[1:]
        names = tuple(p.name for p in params)
        if names[:4] != RECORD_PARAMS:
            problems.append(
                f"AggregateStatLoggerBase.record takes ({', '.join(names)}), "
                f"not ({', '.join(RECORD_PARAMS)})"
            )
        else:
            defaults = {p.name: p.default for p in params}
            if defaults["mm_cache_stats"] is not None or defaults["engine_idx"] != 0:
                problems.append("AggregateStatLoggerBase.record's defaults changed")
        init = tuple(list(inspect.signature(base.__init__).parameters)[1:3])
        if init != INIT_PARAMS:
            problems.append(
                f"AggregateStatLoggerBase is built with ({', '.join(init)}), "
                f"not ({', '.join(INIT_PARAMS)})"
            )
    return problems


def round_trip_problem(sent: Mapping[str, int], got: Mapping[str, int]) -> str | None:
    """What the ledger read back differently from what was recorded, or None. Pure."""
    wrong = ", ".join(f"{k} {got.get(k)} (sent {v})" for k, v in sent.items() if got.get(k) != v)
    return f"record() round trip read back {wrong}" if wrong else None


def interface_row(version: str, problems: list[str], shape: StatsShape | None = None) -> Row:
    """The row for vLLM ``version`` with these ``problems`` (none: it passes), and the shape
    the plugin's adapter found in it (``write/shape.py``), said the same way. Pure."""
    adapter = ""
    if shape is not None:
        adapter = (
            f"; the plugin reads {shape.describe().split(', ', 1)[-1]}"
            if shape.supported
            else "; the plugin records no tokens with it (its start line says so)"
        )
    if problems:
        return Row("interface", False, f"vLLM {version}: " + "; ".join(problems) + adapter, FIX)
    return Row(
        "interface",
        True,
        f"vLLM {version}: the {FIELD_COUNT} stats fields the plugin reads are there with their "
        f"types; record({', '.join(RECORD_PARAMS)}) as the plugin takes it; one record() "
        "through the plugin read back exactly (input 7, output 4, cached 3, 1 request)" + adapter,
    )


@contextlib.contextmanager
def _env(**values: str | None) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def round_trip() -> tuple[dict[str, int], dict[str, int]]:
    """One real ``record()`` through the plugin vLLM loads, into a temporary ledger.

    Returns (what was recorded, what the ledger reads back), both in the report's names.
    """
    from vllm.config import ParallelConfig, VllmConfig
    from vllm.v1.engine import FinishReason
    from vllm.v1.metrics.stats import FinishedRequestStats, IterationStats, PrefillStats

    from vllm_ledger.plugin import LedgerStatLogger

    it = IterationStats()
    prefill = PrefillStats()
    prefill.set(num_prompt_tokens=7, num_local_cached_tokens=3, num_external_cached_tokens=0)
    it.prompt_token_stats.update_from_output(prefill)
    it.num_generation_tokens = 4
    it.finished_requests.append(
        FinishedRequestStats(
            finish_reason=FinishReason.LENGTH, num_generation_tokens=4, decode_time=0.25
        )
    )
    sent = {
        "input_tokens": 7,
        "output_tokens": 4,
        "cached_tokens": 3,
        "requests": 1,
        "decode_tokens": 3,
        "decode_us": 250_000,
    }
    config = VllmConfig(parallel_config=ParallelConfig(_api_process_count=1, _api_process_rank=0))
    with (
        tempfile.TemporaryDirectory(prefix="vllm-ledger-doctor-") as tmp,
        _env(
            VLLM_LEDGER_DIR=tmp,
            VLLM_LEDGER_RUN_ID="doctor-round-trip",
            VLLM_LEDGER_MAINTENANCE="0",
            VLLM_LEDGER_DISABLE=None,
            VLLM_LEDGER_WRITERS=None,
        ),
        quiet_ledger_log() as log,
    ):
        plugin = LedgerStatLogger(vllm_config=config, engine_indexes=[0])
        try:
            if plugin.recorder is None:
                raise RuntimeError("the plugin did not start recording: " + "; ".join(log.lines))
            plugin.record(None, it, mm_cache_stats=None, engine_idx=0)
            faults = plugin.faults_total + plugin.recorder.rejected_total
        finally:
            plugin.shutdown()
            atexit.unregister(plugin.shutdown)
        if faults:
            raise RuntimeError(f"the plugin refused the iteration ({'; '.join(log.lines)})")
        got = Sums()
        for path in discover_paths([Path(tmp)]):
            snap = read_ledger(path, [ALL_TIME])
            if not snap.ok:
                raise RuntimeError(f"the ledger written reads as {snap.status}: {snap.detail}")
            for s in snap.window_sums(ALL_TIME).values():
                got.add(s)
    return sent, dataclasses.asdict(got)


def check_interface() -> Row:
    try:
        import vllm
        from vllm.v1.metrics import loggers, stats
    except Exception as exc:
        return Row(
            "interface",
            False,
            f"vLLM cannot be imported here ({type(exc).__name__}: {exc})",
            "run the doctor with the Python that runs vLLM (its venv or image)",
        )
    problems = interface_problems(stats, loggers)
    version = str(getattr(vllm, "__version__", "?"))
    shape = detect_shape(stats, loggers, version)
    try:
        sent, got = round_trip()
    except Exception as exc:
        problems.append(f"record() round trip failed: {type(exc).__name__}: {exc}")
    else:
        if (wrong := round_trip_problem(sent, got)) is not None:
            problems.append(wrong)
    return interface_row(version, problems, shape)
