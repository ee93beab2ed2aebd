"""Which shape of vLLM's (unstable) stats classes this process has: found by feature detection.

vLLM declares ``IterationStats``, its prompt token stats and ``FinishedRequestStats`` unstable.
The adapter (``write/plugin.py``) does not compare version strings: once, when vLLM builds the
logger, ``detect_shape`` looks at the classes themselves and says where each number the plugin
reads lives (a field renamed or moved to a name in the candidates below is followed) or what it
could not find (then the plugin records no tokens and says so in one log line).

Pure over the modules passed in (vLLM's ``vllm.v1.metrics.stats`` and ``.loggers``); standard
library only. ``doctor``'s interface check reports the same shape (docs/compatibility.md).
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any

# Where each number may live: the first path found on a fresh IterationStats (or among
# FinishedRequestStats' fields) wins. The first of each is the layout of vLLM 0.30 to 0.33.
PROMPT_PATHS = ("prompt_token_stats.total", "num_prompt_tokens")
CACHED_PATHS = ("prompt_token_stats.cached_tokens", "num_cached_tokens")
GENERATION_PATHS = ("num_generation_tokens",)
TIMESTAMP_PATHS = ("iteration_timestamp",)
FINISHED_PATHS = ("finished_requests",)
FINISHED_GENERATION_FIELDS = ("num_generation_tokens", "num_output_tokens")
DECODE_FIELDS = ("decode_time", "decode_time_s")
# What the attribution join reads of a finished request (``write/tags.py``): without them the
# ledger counts as before and credits nobody (every finished request is ``untagged``).
FINISHED_ID_FIELDS = ("request_id",)
FINISHED_PROMPT_FIELDS = ("num_prompt_tokens",)
FINISHED_CACHED_FIELDS = ("num_cached_tokens",)
RECORD_PARAMS = ("scheduler_stats", "iteration_stats", "mm_cache_stats", "engine_idx")
INIT_PARAMS = ("vllm_config", "engine_indexes")


@dataclass(frozen=True)
class StatsShape:
    """Where this vLLM keeps what the plugin reads; ``missing`` non-empty: record nothing."""

    vllm_version: str
    timestamp: str = TIMESTAMP_PATHS[0]
    prompt: str = PROMPT_PATHS[0]
    cached: str = CACHED_PATHS[0]
    generation: str = GENERATION_PATHS[0]
    finished: str = FINISHED_PATHS[0]
    finished_generation: str = FINISHED_GENERATION_FIELDS[0]
    decode: str = DECODE_FIELDS[0]
    finished_id: str = FINISHED_ID_FIELDS[0]
    finished_prompt: str = FINISHED_PROMPT_FIELDS[0]
    finished_cached: str = FINISHED_CACHED_FIELDS[0]
    missing: tuple[str, ...] = ()
    # What the attribution join lacks in this vLLM (tokens are still counted, nobody credited).
    join_missing: tuple[str, ...] = ()

    @property
    def joins(self) -> bool:
        """Whether finished requests can be joined to the middleware's tags."""
        return self.supported and not self.join_missing

    @property
    def supported(self) -> bool:
        return not self.missing

    @property
    def standard(self) -> bool:
        """The layout of vLLM 0.30 to 0.33 (every first candidate)."""
        return self.supported and dataclasses.replace(self, join_missing=()) == StatsShape(
            self.vllm_version
        )

    def describe(self) -> str:
        """One line: the shape found, or what is missing."""
        if self.missing:
            return f"vLLM {self.vllm_version}: " + "; ".join(self.missing)
        layout = "the 0.30-0.33 layout" if self.standard else "a changed layout"
        join = (
            f"; no attribution join ({'; '.join(self.join_missing)})"
            if self.join_missing
            else f"; joined by .{self.finished_id}"
        )
        return (
            f"vLLM {self.vllm_version}, {layout}: IterationStats.{self.timestamp}, "
            f".{self.prompt}, .{self.cached}, .{self.generation}, "
            f".{self.finished}[*].{self.finished_generation} / .{self.decode}{join}"
        )


