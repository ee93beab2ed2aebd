"""Every metric name the project reads or serves, and the thresholds more than one part uses.

One place for each: vLLM's own series (the dashboard, the alerts, ``advise``, ``baseline``,
``ramp`` and ``verify`` read them), DCGM's, the ledger exporter's (``observe/exporter.py``
serves them; the dashboard, the alerts, ``fleet``, ``advise`` and ``cost`` read them back), the
labels they carry, and the numbers two parts must agree on. docs/observability.md lists vLLM's
names against the older ones; docs/fleet.md has the exporter's table.

Counters are named as ``/metrics`` exposes them (``..._total``); histograms by their base name,
to which a query adds ``_bucket``, ``_sum`` or ``_count``. Standard library only: nothing here
imports the rest of the project.
"""

from __future__ import annotations

# ---- vLLM's own series ---------------------------------------------------------------------------
# Checked against vLLM 0.32 (the 0.32 release family: vllm/v1/metrics/loggers.py, and a real
# 0.32.0 /metrics in tests/data); tests/unit/test_names.py reads the installed vLLM's source.

VLLM_PROMPT_TOKENS_TOTAL = "vllm:prompt_tokens_total"  # vLLM 0.32: counter, per engine
VLLM_GENERATION_TOKENS_TOTAL = "vllm:generation_tokens_total"  # vLLM 0.32: counter
VLLM_PROMPT_TOKENS_CACHED_TOTAL = "vllm:prompt_tokens_cached_total"  # vLLM 0.32: counter
VLLM_REQUEST_SUCCESS_TOTAL = "vllm:request_success_total"  # vLLM 0.32: by finished_reason
VLLM_NUM_REQUESTS_RUNNING = "vllm:num_requests_running"  # vLLM 0.32: gauge
VLLM_NUM_REQUESTS_WAITING = "vllm:num_requests_waiting"  # vLLM 0.32: gauge
VLLM_KV_CACHE_USAGE_PERC = "vllm:kv_cache_usage_perc"  # vLLM 0.32: gauge, a fraction 0..1
VLLM_TIME_TO_FIRST_TOKEN_SECONDS = "vllm:time_to_first_token_seconds"  # vLLM 0.32: histogram
# Two different "time per output token" histograms (vLLM 0.32): the inter-token latency is one
# observation per gap between two streamed tokens (what older releases called
# ``vllm:time_per_output_token_seconds``: the dashboard's TPOT panel); the request time per
# output token is one observation per finished request, its decode time over its tokens after
# the first (``ramp``'s TPOT: vLLM's mean per request over a step).
VLLM_INTER_TOKEN_LATENCY_SECONDS = "vllm:inter_token_latency_seconds"  # vLLM 0.32
VLLM_REQUEST_TIME_PER_OUTPUT_TOKEN_SECONDS = "vllm:request_time_per_output_token_seconds"
VLLM_REQUEST_PROMPT_TOKENS = "vllm:request_prompt_tokens"  # vLLM 0.32: histogram per request
VLLM_REQUEST_GENERATION_TOKENS = "vllm:request_generation_tokens"  # vLLM 0.32: histogram
# The KV-cache gauge's name in vLLM releases before 0.32's metrics (older guides use it); 0.32
# serves no such series. Read only where the 0.32 name has no data (advise, baseline).
VLLM_GPU_CACHE_USAGE_PERC_OLD = "vllm:gpu_cache_usage_perc"
# Where KV-cache usage is read from, in order: the vLLM 0.32 name first.
KV_CACHE_USAGE_METRICS: tuple[str, ...] = (VLLM_KV_CACHE_USAGE_PERC, VLLM_GPU_CACHE_USAGE_PERC_OLD)

# vLLM's API server serves these beside its own vllm:* (vLLM 0.32's /metrics): the HTTP
# instrumentator's requests (status grouped as 2xx/5xx) and prometheus_client's process start.
HTTP_REQUESTS_TOTAL = "http_requests_total"
PROCESS_START_TIME_SECONDS = "process_start_time_seconds"

