"""The adapter against patched copies of vLLM's stats classes (in-process, monkeypatched).

Each case puts a changed class where vLLM keeps it (``vllm.v1.metrics.stats`` or the logger
base), builds the real plugin as vLLM would, and reads the real ledger back: a field renamed or
moved is followed (recorded exactly); a field removed or a constructor changed gives one log
line naming the version and what is missing, records no tokens, counts each iteration as
rejected input and never raises (serving goes on). tests/test_doctor.py runs the same removed
field through a real doctor process (tests/data/vllm_missing_field).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import vllm
import vllm.v1.metrics.stats as stats
from vllm.config import ParallelConfig, VllmConfig
from vllm.v1.engine import FinishReason
from vllm.v1.metrics.loggers import AggregateStatLoggerBase

from tests.faults.vllm_stats import iteration
from vllm_ledger.doctor.base import CollectedLog, quiet_ledger_log
from vllm_ledger.read.report import build_report
from vllm_ledger.write.plugin import LedgerStatLogger, find_shape
from vllm_ledger.write.shape import StatsShape


@pytest.fixture
def ledger_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ledger"
    monkeypatch.setenv("VLLM_LEDGER_DIR", str(root))
    monkeypatch.delenv("VLLM_LEDGER_DISABLE", raising=False)
    monkeypatch.delenv("VLLM_LEDGER_WRITERS", raising=False)
    monkeypatch.setenv("VLLM_LEDGER_RUN_ID", "run-shape")
    monkeypatch.setenv("VLLM_LEDGER_MAINTENANCE", "0")
    return root


@pytest.fixture
def log() -> Iterator[CollectedLog]:
    ledger_log = logging.getLogger("vllm.ledger")
    saved = ledger_log.level
    ledger_log.setLevel(logging.INFO)  # the start line with the shape is an info line
    try:
        with quiet_ledger_log() as collected:
            collected.setLevel(logging.INFO)
            yield collected
    finally:
        ledger_log.setLevel(saved)


def _config() -> VllmConfig:
    return VllmConfig(parallel_config=ParallelConfig(_api_process_count=1, _api_process_rank=0))


def _finished_without(drop: str, rename_to: str | None = None) -> type:
    """vLLM's own FinishedRequestStats with one field removed (or renamed), as
    tests/data/vllm_missing_field builds it."""
    spec: list[Any] = []
    for f in dataclasses.fields(stats.FinishedRequestStats):
        name = f.name
        if name == drop:
            if rename_to is None:
                continue
            name = rename_to
        if f.default is not dataclasses.MISSING:
            spec.append((name, f.type, dataclasses.field(default=f.default)))
        elif f.default_factory is not dataclasses.MISSING:
            spec.append((name, f.type, dataclasses.field(default_factory=f.default_factory)))
        else:
            spec.append((name, f.type))
    cls = dataclasses.make_dataclass("FinishedRequestStats", spec)
    cls.__module__ = stats.FinishedRequestStats.__module__
    return cls


class _FlatIterationStats:
    """IterationStats with the prompt counts moved back onto it (no prompt_token_stats)."""

    def __init__(self) -> None:
        self.iteration_timestamp = time.time()
        self.num_generation_tokens = 0
        self.num_prompt_tokens = 0
        self.num_cached_tokens = 0
        self.finished_requests: list[Any] = []


def _errors(log: CollectedLog) -> list[str]:
    return [line for line in log.lines if "not recording tokens" in line]


def test_this_vllm_has_the_standard_shape() -> None:
    shape = find_shape()
    assert shape == StatsShape(vllm.__version__)
    assert shape.standard and shape.supported
    assert shape.describe().startswith(f"vLLM {vllm.__version__}, the 0.30-0.33 layout: ")


def test_a_renamed_and_a_moved_field_are_followed(
    ledger_env: Path, log: CollectedLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    renamed = _finished_without("decode_time", rename_to="decode_time_s")
    monkeypatch.setattr(stats, "FinishedRequestStats", renamed)
    monkeypatch.setattr(stats, "IterationStats", _FlatIterationStats)
    p = LedgerStatLogger(_config(), [0])
    assert p.shape.supported and not p.shape.standard
    assert (p.shape.prompt, p.shape.cached, p.shape.decode) == (
        "num_prompt_tokens",
        "num_cached_tokens",
        "decode_time_s",
    )
    t0 = time.time() - 5
    it = _FlatIterationStats()
    it.iteration_timestamp = t0
    it.num_prompt_tokens, it.num_cached_tokens, it.num_generation_tokens = 120, 32, 7
    it.finished_requests.append(
        renamed(finish_reason=FinishReason.LENGTH, num_generation_tokens=7, decode_time_s=0.5)
    )
    p.record(None, it, engine_idx=0)
    p.shutdown()
    assert p.faults_total == 0 and _errors(log) == []
    [start] = [line for line in log.lines if "recording to" in line]
    assert "a changed layout: IterationStats.iteration_timestamp, .num_prompt_tokens" in start
    total = build_report([ledger_env]).window("total")
    assert (total.input_tokens, total.cached_tokens, total.output_tokens) == (120, 32, 7)
    assert (total.requests, total.decode_tokens, total.decode_seconds) == (1, 6, 0.5)


def _assert_nothing_recorded(p: LedgerStatLogger, root: Path, log: CollectedLog, n: int) -> None:
    now = time.time()
    for i in range(n):
        # vLLM 0.32's real stats objects, as the engine would hand them over: never raises.
        p.record(None, iteration(now, 10 + i, 0, 3, ((3, 0.1),)), engine_idx=0)
    p.shutdown()
    assert p.recorder is not None and p.recorder.rejected_total == n
    total = build_report([root], at_ts=now + 2).window("total")
    assert (total.input_tokens, total.output_tokens, total.requests) == (0, 0, 0)
    assert total.problems.get("rejected_input") == n
    assert total.complete is False


def test_a_removed_field_logs_one_line_and_records_nothing(
    ledger_env: Path, log: CollectedLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stats, "FinishedRequestStats", _finished_without("decode_time"))
    p = LedgerStatLogger(_config(), [0])
    assert p.shape.missing == ("FinishedRequestStats has no field decode_time or decode_time_s",)
    assert _errors(log) == [
        f"vllm-ledger: not recording tokens: unsupported vLLM stats (vLLM {vllm.__version__}: "
        "FinishedRequestStats has no field decode_time or decode_time_s); serving goes on and "
        f"each iteration is counted as rejected input in {ledger_env} (docs/compatibility.md; "
        "run `vllm-ledger doctor --only interface`)"
    ]
    _assert_nothing_recorded(p, ledger_env, log, 3)
    assert len(_errors(log)) == 1  # one line at start, none per iteration


def test_a_changed_logger_constructor_logs_one_line_and_records_nothing(
    ledger_env: Path, log: CollectedLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    def init(self: Any, vllm_config: Any, engine_indexes: list[int], client_count: int) -> None:
        pass

    monkeypatch.setattr(AggregateStatLoggerBase, "__init__", init)
    # vLLM would now pass the new argument too: the plugin takes it and vLLM starts.
    p = LedgerStatLogger(_config(), [0], 2)
    assert p.shape.missing == (
        "AggregateStatLoggerBase is built with (vllm_config, engine_indexes, client_count), "
        "not (vllm_config, engine_indexes): its constructor changed",
    )
    [line] = _errors(log)
    assert f"(vLLM {vllm.__version__}: AggregateStatLoggerBase is built with" in line
    _assert_nothing_recorded(p, ledger_env, log, 2)


def test_a_stats_class_whose_constructor_changed_logs_one_line(
    ledger_env: Path, log: CollectedLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    class NeedsArgs(stats.IterationStats):
        def __init__(self, step: int) -> None:
            super().__init__()

    monkeypatch.setattr(stats, "IterationStats", NeedsArgs)
    p = LedgerStatLogger(_config(), [0])
    [missing] = p.shape.missing
    assert missing.startswith("IterationStats() cannot be built (TypeError: ")
    assert len(_errors(log)) == 1
    _assert_nothing_recorded(p, ledger_env, log, 1)
