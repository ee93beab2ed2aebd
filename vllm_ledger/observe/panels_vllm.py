"""The dashboard's rows on vLLM itself (per instance and model): now (up, uptime, requests,
batch, queue, tokens per second, errors), experience (time to first token, time per output
token) and headroom (KV cache, tokens per request against --max-model-len).
"""

from __future__ import annotations

from vllm_ledger.names import (
    LEDGER_INSTANCE_LABEL,
    LEDGER_RUN_START,
    PROCESS_START_TIME_SECONDS,
    VLLM_GENERATION_TOKENS_TOTAL,
    VLLM_INTER_TOKEN_LATENCY_SECONDS,
    VLLM_KV_CACHE_USAGE_PERC,
    VLLM_NUM_REQUESTS_RUNNING,
    VLLM_NUM_REQUESTS_WAITING,
    VLLM_PROMPT_TOKENS_TOTAL,
    VLLM_REQUEST_GENERATION_TOKENS,
    VLLM_REQUEST_PROMPT_TOKENS,
    VLLM_REQUEST_SUCCESS_TOTAL,
    VLLM_TIME_TO_FIRST_TOKEN_SECONDS,
)
from vllm_ledger.observe.panels import TOKENS_PER_S, VM, L, Panel, Row, V
from vllm_ledger.observe.signals import VLLM_JOB, http_error_fraction

TTFT = f"{VLLM_TIME_TO_FIRST_TOKEN_SECONDS}_bucket"
# The TPOT panel: vLLM's inter-token latency, one observation per gap between streamed tokens
# (names.py says how it differs from the per-request time per output token ramp reads).
TPOT = f"{VLLM_INTER_TOKEN_LATENCY_SECONDS}_bucket"


# Uptime: vLLM's API process start; where vLLM has none (its multiprocess /metrics, with
# --api-server-count > 1, has no process_* series), the start of the ledger's open run.
UPTIME = (
    f'time() - max by (instance) ({PROCESS_START_TIME_SECONDS}{{job="{VLLM_JOB}",{V}}})'
    " or time() - max by (instance) (label_replace("
    f'{LEDGER_RUN_START}{{{L}}}, "instance", "$1", "{LEDGER_INSTANCE_LABEL}", "(.*)"))'
)


def _quantiles(bucket: str) -> list[tuple[str, str]]:
    def q(x: float, by: str) -> str:
        return f"histogram_quantile({x}, sum by ({by}) (rate({bucket}{{{VM}}}[5m])))"

    return [
        (q(0.5, "instance, model_name, le"), "{{instance}} {{model_name}} P50"),
        (q(0.99, "instance, model_name, le"), "{{instance}} {{model_name}} P99"),
        (q(0.99, "le"), "all selected P99"),
    ]


def _mean_per_request(hist: str) -> str:
    by = "sum by (instance, model_name)"
    return f"{by} (rate({hist}_sum{{{VM}}}[5m])) / {by} (rate({hist}_count{{{VM}}}[5m]))"