# vLLM's labels (vLLM 0.32); ``model_name`` is the ledger exporter's too.
MODEL_NAME_LABEL = "model_name"
ENGINE_LABEL = "engine"
FINISHED_REASON_LABEL = "finished_reason"

# ---- DCGM's fields (dcgm-exporter 3.3, the image the generated stack runs) -----------------------

DCGM_GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"  # percent
DCGM_FB_USED = "DCGM_FI_DEV_FB_USED"  # MiB
DCGM_FB_FREE = "DCGM_FI_DEV_FB_FREE"  # MiB
DCGM_GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"  # degrees Celsius
DCGM_POWER_USAGE = "DCGM_FI_DEV_POWER_USAGE"  # watts
DCGM_POWER_MGMT_LIMIT = "DCGM_FI_DEV_POWER_MGMT_LIMIT"  # watts
DCGM_ENFORCED_POWER_LIMIT = "DCGM_FI_DEV_ENFORCED_POWER_LIMIT"  # watts
# A GPU's labels as DCGM names them; the ledger exporter's NVML gauges carry the same, so a query
# can prefer DCGM's series per GPU (``or on (UUID)``) and fall back to the exporter's.
GPU_INDEX_LABEL = "gpu"
GPU_UUID_LABEL = "UUID"
GPU_MODEL_LABEL = "modelName"
GPU_LABELS: tuple[str, ...] = (GPU_INDEX_LABEL, GPU_UUID_LABEL, GPU_MODEL_LABEL)

# ---- the ledger exporter's own series (docs/fleet.md) --------------------------------------------

EXPORTER_PREFIX = "vllm_ledger"  # every series below starts with it and "_"

# Labels: the instance as ``report --by instance`` names it (HOST:PORT; Prometheus's own
# ``instance`` stays the scrape target), the window, a coverage problem code, a writer state,
# why a file's counts are held.
LEDGER_INSTANCE_LABEL = "ledger_instance"
WINDOW_LABEL = "window"
PROBLEM_LABEL = "problem"
STATE_LABEL = "state"
REASON_LABEL = "reason"

