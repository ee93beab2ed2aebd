"""The dashboard's rows on the ledger: what each instance served, restart-proof (tokens
today and over 7 days, the prefix-cache hit rate, the writers, the uncovered time), whose
tokens (by key and adapter, and what is not attributed) and the fleet (every host and the
total).
"""

from __future__ import annotations

from vllm_ledger.names import (
    LEDGER_ATTRIBUTED_GENERATION_TOKENS_TOTAL,
    LEDGER_ATTRIBUTED_PROMPT_TOKENS_TOTAL,
    LEDGER_CACHED_TOKENS_TOTAL,
    LEDGER_GENERATION_TOKENS_TOTAL,
    LEDGER_NOT_ATTRIBUTED_GENERATION_TOKENS_TOTAL,
    LEDGER_NOT_ATTRIBUTED_PROMPT_TOKENS_TOTAL,
    LEDGER_PROMPT_TOKENS_TOTAL,
    LEDGER_REQUESTS_ABORTED_TOTAL,
    LEDGER_WINDOW_ATTRIBUTED_INPUT_TOKENS,
    LEDGER_WINDOW_ATTRIBUTED_OUTPUT_TOKENS,
    LEDGER_WINDOW_CACHED_TOKENS,
    LEDGER_WINDOW_COMPLETE,
    LEDGER_WINDOW_INPUT_TOKENS,
    LEDGER_WINDOW_OUTPUT_TOKENS,
    LEDGER_WINDOW_UNCOVERED_SECONDS,
    LEDGER_WRITERS_ALIVE,
    LEDGER_WRITERS_EXPECTED,
)
from vllm_ledger.observe.panels import LM, TOKENS_PER_S, G, L, Panel, Row
from vllm_ledger.observe.signals import EXPORTER_JOB

HOST_OF_LEDGER = '"host", "$1", "ledger_instance", "(.+):[0-9]+"'


def _window_sum(figure: str, window: str) -> str:
    return f'sum({figure}{{window="{window}",{LM}}})'


def _rate_by(label: str, counter: str) -> str:
    """A counter of the exporter's whose tokens per second, summed by ``label``, per host."""
    return f"sum by ({label}) (rate({counter}{{{G}}}[5m]))"


def _today_by_key(gauge: str) -> str:
    return f'sum by (key) ({gauge}{{window="today",by="key",{G}}})'


def _per_host(expr: str) -> str:
    return f"label_replace({expr}, {HOST_OF_LEDGER})"


