"""doctor/interface.py, pure: vLLM's stats classes and logger base judged against what the
plugin reads, on stand-ins shaped as vLLM 0.32's (the real classes, and a real doctor process,
are tests/test_doctor.py's); the round trip's verdict; the row."""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

from vllm_ledger.doctor.interface import (
    FIX,
    interface_problems,
    interface_row,
    round_trip_problem,
)


@dataclass
class PromptTokenStats:
    total: int = 0
    cached_tokens: int = 0


@dataclass
class IterationStats:
    iteration_timestamp: float = 0.0
    num_generation_tokens: int = 0
    finished_requests: list[Any] = field(default_factory=list)
    prompt_token_stats: PromptTokenStats = field(default_factory=PromptTokenStats)


@dataclass
class FinishedRequestStats:
    num_generation_tokens: int = 0
    decode_time: float = 0.0


class AggregateStatLoggerBase:
    def __init__(self, vllm_config: Any, engine_indexes: Any = None) -> None:
        pass

    def record(
        self,
        scheduler_stats: Any,
        iteration_stats: Any,
        mm_cache_stats: Any = None,
        engine_idx: int = 0,
    ) -> None:
        pass


def _vllm(**changes: Any) -> tuple[Any, Any]:
    """A stats module and a loggers module, with ``changes`` to their classes."""
    classes: dict[str, Any] = {
        "IterationStats": IterationStats,
        "FinishedRequestStats": FinishedRequestStats,
        "AggregateStatLoggerBase": AggregateStatLoggerBase,
        **changes,
    }
    base = classes.pop("AggregateStatLoggerBase")
    loggers = types.SimpleNamespace(**({} if base is None else {"AggregateStatLoggerBase": base}))
    return types.SimpleNamespace(**{k: v for k, v in classes.items() if v is not None}), loggers


def test_the_shape_the_plugin_reads_has_no_problem() -> None:
    assert interface_problems(*_vllm()) == []


def test_a_missing_class_is_named() -> None:
    assert interface_problems(*_vllm(FinishedRequestStats=None, AggregateStatLoggerBase=None)) == [
        "vLLM has no FinishedRequestStats",
        "vLLM has no AggregateStatLoggerBase",
    ]


def test_a_field_removed_or_retyped_is_named() -> None:
    @dataclass
    class Finished:
        num_generation_tokens: int = 0

    @dataclass
    class Iteration(IterationStats):
        num_generation_tokens: float = 0.0  # type: ignore[assignment]

    assert interface_problems(*_vllm(FinishedRequestStats=Finished, IterationStats=Iteration)) == [
        "IterationStats.num_generation_tokens is float, not int",
        "FinishedRequestStats has no field decode_time",
    ]

    @dataclass
    class Prompt:
        total: int = 0

    @dataclass
    class NoCached(IterationStats):
        prompt_token_stats: Prompt = field(default_factory=Prompt)  # type: ignore[assignment]

    assert interface_problems(*_vllm(IterationStats=NoCached)) == ["Prompt has no cached_tokens"]


def test_a_changed_signature_is_named() -> None:
    class Swapped(AggregateStatLoggerBase):
        def record(self, iteration_stats, scheduler_stats, engine_idx=0):  # type: ignore[override]
            pass

    class NewDefault(AggregateStatLoggerBase):
        def record(self, scheduler_stats, iteration_stats, mm_cache_stats=None, engine_idx=1):
            pass

    class Built(AggregateStatLoggerBase):
        def __init__(self, config: Any) -> None:
            pass

    assert interface_problems(*_vllm(AggregateStatLoggerBase=Swapped)) == [
        "AggregateStatLoggerBase.record takes (iteration_stats, scheduler_stats, engine_idx), "
        "not (scheduler_stats, iteration_stats, mm_cache_stats, engine_idx)"
    ]
    assert interface_problems(*_vllm(AggregateStatLoggerBase=NewDefault)) == [
        "AggregateStatLoggerBase.record's defaults changed"
    ]
    assert interface_problems(*_vllm(AggregateStatLoggerBase=Built)) == [
        "AggregateStatLoggerBase is built with (config), not (vllm_config, engine_indexes)"
    ]


def test_the_round_trip_names_each_figure_read_back_wrong() -> None:
    sent = {"input_tokens": 7, "output_tokens": 4, "requests": 1}
    assert round_trip_problem(sent, dict(sent)) is None
    assert round_trip_problem(sent, {**sent, "output_tokens": 0, "requests": 2}) == (
        "record() round trip read back output_tokens 0 (sent 4), requests 2 (sent 1)"
    )


def test_the_row_passes_without_problems_and_says_what_to_do_with_them() -> None:
    row = interface_row("0.32.0", [])
    assert (row.check, row.passed, row.fix) == ("interface", True, "")
    assert row.checked.startswith("vLLM 0.32.0: the 8 stats fields the plugin reads are there")
    row = interface_row("0.34.0", ["vLLM has no IterationStats", "record() round trip failed"])
    assert not row.passed and row.fix == FIX
    assert row.checked == "vLLM 0.34.0: vLLM has no IterationStats; record() round trip failed"