VLLM_ROWS: list[Row] = [
    (
        "Now: how is it doing",
        [
            Panel(
                "vLLM targets up",
                "stat",
                "none",
                [(f'up{{job="{VLLM_JOB}",{V}}}', "{{instance}}")],
                6,
                up_down=True,
            ),
            Panel(
                "Uptime",
                "stat",
                "s",
                [(UPTIME, "{{instance}}")],
                6,
                "Since the API server process started (a restart sets it back to 0); with "
                "--api-server-count above 1 vLLM has no process_* series, and the ledger's "
                "open run says since when the instance runs.",
            ),
            Panel(
                "Request rate",
                "timeseries",
                "reqps",
                [
                    (
                        "sum by (instance, model_name) "
                        f"(rate({VLLM_REQUEST_SUCCESS_TOTAL}{{{VM}}}[1m]))",
                        "{{instance}} {{model_name}}",
                    ),
                    (f"sum(rate({VLLM_REQUEST_SUCCESS_TOTAL}{{{VM}}}[1m]))", "all selected"),
                ],
                12,
                "Finished requests per second, whatever their finished_reason.",
            ),
            Panel(
                "Running batch size (requests running)",
                "timeseries",
                "short",
                [
                    (
                        f"sum by (instance, model_name) ({VLLM_NUM_REQUESTS_RUNNING}{{{VM}}})",
                        "{{instance}} {{model_name}}",
                    ),
                    (f"sum({VLLM_NUM_REQUESTS_RUNNING}{{{VM}}})", "all selected"),
                ],
                12,
            ),
            Panel(
                "Requests waiting",
                "timeseries",
                "short",
                [
                    (
                        f"sum by (instance, model_name) ({VLLM_NUM_REQUESTS_WAITING}{{{VM}}})",
                        "{{instance}} {{model_name}}",
                    ),
                    (f"sum({VLLM_NUM_REQUESTS_WAITING}{{{VM}}})", "all selected"),
                ],
                12,
                "The leading indicator: above 0 for minutes, TTFT climbs next.",
            ),
            Panel(
                "Tokens per second",
                "timeseries",
                TOKENS_PER_S,
                [
                    (
                        "sum by (instance, model_name) "
                        f"(rate({VLLM_GENERATION_TOKENS_TOTAL}{{{VM}}}[1m]))",
                        "{{instance}} {{model_name}} generated",
                    ),
                    (
                        "sum by (instance, model_name) "
                        f"(rate({VLLM_PROMPT_TOKENS_TOTAL}{{{VM}}}[1m]))",
                        "{{instance}} {{model_name}} prompt",
                    ),
                    (
                        f"sum(rate({VLLM_GENERATION_TOKENS_TOTAL}{{{VM}}}[1m]))",
                        "all selected generated",
                    ),
                ],
                12,
            ),
            Panel(
                "Errors",
                "timeseries",
                "percentunit",
                [
                    (
                        "sum by (instance, model_name) "
                        f'(rate({VLLM_REQUEST_SUCCESS_TOTAL}{{{VM},finished_reason="error"}}[5m]))'
                        " / sum by (instance, model_name) "
                        f"(rate({VLLM_REQUEST_SUCCESS_TOTAL}{{{VM}}}[5m]))",
                        "{{instance}} {{model_name}} engine error",
                    ),
                    (
                        "sum by (instance, model_name) "
                        f'(rate({VLLM_REQUEST_SUCCESS_TOTAL}{{{VM},finished_reason="abort"}}[5m]))'
                        " / sum by (instance, model_name) "
                        f"(rate({VLLM_REQUEST_SUCCESS_TOTAL}{{{VM}}}[5m]))",
                        "{{instance}} {{model_name}} aborted",
                    ),
                    (http_error_fraction(V), "{{instance}} HTTP 5xx"),
                ],
                12,
                "Finished requests ending in an engine error or an abort, per model; HTTP "
                "requests answered 5xx, per instance (also those that never reached the engine).",
            ),
        ],
    ),
    (
        "Experience: how fast it feels",
        [
            Panel("Time to first token", "timeseries", "s", _quantiles(TTFT), 12),
            Panel("Time per output token", "timeseries", "s", _quantiles(TPOT), 12),
        ],
    ),
    (
        "Headroom: how much is left",
        [
            Panel(
                "KV cache usage",
                "timeseries",
                "percentunit",
                [
                    (
                        "max by (instance, model_name, engine) "
                        f"({VLLM_KV_CACHE_USAGE_PERC}{{{VM}}})",
                        "{{instance}} {{model_name}} engine {{engine}}",
                    ),
                ],
                8,
            ),
            Panel(
                "Tokens per request against --max-model-len",
                "timeseries",
                "short",
                [
                    (
                        _mean_per_request(VLLM_REQUEST_PROMPT_TOKENS),
                        "{{instance}} {{model_name}} mean prompt",
                    ),
                    (
                        _mean_per_request(VLLM_REQUEST_GENERATION_TOKENS),
                        "{{instance}} {{model_name}} mean output",
                    ),
                    ("vector($max_model_len)", "--max-model-len"),
                ],
                10,
                "Mean prompt and output tokens of the requests finished in the last 5 minutes, "
                "and the --max-model-len set in the dashboard's max_model_len box. A mean far "
                "below it is KV cache reserved for nothing: lower --max-model-len (and raise "
                "--max-num-seqs).",
            ),
            Panel(
                "Mean request's share of --max-model-len",
                "stat",
                "percentunit",
                [
                    (
                        f"({_mean_per_request(VLLM_REQUEST_PROMPT_TOKENS)}"
                        f" + {_mean_per_request(VLLM_REQUEST_GENERATION_TOKENS)})"
                        " / $max_model_len",
                        "{{instance}} {{model_name}}",
                    ),
                ],
                6,
            ),
        ],
    ),
]

__all__ = ["TPOT", "TTFT", "VLLM_ROWS"]