LEDGER_REPORT_OK = "vllm_ledger_report_ok"
LEDGER_REPORT_SECONDS = "vllm_ledger_report_seconds"
# Restart-proof counters, per (ledger_instance, model_name).
LEDGER_PROMPT_TOKENS_TOTAL = "vllm_ledger_prompt_tokens_total"
LEDGER_GENERATION_TOKENS_TOTAL = "vllm_ledger_generation_tokens_total"
LEDGER_CACHED_TOKENS_TOTAL = "vllm_ledger_cached_tokens_total"
LEDGER_REQUESTS_TOTAL = "vllm_ledger_requests_total"
LEDGER_DECODE_TOKENS_TOTAL = "vllm_ledger_decode_tokens_total"
LEDGER_DECODE_SECONDS_TOTAL = "vllm_ledger_decode_seconds_total"
# What the counters hold for files no longer read in full.
LEDGER_RUNS_VANISHED = "vllm_ledger_runs_vanished"
LEDGER_FILES_HELD = "vllm_ledger_files_held"
# Window figures, per (window, ledger_instance, model_name).
LEDGER_WINDOW_INPUT_TOKENS = "vllm_ledger_window_input_tokens"
LEDGER_WINDOW_OUTPUT_TOKENS = "vllm_ledger_window_output_tokens"
LEDGER_WINDOW_CACHED_TOKENS = "vllm_ledger_window_cached_tokens"
LEDGER_WINDOW_REQUESTS = "vllm_ledger_window_requests"
LEDGER_WINDOW_DECODE_TOKENS = "vllm_ledger_window_decode_tokens"
LEDGER_WINDOW_DECODE_SECONDS = "vllm_ledger_window_decode_seconds"
LEDGER_WINDOW_HIT_RATIO = "vllm_ledger_window_hit_ratio"
LEDGER_WINDOW_AVG_SPEED = "vllm_ledger_window_avg_speed_tokens_per_second"
LEDGER_WINDOW_GEN_SPEED = "vllm_ledger_window_gen_speed_tokens_per_second"
# Window coverage, per (window, ledger_instance) and for the whole root (no ledger_instance).
LEDGER_WINDOW_UNCOVERED_SECONDS = "vllm_ledger_window_uncovered_seconds"
LEDGER_WINDOW_WALL_SECONDS = "vllm_ledger_window_wall_seconds"
LEDGER_WINDOW_COMPLETE = "vllm_ledger_window_complete"
LEDGER_WINDOW_PROBLEMS = "vllm_ledger_window_problems"
# Writers, per ledger_instance.
LEDGER_WRITERS_EXPECTED = "vllm_ledger_writers_expected"
LEDGER_WRITERS_ALIVE = "vllm_ledger_writers_alive"
LEDGER_WRITERS = "vllm_ledger_writers"
# When the instance's open run started (its first writer's first proof; no series once it
# closed): the dashboard's Uptime where vLLM has no process_* series (--api-server-count > 1).
LEDGER_RUN_START = "vllm_ledger_run_start_timestamp_seconds"
LEDGER_RUNS = "vllm_ledger_runs"
LEDGER_FILES_UNREADABLE = "vllm_ledger_files_unreadable"
# NVML gauges, per GPU (GPU_LABELS), for hosts without DCGM.
LEDGER_GPUS = "vllm_ledger_gpus"
LEDGER_GPU_POWER_WATTS = "vllm_ledger_gpu_power_watts"
LEDGER_GPU_UTILIZATION_PERCENT = "vllm_ledger_gpu_utilization_percent"
LEDGER_GPU_MEMORY_USED_BYTES = "vllm_ledger_gpu_memory_used_bytes"
LEDGER_GPU_MEMORY_TOTAL_BYTES = "vllm_ledger_gpu_memory_total_bytes"
LEDGER_GPU_TEMPERATURE_CELSIUS = "vllm_ledger_gpu_temperature_celsius"
# Whose tokens (docs/attribution.md, docs/observability.md#whose-tokens): restart-proof counters
# per label set of ``ATTRIBUTION_LABELS`` (``exporter --attribution-labels``: key and adapter by
# default), at most ``exporter --attribution-series`` sets, the rest under ``OTHER_VALUE``.
LEDGER_ATTRIBUTED_PROMPT_TOKENS_TOTAL = "vllm_ledger_attributed_prompt_tokens_total"
LEDGER_ATTRIBUTED_GENERATION_TOKENS_TOTAL = "vllm_ledger_attributed_generation_tokens_total"
LEDGER_ATTRIBUTED_CACHED_TOKENS_TOTAL = "vllm_ledger_attributed_cached_tokens_total"
LEDGER_ATTRIBUTED_REQUESTS_TOTAL = "vllm_ledger_attributed_requests_total"
# Requests that ended without finishing (a cut stream), per label set: their tokens are not
# attributed (reason ``aborted``).
LEDGER_REQUESTS_ABORTED_TOTAL = "vllm_ledger_requests_aborted_total"
# What no label set holds, per ``reason`` (``NOT_ATTRIBUTED_REASONS``).
LEDGER_NOT_ATTRIBUTED_PROMPT_TOKENS_TOTAL = "vllm_ledger_not_attributed_prompt_tokens_total"
LEDGER_NOT_ATTRIBUTED_GENERATION_TOKENS_TOTAL = "vllm_ledger_not_attributed_generation_tokens_total"
LEDGER_NOT_ATTRIBUTED_CACHED_TOKENS_TOTAL = "vllm_ledger_not_attributed_cached_tokens_total"
LEDGER_NOT_ATTRIBUTED_REQUESTS_TOTAL = "vllm_ledger_not_attributed_requests_total"
# Requests the attribution middleware could not tag because of a fault of its own.
LEDGER_ATTRIBUTION_FAULTS_TOTAL = "vllm_ledger_attribution_faults_total"
# Label sets served under OTHER_VALUE because the series bound was reached (a gauge).
LEDGER_ATTRIBUTION_SETS_FOLDED = "vllm_ledger_attribution_label_sets_folded"
# Window figures by one label (``by``: key, adapter, ...; the value in the label of that name),
# at most ``--attribution-series`` values per window and label, the rest under OTHER_VALUE;
# and what is not attributed per window and reason. ``fleet --by key`` sums them.
LEDGER_WINDOW_ATTRIBUTED_INPUT_TOKENS = "vllm_ledger_window_attributed_input_tokens"
LEDGER_WINDOW_ATTRIBUTED_OUTPUT_TOKENS = "vllm_ledger_window_attributed_output_tokens"
LEDGER_WINDOW_ATTRIBUTED_CACHED_TOKENS = "vllm_ledger_window_attributed_cached_tokens"
LEDGER_WINDOW_ATTRIBUTED_REQUESTS = "vllm_ledger_window_attributed_requests"
LEDGER_WINDOW_NOT_ATTRIBUTED_INPUT_TOKENS = "vllm_ledger_window_not_attributed_input_tokens"
LEDGER_WINDOW_NOT_ATTRIBUTED_OUTPUT_TOKENS = "vllm_ledger_window_not_attributed_output_tokens"
LEDGER_WINDOW_NOT_ATTRIBUTED_CACHED_TOKENS = "vllm_ledger_window_not_attributed_cached_tokens"
LEDGER_WINDOW_NOT_ATTRIBUTED_REQUESTS = "vllm_ledger_window_not_attributed_requests"
LEDGER_WINDOW_REQUESTS_ABORTED = "vllm_ledger_window_requests_aborted"
# Their labels: one per attribution dimension (as ``report --by`` names it), and ``by``.
KEY_LABEL = "key"
ADAPTER_LABEL = "adapter"
USER_LABEL = "user"
TENANT_LABEL = "tenant"
BY_LABEL = "by"
ATTRIBUTION_LABELS: tuple[str, ...] = (KEY_LABEL, ADAPTER_LABEL, USER_LABEL, TENANT_LABEL)
# The label sets served by default: a user (or tenant) label can hold one value per end user,
# a series each (cardinality), so it is served only when asked for.
DEFAULT_ATTRIBUTION_LABELS: tuple[str, ...] = (KEY_LABEL, ADAPTER_LABEL)
DEFAULT_ATTRIBUTION_SERIES = 100
NOT_ATTRIBUTED_REASONS: tuple[str, ...] = ("untagged", "ambiguous", "copies", "aborted")
OTHER_VALUE = "other"  # values folded past a bound (the writer's per hour, the exporter's)
NONE_VALUE = "(none)"  # a request that named none (no bearer key, no user, ...)