def _get(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _has(obj: Any, path: str) -> bool:
    try:
        _get(obj, path)
    except AttributeError:
        return False
    return True


def _first(obj: Any, paths: tuple[str, ...], want: tuple[type, ...]) -> str | None:
    for path in paths:
        if _has(obj, path) and type(_get(obj, path)) in want:
            return path
    return None


def _params(fn: Any) -> tuple[str, ...] | None:
    try:
        return tuple(inspect.signature(fn).parameters)[1:]
    except (TypeError, ValueError):
        return None


def _required_after(fn: Any, n: int) -> bool:
    """Whether ``fn`` requires a parameter after its first ``n`` (besides ``self``)."""
    params = list(inspect.signature(fn).parameters.values())[1 + n :]
    kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return any(p.default is inspect.Parameter.empty and p.kind not in kinds for p in params)


def detect_shape(stats: Any, loggers: Any, vllm_version: str) -> StatsShape:
    """The shape of ``stats``' classes and ``loggers``' base, as the plugin reads them.

    Never raises: whatever cannot be looked at is named in ``missing``."""
    missing: list[str] = []
    found: dict[str, Any] = {}
    it_cls = getattr(stats, "IterationStats", None)
    fin_cls = getattr(stats, "FinishedRequestStats", None)
    base = getattr(loggers, "AggregateStatLoggerBase", None)
    if base is not None:
        init = _params(base.__init__)
        if init is None or init[:2] != INIT_PARAMS or _required_after(base.__init__, 2):
            missing.append(
                f"AggregateStatLoggerBase is built with ({', '.join(init or ('?',))}), "
                f"not ({', '.join(INIT_PARAMS)}): its constructor changed"
            )
        record = _params(base.record)
        if record is None or record[:4] != RECORD_PARAMS:
            missing.append(
                f"AggregateStatLoggerBase.record takes ({', '.join(record or ('?',))}), "
                f"not ({', '.join(RECORD_PARAMS)})"
            )
    else:
        missing.append("vLLM has no AggregateStatLoggerBase")
    if it_cls is None:
        missing.append("vLLM has no IterationStats")
    else:
        try:
            it = it_cls()
        except Exception as exc:
            missing.append(f"IterationStats() cannot be built ({type(exc).__name__}: {exc})")
        else:
            for key, paths, want in (
                ("timestamp", TIMESTAMP_PATHS, (float,)),
                ("prompt", PROMPT_PATHS, (int,)),
                ("cached", CACHED_PATHS, (int,)),
                ("generation", GENERATION_PATHS, (int,)),
                ("finished", FINISHED_PATHS, (list, tuple)),
            ):
                path = _first(it, paths, want)
                if path is None:
                    names = " or ".join(paths)
                    missing.append(f"IterationStats has no {names} ({want[0].__name__})")
                else:
                    found[key] = path
    if fin_cls is None:
        missing.append("vLLM has no FinishedRequestStats")
    elif not dataclasses.is_dataclass(fin_cls):
        missing.append("FinishedRequestStats is no longer a dataclass: its constructor changed")
    else:
        fields = {f.name for f in dataclasses.fields(fin_cls)}
        for key, candidates in (
            ("finished_generation", FINISHED_GENERATION_FIELDS),
            ("decode", DECODE_FIELDS),
        ):
            name = next((n for n in candidates if n in fields), None)
            if name is None:
                missing.append(f"FinishedRequestStats has no field {' or '.join(candidates)}")
            else:
                found[key] = name
        join_missing = []
        joined: tuple[tuple[str, tuple[str, ...]], ...] = (
            ("finished_id", FINISHED_ID_FIELDS),
            ("finished_prompt", FINISHED_PROMPT_FIELDS),
            ("finished_cached", FINISHED_CACHED_FIELDS),
        )
        for key, options in joined:
            name = next((n for n in options if n in fields), None)
            if name is None:
                join_missing.append(f"FinishedRequestStats has no {' or '.join(options)}")
            else:
                found[key] = name
        found["join_missing"] = tuple(join_missing)
    if missing:
        return StatsShape(vllm_version, missing=tuple(missing))
    return dataclasses.replace(StatsShape(vllm_version), **found)
