"""The serving bench's load (bench/load.py): tokens/s in each quarter of the load, by order of
completion, for the spread within a server."""

from __future__ import annotations

from bench.load import _quarters


def test_tokens_per_second_in_each_quarter_of_the_load() -> None:
    done = [(float(t), 64) for t in range(1, 9)]  # a request of 64 tokens each second
    assert _quarters(0.0, list(reversed(done))) == [64.0, 64.0, 64.0, 64.0]
    slow_end = [*done[:6], (10.0, 64), (12.0, 64)]  # the last quarter: 128 tokens in 6 s
    assert _quarters(0.0, slow_end) == [64.0, 64.0, 64.0, 128 / 6]


def test_fewer_requests_than_quarters_give_one_rate() -> None:
    assert _quarters(0.0, [(2.0, 64), (4.0, 64)]) == [32.0]