# Budgets (docs/budgets.md, ``exporter --budgets FILE``): each budget of the file judged as the
# enforcer judges it, over its period so far (a day or calendar month in the budgets' zone), per
# (budget, by, the label named by ``by``, period, figure): used (tokens, or money for a cost
# budget), the limit, their ratio, the soft and hard thresholds (fractions of the limit), the
# projection to the period's end, the period's end, and 1 where the hard level is enforced.
# ``observability --budgets FILE`` writes one rule per budget and level on the fraction.
LEDGER_BUDGET_USED = "vllm_ledger_budget_used"
LEDGER_BUDGET_LIMIT = "vllm_ledger_budget_limit"
LEDGER_BUDGET_FRACTION = "vllm_ledger_budget_fraction"
LEDGER_BUDGET_SOFT_FRACTION = "vllm_ledger_budget_soft_fraction"
LEDGER_BUDGET_HARD_FRACTION = "vllm_ledger_budget_hard_fraction"
LEDGER_BUDGET_PROJECTED = "vllm_ledger_budget_projected"
LEDGER_BUDGET_PERIOD_END = "vllm_ledger_budget_period_end_timestamp_seconds"
LEDGER_BUDGET_ENFORCED = "vllm_ledger_budget_enforced"
# Whether hard budgets hold, per ledger root (``ROOT_LABEL``): the enforcer's over-budget file's
# age, its state (``FILE_STATE_LABEL``: fresh, stale, missing, unusable; one-hot), 1 when it is
# not fresh (the middleware refuses nothing: enforcement fails open), and the labels it lists.
LEDGER_ENFORCER_FILE_AGE = "vllm_ledger_enforcer_file_age_seconds"
LEDGER_ENFORCER_FILE_STATE = "vllm_ledger_enforcer_file_state"
LEDGER_ENFORCER_FAILS_OPEN = "vllm_ledger_enforcer_fails_open"
LEDGER_ENFORCER_OVER = "vllm_ledger_enforcer_over_budget"
BUDGET_LABEL = "budget"  # the budget's name in the budgets file
PERIOD_LABEL = "period"  # day or month
FIGURE_LABEL = "figure"  # input, output, total or cost
ROOT_LABEL = "root"  # a ledger root, as the exporter was given it

