"""The Grafana dashboard: three rows (now, experience, headroom), the GPUs, the ledger per
instance, whose tokens (by key and adapter, and what is not attributed) and the fleet, filtered
by template variables and importable through Grafana's import form.

Pure: ``dashboard()`` returns the dashboard JSON model (schemaVersion 39, which Grafana 10.3 to
11 load as is). Every target queries metric names the pinned vLLM 0.32 really exports, DCGM's,
or the ledger exporter's.

Variables (every panel is filtered by them):

- ``$datasource``: the Prometheus to read. Its default is ``${DS_PROMETHEUS}``, the data source
  picked in Grafana's import form (``__inputs``); a provisioned copy, where nothing replaces
  it, falls back to the default Prometheus data source.
- ``$host``: the host part of every vLLM target (``up{job="vllm"}``'s ``instance``), for the
  GPU panels (a GPU belongs to a host, not to one vLLM), the host row and the fleet row; the
  targets beside vLLM carry their vLLM host's name (``observe/stack.py``).
- ``$instance``: the vLLM instances on the chosen hosts, as Prometheus's ``instance`` label of
  the vLLM targets and as the ledger's ``ledger_instance`` (HOST:PORT as ``report --by
  instance`` prints it). The two are one value when the vLLM targets are named as the ledger
  names them (``observability --vllm ADDRESS=NAME``).
- ``$model_name``: the served model names, vLLM's and the ledger's ``model_name``.
- ``$max_model_len``: a text box holding the ``--max-model-len`` the instances were launched
  with (vLLM exports it nowhere), drawn against the mean tokens per request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vllm_ledger.names import (
    DCGM_FB_FREE,
    DCGM_FB_USED,
    DCGM_GPU_TEMP,
    DCGM_GPU_UTIL,
    DCGM_POWER_USAGE,
    LEDGER_ATTRIBUTED_GENERATION_TOKENS_TOTAL,
    LEDGER_ATTRIBUTED_PROMPT_TOKENS_TOTAL,
    LEDGER_CACHED_TOKENS_TOTAL,
    LEDGER_GENERATION_TOKENS_TOTAL,
    LEDGER_GPU_MEMORY_TOTAL_BYTES,
    LEDGER_GPU_MEMORY_USED_BYTES,
    LEDGER_GPU_POWER_WATTS,
    LEDGER_GPU_TEMPERATURE_CELSIUS,
    LEDGER_GPU_UTILIZATION_PERCENT,
    LEDGER_INSTANCE_LABEL,
    LEDGER_NOT_ATTRIBUTED_GENERATION_TOKENS_TOTAL,
    LEDGER_NOT_ATTRIBUTED_PROMPT_TOKENS_TOTAL,
    LEDGER_PROMPT_TOKENS_TOTAL,
    LEDGER_REQUESTS_ABORTED_TOTAL,
    LEDGER_RUN_START,
    LEDGER_WINDOW_ATTRIBUTED_INPUT_TOKENS,
    LEDGER_WINDOW_ATTRIBUTED_OUTPUT_TOKENS,
    LEDGER_WINDOW_CACHED_TOKENS,
    LEDGER_WINDOW_COMPLETE,
    LEDGER_WINDOW_INPUT_TOKENS,
    LEDGER_WINDOW_OUTPUT_TOKENS,
    LEDGER_WINDOW_REQUESTS,
    LEDGER_WINDOW_UNCOVERED_SECONDS,
    LEDGER_WRITERS_ALIVE,
    LEDGER_WRITERS_EXPECTED,
    MODEL_NAME_LABEL,
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
from vllm_ledger.observe.alerts import (
    CADVISOR_JOB,
    CONTAINER_CPU_USAGE_SECONDS_TOTAL,
    CONTAINER_MEMORY_WORKING_SET_BYTES,
    DEFAULT_LEDGER_MOUNTPOINT,
    EXPORTER_JOB,
    NODE_CPU_SECONDS_TOTAL,
    NODE_JOB,
    NODE_NETWORK_RECEIVE_BYTES_TOTAL,
    NODE_NETWORK_TRANSMIT_BYTES_TOTAL,
    VLLM_JOB,
    disk_free_fraction,
    http_error_fraction,
    memory_available_fraction,
)

SCHEMA_VERSION = 39
DASHBOARD_UID = "vllm-ledger"
DASHBOARD_TITLE = "vLLM and its ledger"
GRID_WIDTH = 24
GRAFANA_MIN_VERSION = "10.3.0"  # the first Grafana whose schemaVersion is 39

DS_INPUT = "DS_PROMETHEUS"  # the import form's data-source input
DS_VAR = "${datasource}"  # every panel and target reads the $datasource variable
DEFAULT_MAX_MODEL_LEN = 32768  # a common setting; set it to the instances' flag

TTFT = f"{VLLM_TIME_TO_FIRST_TOKEN_SECONDS}_bucket"
# The TPOT panel: vLLM's inter-token latency, one observation per gap between streamed tokens
# (names.py says how it differs from the per-request time per output token ramp reads).
TPOT = f"{VLLM_INTER_TOKEN_LATENCY_SECONDS}_bucket"

# Label matchers: vLLM's series by Prometheus's `instance`, the ledger's by `ledger_instance`,
# GPU series (DCGM's or the exporter's NVML gauges) by the host of their target.
V = 'instance=~"$instance"'
VM = 'instance=~"$instance",model_name=~"$model_name"'
L = f'{LEDGER_INSTANCE_LABEL}=~"$instance"'
LM = f'{LEDGER_INSTANCE_LABEL}=~"$instance",{MODEL_NAME_LABEL}=~"$model_name"'
G = 'instance=~"$host:[0-9]+"'
HOST_OF_LEDGER = '"host", "$1", "ledger_instance", "(.+):[0-9]+"'

# Uptime: vLLM's API process start; where vLLM has none (its multiprocess /metrics, with
# --api-server-count > 1, has no process_* series), the start of the ledger's open run.
UPTIME = (
    f'time() - max by (instance) ({PROCESS_START_TIME_SECONDS}{{job="{VLLM_JOB}",{V}}})'
    " or time() - max by (instance) (label_replace("
    f'{LEDGER_RUN_START}{{{L}}}, "instance", "$1", "{LEDGER_INSTANCE_LABEL}", "(.*)"))'
)

TOKENS_PER_S = "suffix: tokens/s"  # Grafana's custom unit: the number, a space, tokens/s


def _quantiles(bucket: str) -> list[tuple[str, str]]:
    def q(x: float, by: str) -> str:
        return f"histogram_quantile({x}, sum by ({by}) (rate({bucket}{{{VM}}}[5m])))"

    return [
        (q(0.5, "instance, model_name, le"), "{{instance}} {{model_name}} P50"),
        (q(0.99, "instance, model_name, le"), "{{instance}} {{model_name}} P99"),
        (q(0.99, "le"), "all selected P99"),
    ]


def _gpu(dcgm: str, nvml: str) -> str:
    return f"{dcgm}{{{G}}} or on (UUID) {nvml}{{{G}}}"


def _mean_per_request(hist: str) -> str:
    by = "sum by (instance, model_name)"
    return f"{by} (rate({hist}_sum{{{VM}}}[5m])) / {by} (rate({hist}_count{{{VM}}}[5m]))"


def _window_sum(figure: str, window: str) -> str:
    return f'sum({figure}{{window="{window}",{LM}}})'


def _rate_by(label: str, counter: str) -> str:
    """A counter of the exporter's whose tokens per second, summed by ``label``, per host."""
    return f"sum by ({label}) (rate({counter}{{{G}}}[5m]))"