LEDGER_ROWS: list[Row] = [
    (
        "Ledger: what was served, restart-proof (per instance)",
        [
            Panel(
                "Tokens today",
                "stat",
                "short",
                [
                    (f'sum({LEDGER_WINDOW_INPUT_TOKENS}{{window="today",{LM}}})', "input"),
                    (f'sum({LEDGER_WINDOW_OUTPUT_TOKENS}{{window="today",{LM}}})', "output"),
                    (f'sum({LEDGER_WINDOW_CACHED_TOKENS}{{window="today",{LM}}})', "cached"),
                ],
                6,
            ),
            Panel(
                "Tokens, last 7 days",
                "stat",
                "short",
                [
                    (f'sum({LEDGER_WINDOW_INPUT_TOKENS}{{window="7d",{LM}}})', "input"),
                    (f'sum({LEDGER_WINDOW_OUTPUT_TOKENS}{{window="7d",{LM}}})', "output"),
                    (f'sum({LEDGER_WINDOW_CACHED_TOKENS}{{window="7d",{LM}}})', "cached"),
                ],
                6,
            ),
            Panel(
                "Prefix-cache hit rate",
                "stat",
                "percentunit",
                [
                    (
                        "sum by (window) "
                        f'({LEDGER_WINDOW_CACHED_TOKENS}{{window=~"today|7d",{LM}}})'
                        " / sum by (window) "
                        f'({LEDGER_WINDOW_INPUT_TOKENS}{{window=~"today|7d",{LM}}})',
                        "{{window}}",
                    ),
                ],
                4,
            ),
            Panel(
                "Ledger writers",
                "stat",
                "short",
                [
                    (
                        f"sum by (ledger_instance) ({LEDGER_WRITERS_ALIVE}{{{L}}})",
                        "{{ledger_instance}} alive",
                    ),
                    (
                        f"sum by (ledger_instance) ({LEDGER_WRITERS_EXPECTED}{{{L}}})",
                        "{{ledger_instance}} expected",
                    ),
                ],
                8,
            ),
            Panel(
                "Uncovered time per instance",
                "stat",
                "s",
                [
                    (
                        f"max by (ledger_instance, window) ({LEDGER_WINDOW_UNCOVERED_SECONDS}"
                        f'{{window=~"today|7d|total",{L}}})',
                        "{{ledger_instance}} {{window}}",
                    ),
                ],
                12,
                "Seconds of each window the ledger cannot vouch for: 0 means complete.",
            ),
            Panel(
                "Windows complete per instance (1 = every second vouched for)",
                "stat",
                "short",
                [
                    (
                        f"min by (ledger_instance, window) ({LEDGER_WINDOW_COMPLETE}{{{L}}})",
                        "{{ledger_instance}} {{window}}",
                    ),
                ],
                12,
            ),
            Panel(
                "Tokens per second from the ledger",
                "timeseries",
                TOKENS_PER_S,
                [
                    (
                        "sum by (ledger_instance, model_name) "
                        f"(rate({LEDGER_GENERATION_TOKENS_TOTAL}{{{LM}}}[5m]))",
                        "{{ledger_instance}} {{model_name}} generated",
                    ),
                    (
                        "sum by (ledger_instance, model_name) "
                        f"(rate({LEDGER_PROMPT_TOKENS_TOTAL}{{{LM}}}[5m]))",
                        "{{ledger_instance}} {{model_name}} prompt",
                    ),
                    (
                        f"sum(rate({LEDGER_GENERATION_TOKENS_TOTAL}{{{LM}}}[5m]))",
                        "all selected generated",
                    ),
                    (
                        f"sum(rate({LEDGER_CACHED_TOKENS_TOTAL}{{{LM}}}[5m]))",
                        "all selected cached",
                    ),
                ],
                24,
                "Throughput that survives vLLM restarts (the exporter's counters never go down).",
            ),
        ],
    ),
    (
        "Whose tokens: by key / adapter (per host)",
        [
            Panel(
                "Tokens per second by key",
                "timeseries",
                TOKENS_PER_S,
                [
                    (
                        _rate_by("key", LEDGER_ATTRIBUTED_PROMPT_TOKENS_TOTAL),
                        "{{key}} prompt",
                    ),
                    (
                        _rate_by("key", LEDGER_ATTRIBUTED_GENERATION_TOKENS_TOTAL),
                        "{{key}} generated",
                    ),
                ],
                12,
                "Tokens credited to each API key (an operator's name, or key: and 8 hex of a "
                "keyed hash; never the key) as finished requests, from the exporter's "
                "restart-proof counters. (none): requests without a bearer key; other: keys "
                "past the series bound (docs/observability.md#whose-tokens).",
            ),
            Panel(
                "Tokens per second by adapter",
                "timeseries",
                TOKENS_PER_S,
                [
                    (
                        _rate_by("adapter", LEDGER_ATTRIBUTED_PROMPT_TOKENS_TOTAL),
                        "{{adapter}} prompt",
                    ),
                    (
                        _rate_by("adapter", LEDGER_ATTRIBUTED_GENERATION_TOKENS_TOTAL),
                        "{{adapter}} generated",
                    ),
                ],
                12,
                "Tokens per served model name or LoRA adapter, as each request's body named it.",
            ),
            Panel(
                "Not attributed, by reason",
                "timeseries",
                TOKENS_PER_S,
                [
                    (
                        _rate_by("reason", LEDGER_NOT_ATTRIBUTED_PROMPT_TOKENS_TOTAL),
                        "{{reason}} prompt",
                    ),
                    (
                        _rate_by("reason", LEDGER_NOT_ATTRIBUTED_GENERATION_TOKENS_TOTAL),
                        "{{reason}} generated",
                    ),
                ],
                12,
                "Tokens no key holds: untagged (no tag named the request), ambiguous (a request "
                "id two requests held at once), copies (the prompt again of n > 1 sampling), "
                "aborted (cut streams, requests still running, the rest). docs/attribution.md.",
            ),
            Panel(
                "Requests aborted per second by key",
                "timeseries",
                "reqps",
                [
                    (_rate_by("key", LEDGER_REQUESTS_ABORTED_TOTAL), "{{key}}"),
                ],
                12,
                "Requests that ended without finishing (a client that cut its stream): their "
                "tokens are in 'not attributed, aborted'.",
            ),
            Panel(
                "Input tokens today by key",
                "bargauge",
                "short",
                [
                    (
                        _today_by_key(LEDGER_WINDOW_ATTRIBUTED_INPUT_TOKENS),
                        "{{key}}",
                    ),
                ],
                12,
                "As report --by key says for today, summed over the selected hosts.",
            ),
            Panel(
                "Output tokens today by key",
                "bargauge",
                "short",
                [
                    (
                        _today_by_key(LEDGER_WINDOW_ATTRIBUTED_OUTPUT_TOKENS),
                        "{{key}}",
                    ),
                ],
                12,
            ),
        ],
    ),
    (
        "Fleet: every host and the total",
        [
            Panel(
                "Output tokens today per host",
                "bargauge",
                "short",
                [
                    (
                        "sum by (host) ("
                        + _per_host(f'{LEDGER_WINDOW_OUTPUT_TOKENS}{{window="today",{LM}}}')
                        + ")",
                        "{{host}}",
                    ),
                ],
                8,
            ),
            Panel(
                "Output tokens today per instance and model",
                "bargauge",
                "short",
                [
                    (
                        "sum by (ledger_instance, model_name) "
                        f'({LEDGER_WINDOW_OUTPUT_TOKENS}{{window="today",{LM}}})',
                        "{{ledger_instance}} {{model_name}}",
                    ),
                ],
                8,
            ),
            Panel(
                "Fleet total",
                "stat",
                "short",
                [
                    (_window_sum(LEDGER_WINDOW_INPUT_TOKENS, "today"), "input today"),
                    (_window_sum(LEDGER_WINDOW_OUTPUT_TOKENS, "today"), "output today"),
                    (_window_sum(LEDGER_WINDOW_INPUT_TOKENS, "7d"), "input 7 days"),
                    (_window_sum(LEDGER_WINDOW_OUTPUT_TOKENS, "7d"), "output 7 days"),
                ],
                8,
            ),
            Panel(
                "Instances with today incomplete",
                "stat",
                "short",
                [
                    (
                        "count(min by (ledger_instance) "
                        f'({LEDGER_WINDOW_COMPLETE}{{window="today",{L}}}) == 0) or vector(0)',
                        "incomplete",
                    ),
                ],
                6,
                "0: every selected instance's ledger vouches for every second of today.",
            ),
            Panel(
                "Uncovered time today per host",
                "bargauge",
                "s",
                [
                    (
                        "max by (host) ("
                        + _per_host(f'{LEDGER_WINDOW_UNCOVERED_SECONDS}{{window="today",{L}}}')
                        + ")",
                        "{{host}}",
                    ),
                ],
                9,
            ),
            Panel(
                "Ledger exporters up",
                "stat",
                "none",
                [(f'up{{job="{EXPORTER_JOB}",{G}}}', "{{instance}}")],
                9,
                up_down=True,
            ),
        ],
    ),
]

__all__ = ["LEDGER_ROWS"]
