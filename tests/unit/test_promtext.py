"""The Prometheus text parser (promtext.py): samples with their labels, escapes undone, comments,
timestamps and malformed lines skipped; sums over matching labels with NaN left out."""

from __future__ import annotations

import math

from vllm_ledger.promtext import has_metric, parse_labels, parse_samples, sum_metric

TEXT = """# HELP vllm:prompt_tokens_total Prompt tokens.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="a",engine="0"} 100.0
vllm:prompt_tokens_total{model_name="a",engine="1"} 20 1700000000000
vllm:prompt_tokens_total{model_name="b",engine="0"} 3e2
vllm:prompt_tokens_total{model_name="b",engine="1"} NaN
up 1
broken{model_name="a" 5
bad_value{} x
"""


def test_samples_keep_their_labels_and_skip_what_is_not_a_sample() -> None:
    samples = parse_samples(TEXT)
    assert [(n, labels) for n, labels, _v in samples] == [
        ("vllm:prompt_tokens_total", {"model_name": "a", "engine": "0"}),
        ("vllm:prompt_tokens_total", {"model_name": "a", "engine": "1"}),
        ("vllm:prompt_tokens_total", {"model_name": "b", "engine": "0"}),
        ("vllm:prompt_tokens_total", {"model_name": "b", "engine": "1"}),
        ("up", {}),
    ]
    assert [v for _n, _l, v in samples][:3] == [100.0, 20.0, 300.0]
    assert math.isnan(samples[3][2])


def test_labels_are_unescaped_and_a_malformed_set_is_none() -> None:
    assert parse_labels(r'a="x\"y", b="line\nbreak", c="back\\slash",') == {
        "a": 'x"y',
        "b": "line\nbreak",
        "c": "back\\slash",
    }
    assert parse_labels("") == {}
    assert parse_labels('a="x", b') is None


def test_sums_match_labels_and_leave_nan_out() -> None:
    samples = parse_samples(TEXT)
    assert sum_metric(samples, "vllm:prompt_tokens_total") == 420.0
    assert sum_metric(samples, "vllm:prompt_tokens_total", model_name="a") == 120.0
    assert sum_metric(samples, "vllm:prompt_tokens_total", model_name="b") == 300.0
    assert sum_metric(samples, "vllm:prompt_tokens_total", model_name="c") == 0.0
    assert has_metric(samples, "up") and not has_metric(samples, "down")