# Read by ``advise`` from an exporter that serves it; this exporter's NVML gauges do not.
LEDGER_GPU_POWER_LIMIT_WATTS = "vllm_ledger_gpu_power_limit_watts"

# GPU readings in the order they are tried: DCGM's first, then the exporter's NVML gauges.
GPU_UTILIZATION_METRICS: tuple[str, ...] = (DCGM_GPU_UTIL, LEDGER_GPU_UTILIZATION_PERCENT)
GPU_POWER_METRICS: tuple[str, ...] = (DCGM_POWER_USAGE, LEDGER_GPU_POWER_WATTS)
GPU_POWER_LIMIT_METRICS: tuple[str, ...] = (
    DCGM_POWER_MGMT_LIMIT,
    DCGM_ENFORCED_POWER_LIMIT,
    LEDGER_GPU_POWER_LIMIT_WATTS,
)

# ---- thresholds more than one part uses ----------------------------------------------------------

# KV-cache usage (a fraction of the cache) that counts as full: the KVCacheNearFull alert's
# default (docs/observability.md, docs/runbook.md), advise's kv-capacity rule and ramp's knee
# (docs/cost-and-capacity.md).
KV_CACHE_FULL_FRACTION = 0.90
# TTFT P99 above this is slow: the TTFTP99High alert's default and advise's scheduling-prefill
# rule (docs/observability.md, docs/cost-and-capacity.md).
TTFT_P99_SLOW_SECONDS = 3.0

# Staleness: three ages of three different things, each with its own clock and cadence, so three
# numbers (not one that disagrees with itself).
# - A writer's heartbeat (the end of its last committed span) by the report's clock: a writer
#   commits about once a second, so 30 s of silence means it stopped (docs/ledger.md).
HEARTBEAT_STALE_AFTER_S = 30.0
# - An exporter's newest sample in Prometheus (``fleet``): about 2 x a 30 s scrape interval,
#   plus any remote-write delay (docs/fleet.md; ``fleet --stale-after``).
EXPORTER_SAMPLE_STALE_AFTER_S = 60.0
# - A poll's result by the poller's own receive time (monotonic): three 30 s poll rounds, so
#   one slow or failed round is not yet news (docs/bot-status.md, docs/notifier.md).
POLL_STALE_AFTER_S = 90.0

# The most alerts one Alertmanager webhook post may carry: the generated alertmanager.yml sets
# ``max_alerts`` to it and the notifier refuses a longer body with 413 (docs/notifier.md).
MAX_ALERTS_PER_POST = 100

# The exit status of report, timeline, export, cost and status when nothing matched (an empty
# or mistyped root, a filter or period that matches no ledger): the document is still whole,
# and the bot reads it (docs/cli.md).
EXIT_NOTHING_MATCHED = 3
