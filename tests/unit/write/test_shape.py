"""Feature detection of vLLM's stats classes, over stand-in modules (no vLLM imported): the
0.30-0.33 layout, a field renamed or moved and followed, and each thing missing named."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from vllm_ledger.write.shape import StatsShape, detect_shape


@dataclass
class PromptTokenStats:
    total: int = 0
    cached_tokens: int = 0


@dataclass
class IterationStats:
    iteration_timestamp: float = 0.0
    num_generation_tokens: int = 0
    prompt_token_stats: PromptTokenStats = field(default_factory=PromptTokenStats)
    finished_requests: list[Any] = field(default_factory=list)


@dataclass
class FinishedRequestStats:
    request_id: str = ""
    num_prompt_tokens: int = 0
    num_cached_tokens: int = 0
    num_generation_tokens: int = 0
    decode_time: float = 0.0


class AggregateStatLoggerBase:
    def __init__(self, vllm_config: Any, engine_indexes: Any = None) -> None: ...

    def record(
        self,
        scheduler_stats: Any,
        iteration_stats: Any,
        mm_cache_stats: Any = None,
        engine_idx: int = 0,
    ) -> None: ...


class NeedsArgs:
    def __init__(self, engine: int) -> None: ...


LOGGERS = SimpleNamespace(AggregateStatLoggerBase=AggregateStatLoggerBase)


def _stats(**changed: Any) -> SimpleNamespace:
    classes = {"IterationStats": IterationStats, "FinishedRequestStats": FinishedRequestStats}
    return SimpleNamespace(**{**classes, **changed})


def test_the_standard_layout_is_every_first_candidate() -> None:
    shape = detect_shape(_stats(), LOGGERS, "0.32.0")
    assert shape == StatsShape("0.32.0")
    assert shape.supported and shape.standard and shape.joins
    assert shape.describe() == (
        "vLLM 0.32.0, the 0.30-0.33 layout: IterationStats.iteration_timestamp, "
        ".prompt_token_stats.total, .prompt_token_stats.cached_tokens, .num_generation_tokens, "
        ".finished_requests[*].num_generation_tokens / .decode_time; joined by .request_id"
    )


def test_a_renamed_and_a_moved_field_are_followed() -> None:
    @dataclass
    class FlatIteration:
        iteration_timestamp: float = 0.0
        num_generation_tokens: int = 0
        num_prompt_tokens: int = 0
        num_cached_tokens: int = 0
        finished_requests: tuple[Any, ...] = ()

    @dataclass
    class Renamed:
        num_output_tokens: int = 0
        decode_time_s: float = 0.0

    shape = detect_shape(
        _stats(IterationStats=FlatIteration, FinishedRequestStats=Renamed), LOGGERS, "0.40.0"
    )
    assert (shape.prompt, shape.cached, shape.finished_generation, shape.decode) == (
        "num_prompt_tokens",
        "num_cached_tokens",
        "num_output_tokens",
        "decode_time_s",
    )
    assert shape.supported and not shape.standard and not shape.joins
    assert shape.join_missing == (
        "FinishedRequestStats has no request_id",
        "FinishedRequestStats has no num_prompt_tokens",
        "FinishedRequestStats has no num_cached_tokens",
    )
    assert shape.describe().startswith("vLLM 0.40.0, a changed layout: ")
    assert shape.describe().endswith(
        "; no attribution join (FinishedRequestStats has no request_id; "
        "FinishedRequestStats has no num_prompt_tokens; "
        "FinishedRequestStats has no num_cached_tokens)"
    )


def test_a_field_of_the_wrong_type_or_gone_is_missing() -> None:
    @dataclass
    class IntTimestamp(IterationStats):
        iteration_timestamp: int = 0

    shape = detect_shape(_stats(IterationStats=IntTimestamp), LOGGERS, "0.41.0")
    assert shape.missing == ("IterationStats has no iteration_timestamp (float)",)
    assert not shape.supported and not shape.joins and not shape.standard
    assert shape.describe() == "vLLM 0.41.0: IterationStats has no iteration_timestamp (float)"
    no_decode = dataclasses.make_dataclass("F", [("num_generation_tokens", int, 0)])
    assert detect_shape(_stats(FinishedRequestStats=no_decode), LOGGERS, "x").missing == (
        "FinishedRequestStats has no field decode_time or decode_time_s",
    )


def test_classes_gone_or_built_otherwise_are_named_and_nothing_raises() -> None:
    class NotADataclass:
        pass

    shape = detect_shape(
        _stats(IterationStats=NeedsArgs, FinishedRequestStats=NotADataclass),
        SimpleNamespace(),
        "0.50.0",
    )
    assert shape.missing == (
        "vLLM has no AggregateStatLoggerBase",
        "IterationStats() cannot be built (TypeError: NeedsArgs.__init__() missing 1 required "
        "positional argument: 'engine')",
        "FinishedRequestStats is no longer a dataclass: its constructor changed",
    )
    gone = detect_shape(SimpleNamespace(), LOGGERS, "0.50.0").missing
    assert gone == ("vLLM has no IterationStats", "vLLM has no FinishedRequestStats")


def test_a_changed_logger_base_is_named() -> None:
    class Base:
        def __init__(self, vllm_config: Any, engine_indexes: Any, more: int) -> None: ...

        def record(self, iteration_stats: Any) -> None: ...

    assert detect_shape(_stats(), SimpleNamespace(AggregateStatLoggerBase=Base), "1.0").missing == (
        "AggregateStatLoggerBase is built with (vllm_config, engine_indexes, more), not "
        "(vllm_config, engine_indexes): its constructor changed",
        "AggregateStatLoggerBase.record takes (iteration_stats), not "
        "(scheduler_stats, iteration_stats, mm_cache_stats, engine_idx)",
    )
