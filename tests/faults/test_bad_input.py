"""record() fed garbage through the real plugin: it never raises, every reading it cannot use
is counted as rejected (in the report: rejected_input), and good events still count exactly."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.faults.vllm_stats import iteration, plugin
from vllm_ledger.read.report import build_report


class _NoTimestamp:
    num_generation_tokens = 1


def _with(ts: float, **attrs: Any) -> Any:
    it = iteration(ts, prompt=10, gen=1)
    for k, v in attrs.items():
        setattr(it, k, v)
    return it


def _bad_inputs(now: float) -> list[Any]:
    return [
        object(),
        "iteration stats",
        42,
        _NoTimestamp(),
        _with(now, iteration_timestamp=None),
        _with(now, iteration_timestamp=-5.0),
        _with(now, iteration_timestamp=float("inf")),
        _with(now, iteration_timestamp=float("nan")),
        _with(now, iteration_timestamp=1e12),
        _with(now, iteration_timestamp=int(now)),  # vLLM stamps a float
        _with(now, prompt_token_stats=None),
        _with(now, num_generation_tokens=-1),
        _with(now, num_generation_tokens=2**80),
        _with(now, num_generation_tokens=1 << 40),
        _with(now, num_generation_tokens=1.5),
        _with(now, num_generation_tokens=True),
        _with(now, num_generation_tokens=None),
        _with(now, finished_requests=None),
        _with(now, finished_requests=[None]),
        iteration(now, prompt=10, gen=1, finished=((3, -1.0),)),
        iteration(now, prompt=10, gen=1, finished=((3, float("nan")),)),
        iteration(now, prompt=10, gen=1, finished=((3, float("inf")),)),
        iteration(now, prompt=10, gen=1, finished=((-3, 0.5),)),
        iteration(now, prompt=10, gen=1, finished=((True, 0.5),)),
        iteration(now, prompt=10, gen=1, finished=((3, True),)),
        iteration(now, prompt=10, gen=1, finished=((3.0, 0.5),)),
        iteration(now, prompt=10, gen=1, finished=((3, 1e7),)),
        iteration(now, prompt=10, gen=1, finished=((3, 0.5), (1 << 40, 0.5))),
        _with_prompt(now, total=-10),
        _with_prompt(now, cached_tokens=-1),
        _with_prompt(now, total=2**63),
    ]


def _with_prompt(ts: float, **attrs: Any) -> Any:
    it = iteration(ts, prompt=10, gen=1)
    for k, v in attrs.items():
        setattr(it.prompt_token_stats, k, v)
    return it


def test_garbage_never_raises_and_is_counted(ledger_env: Path) -> None:
    p = plugin()
    assert p.recorder is not None
    now = time.time() - 3
    bad = _bad_inputs(now)
    for b in bad:
        p.record(None, b, engine_idx=0)
    # Garbage in the arguments the plugin does not read: the reading still counts.
    p.record(object(), iteration(now, prompt=5, gen=2), mm_cache_stats=object(), engine_idx=0)
    # An engine index that is not one: the reading is rejected, never put under engine 0.
    p.record(None, iteration(now, prompt=7, gen=7), engine_idx="x")  # type: ignore[arg-type]
    # None is what vLLM passes for a scheduler-only call: nothing to count, not a reject.
    p.record(None, None, engine_idx=0)
    # Huge numbers, up to what one second of one engine can hold (10^8 tokens), are kept
    # exactly; one more token in that second is refused by the recorder and counted.
    big = 10**8 - 5
    p.record(None, iteration(now, prompt=big, cached=big, gen=big, finished=((big, 9e6),)))
    p.record(None, iteration(now, prompt=1, gen=1))
    # A finished request is read and checked on the recorder's thread (off vLLM's loop): the
    # ten readings with a bad one (a None among them) are rejected there, every other one in
    # record() itself.
    assert p.faults_total == len(bad) + 1 - 10
    p.shutdown()
    assert p.recorder.rejected_total == len(bad) + 2
    at = time.time() + 1
    total = build_report([ledger_env], at_ts=at, clock=lambda: at).window("total")
    assert total.input_tokens == 5 + big
    assert total.output_tokens == 2 + big
    assert total.cached_tokens == big
    assert (total.requests, total.decode_tokens) == (1, big - 1)
    assert total.decode_seconds == 9e6
    assert total.problems["rejected_input"] == len(bad) + 2
    assert total.complete is False
    assert min(v for v in (total.input_tokens, total.output_tokens, total.uncovered_seconds)) >= 0