def _today_by_key(gauge: str) -> str:
    return f'sum by (key) ({gauge}{{window="today",by="key",{G}}})'


def _per_host(expr: str) -> str:
    return f"label_replace({expr}, {HOST_OF_LEDGER})"


@dataclass(frozen=True)
class Panel:
    title: str
    kind: str  # timeseries, stat, bargauge
    unit: str  # a Grafana unit id
    targets: Sequence[tuple[str, str]]  # (expr, legend)
    width: int
    description: str = ""
    up_down: bool = False  # map 0/1 to down/up


ROWS: list[tuple[str, list[Panel]]] = [
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
    (
        "GPUs: is the card healthy (per host)",
        [
            Panel(
                "GPU utilisation",
                "timeseries",
                "percent",
                [
                    (
                        _gpu(DCGM_GPU_UTIL, LEDGER_GPU_UTILIZATION_PERCENT),
                        "{{instance}} GPU {{gpu}}",
                    )
                ],
                6,
            ),
            Panel(
                "GPU memory used",
                "timeseries",
                "percentunit",
                [
                    (
                        f"{DCGM_FB_USED}{{{G}}} / ({DCGM_FB_USED}{{{G}}} + "
                        f"{DCGM_FB_FREE}{{{G}}}) or on (UUID) "
                        f"{LEDGER_GPU_MEMORY_USED_BYTES}{{{G}}} / "
                        f"{LEDGER_GPU_MEMORY_TOTAL_BYTES}{{{G}}}",
                        "{{instance}} GPU {{gpu}}",
                    )
                ],
                6,
            ),
            Panel(
                "GPU temperature",
                "timeseries",
                "celsius",
                [
                    (
                        _gpu(DCGM_GPU_TEMP, LEDGER_GPU_TEMPERATURE_CELSIUS),
                        "{{instance}} GPU {{gpu}}",
                    )
                ],
                6,
            ),
            Panel(
                "GPU power",
                "timeseries",
                "watt",
                [
                    (
                        _gpu(DCGM_POWER_USAGE, LEDGER_GPU_POWER_WATTS),
                        "{{instance}} GPU {{gpu}}",
                    )
                ],
                6,
            ),
        ],
    ),
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

PANEL_HEIGHT = {"timeseries": 8, "stat": 5, "bargauge": 8}
PANEL_VERSIONS = {"timeseries": "", "stat": "", "bargauge": ""}  # core panels: Grafana's version

UP_DOWN = [
    {
        "type": "value",
        "options": {
            "0": {"text": "down", "color": "red", "index": 0},
            "1": {"text": "up", "color": "green", "index": 1},
        },
    }
]


def _datasource() -> dict[str, str]:
    return {"type": "prometheus", "uid": DS_VAR}


def _panel(pid: int, p: Panel, grid: dict[str, int]) -> dict[str, Any]:
    defaults: dict[str, Any] = {"unit": p.unit}
    if p.up_down:
        defaults["mappings"] = UP_DOWN
    panel: dict[str, Any] = {
        "id": pid,
        "type": p.kind,
        "title": p.title,
        "description": p.description,
        "datasource": _datasource(),
        "gridPos": grid,
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "targets": [
            {
                "refId": chr(ord("A") + i),
                "datasource": _datasource(),
                "expr": expr,
                "legendFormat": legend,
                "range": p.kind == "timeseries",
                "instant": p.kind != "timeseries",
            }
            for i, (expr, legend) in enumerate(p.targets)
        ],
    }
    if p.kind == "stat":
        panel["options"] = {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "textMode": "value_and_name",
            "colorMode": "value",
        }
    elif p.kind == "bargauge":
        panel["options"] = {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "orientation": "horizontal",
            "displayMode": "basic",
        }
    else:
        panel["options"] = {
            "legend": {"displayMode": "list", "placement": "bottom"},
            "tooltip": {"mode": "multi"},
        }
    return panel


def _query_variable(
    name: str, query: str, regex: str = "", all_value: str | None = ".*"
) -> dict[str, Any]:
    var: dict[str, Any] = {
        "name": name,
        "label": name,
        "type": "query",
        "datasource": _datasource(),
        "query": query,
        "definition": query,
        "regex": regex,
        "refresh": 2,  # on time range change: new instances appear
        "multi": True,
        "includeAll": True,
        "current": {},
        "options": [],
        "sort": 1,
        "hide": 0,
    }
    if all_value is not None:
        var["allValue"] = all_value
    return var


# The vLLM instances scraped on the chosen hosts, and those the ledger knows (a vLLM that is
# down, or not scraped, still has its ledger): one `instance` label for both.
INSTANCE_QUERY = (
    f'query_result(count by (instance) ({VLLM_NUM_REQUESTS_RUNNING}{{instance=~"$host:[0-9]+"}})'
    " or count by (instance) (label_replace("
    f'{LEDGER_WRITERS_EXPECTED}{{{LEDGER_INSTANCE_LABEL}=~"$host:[0-9]+"}},'
    f' "instance", "$1", "{LEDGER_INSTANCE_LABEL}", "(.*)")))'
)
MODEL_QUERY = (
    f'label_values({{__name__=~"{VLLM_NUM_REQUESTS_RUNNING}|{LEDGER_WINDOW_REQUESTS}"}}, '
    f"{MODEL_NAME_LABEL})"
)
# The vLLM hosts alone: the targets beside vLLM (exporter, DCGM, node exporter, cAdvisor) carry
# their vLLM host's name (observe/stack.py relabels them), so a host is one value for them all.
HOST_QUERY = f'label_values(up{{job="{VLLM_JOB}"}}, instance)'


def variables(max_model_len: int = DEFAULT_MAX_MODEL_LEN) -> list[dict[str, Any]]:
    return [
        {
            "name": "datasource",
            "label": "Prometheus",
            "type": "datasource",
            "query": "prometheus",
            "regex": "",
            "current": {"selected": False, "text": "Prometheus", "value": "${" + DS_INPUT + "}"},
            "options": [],
            "refresh": 1,
            "hide": 0,
            "multi": False,
            "includeAll": False,
        },
        _query_variable("host", HOST_QUERY, regex="/^(.+):[0-9]+$/"),
        # No allValue: "All" is the instances of the chosen hosts, not every instance.
        _query_variable("instance", INSTANCE_QUERY, regex='/instance="([^"]+)"/', all_value=None),
        _query_variable("model_name", MODEL_QUERY),
        {
            "name": "max_model_len",
            "label": "--max-model-len",
            "type": "textbox",
            "query": str(max_model_len),
            "current": {"selected": False, "text": str(max_model_len), "value": str(max_model_len)},
            "options": [
                {"selected": True, "text": str(max_model_len), "value": str(max_model_len)}
            ],
            "hide": 0,
        },
    ]


def _requires(kinds: set[str]) -> list[dict[str, str]]:
    req = [
        {"type": "grafana", "id": "grafana", "name": "Grafana", "version": GRAFANA_MIN_VERSION},
        {"type": "datasource", "id": "prometheus", "name": "Prometheus", "version": "1.0.0"},
    ]
    names = {"timeseries": "Time series", "stat": "Stat", "bargauge": "Bar gauge"}
    for k in sorted(kinds):
        req.append({"type": "panel", "id": k, "name": names[k], "version": PANEL_VERSIONS[k]})
    return req


HOST_ROW_AFTER = 4  # the host row follows the GPUs' row
VLLM_CONTAINERS = 'name=~"vllm.*"'  # docker's container name: the host file's vllm-PORT or own


def host_row(ledger_mountpoint: str = DEFAULT_LEDGER_MOUNTPOINT) -> tuple[str, list[Panel]]:
    """The host and its containers, per host: the node exporter's CPU, memory, the ledger's
    disk and the network; cAdvisor's CPU and memory of the vLLM containers."""
    mem = memory_available_fraction(G)
    nic = f'job="{NODE_JOB}",device!="lo",{G}'  # every interface but loopback
    return (
        "Host: CPU, memory, the ledger's disk, network (per host)",
        [
            Panel(
                "Host CPU busy",
                "timeseries",
                "percentunit",
                [
                    (
                        "1 - avg by (instance) "
                        f'(rate({NODE_CPU_SECONDS_TOTAL}{{job="{NODE_JOB}",mode="idle",{G}}}[5m]))',
                        "{{instance}}",
                    )
                ],
                6,
            ),
            Panel(
                "Host memory available",
                "timeseries",
                "percentunit",
                [(mem, "{{instance}}")],
                6,
                "MemAvailable / MemTotal; HostMemoryPressure trips below its threshold.",
            ),
            Panel(
                "Ledger disk free",
                "timeseries",
                "percentunit",
                [(disk_free_fraction(ledger_mountpoint, G), "{{instance}} {{mountpoint}}")],
                6,
                f"The file system at {ledger_mountpoint} (holding the ledger root); "
                "LedgerDiskNearFull trips below its threshold.",
            ),
            Panel(
                "Host network",
                "timeseries",
                "Bps",
                [
                    (
                        "sum by (instance) "
                        f"(rate({NODE_NETWORK_RECEIVE_BYTES_TOTAL}{{{nic}}}[5m]))",
                        "{{instance}} in",
                    ),
                    (
                        "sum by (instance) "
                        f"(rate({NODE_NETWORK_TRANSMIT_BYTES_TOTAL}{{{nic}}}[5m]))",
                        "{{instance}} out",
                    ),
                ],
                6,
            ),
            Panel(
                "vLLM container CPU",
                "timeseries",
                "none",
                [
                    (
                        "sum by (instance, name) "
                        f'(rate({CONTAINER_CPU_USAGE_SECONDS_TOTAL}{{job="{CADVISOR_JOB}",{VLLM_CONTAINERS},{G}}}[5m]))',
                        "{{name}}",
                    )
                ],
                12,
                "Cores in use by each container named vllm* (cAdvisor).",
            ),
            Panel(
                "vLLM container memory",
                "timeseries",
                "bytes",
                [
                    (
                        "sum by (instance, name) "
                        f'({CONTAINER_MEMORY_WORKING_SET_BYTES}{{job="{CADVISOR_JOB}",{VLLM_CONTAINERS},{G}}})',
                        "{{name}}",
                    )
                ],
                12,
                "Working set of each container named vllm* (cAdvisor): what the kernel counts "
                "against a memory limit.",
            ),
        ],
    )


def dashboard(
    max_model_len: int = DEFAULT_MAX_MODEL_LEN,
    *,
    ledger_mountpoint: str = DEFAULT_LEDGER_MOUNTPOINT,
) -> dict[str, Any]:
    """The dashboard JSON model, in Grafana's import format (``__inputs``, ``__requires``);
    ``ledger_mountpoint`` is the file system the host row's disk panel shows."""
    panels: list[dict[str, Any]] = []
    y = 0
    pid = 1
    rows = [*ROWS[:HOST_ROW_AFTER], host_row(ledger_mountpoint), *ROWS[HOST_ROW_AFTER:]]
    for row_title, row_panels in rows:
        panels.append(
            {
                "id": pid,
                "type": "row",
                "title": row_title,
                "collapsed": False,
                "panels": [],
                "gridPos": {"h": 1, "w": GRID_WIDTH, "x": 0, "y": y},
            }
        )
        pid += 1
        y += 1
        x = 0
        line_height = 0
        for p in row_panels:
            if x + p.width > GRID_WIDTH:
                y += line_height
                x, line_height = 0, 0
            h = PANEL_HEIGHT[p.kind]
            panels.append(_panel(pid, p, {"h": h, "w": p.width, "x": x, "y": y}))
            pid += 1
            x += p.width
            line_height = max(line_height, h)
        y += line_height
    return {
        "__inputs": [
            {
                "name": DS_INPUT,
                "label": "Prometheus",
                "description": "the Prometheus that scrapes vLLM, DCGM and the ledger exporter",
                "type": "datasource",
                "pluginId": "prometheus",
                "pluginName": "Prometheus",
            }
        ],
        "__requires": _requires({p.kind for _t, row in rows for p in row}),
        "uid": DASHBOARD_UID,
        "title": DASHBOARD_TITLE,
        "tags": ["vllm", "vllm-ledger"],
        "timezone": "browser",
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "editable": True,
        "graphTooltip": 1,
        "refresh": "30s",
        "time": {"from": "now-1h", "to": "now"},
        "timepicker": {},
        "templating": {"list": variables(max_model_len)},
        "annotations": {"list": []},
        "links": [],
        "panels": panels,
    }


def expressions(model: dict[str, Any]) -> list[str]:
    """Every PromQL expression in a dashboard model, in panel order."""
    return [t["expr"] for p in model["panels"] for t in p.get("targets", [])]


_VAR = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")
_REGEX_SPECIAL = re.compile(r"([\\^$.|?*+()\[\]{}])")


def interpolate(expr: str, values: Mapping[str, Sequence[str] | str]) -> str:
    """``expr`` with each ``$name`` replaced as Grafana does for Prometheus: one value
    regex-escaped, several as ``(a|b)``; a plain string (``.*``, a number) goes in as is."""

    def value(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name not in values:
            return m.group(0)
        v = values[name]
        if isinstance(v, str):
            return v
        escaped = [_REGEX_SPECIAL.sub(r"\\\\\1", s) for s in v]
        return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"

    return _VAR.sub(value, expr)


__all__ = [
    "DASHBOARD_UID",
    "DEFAULT_MAX_MODEL_LEN",
    "SCHEMA_VERSION",
    "dashboard",
    "expressions",
    "interpolate",
    "variables",
]
