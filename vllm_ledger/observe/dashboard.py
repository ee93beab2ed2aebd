"""The Grafana dashboard: three rows from the write-up (now, experience, headroom) and a ledger row.

Pure: ``dashboard(datasource_uid)`` returns the dashboard JSON model (schemaVersion 39, which
Grafana 10.3 to 11 load as is). Every target queries metric names the pinned vLLM 0.32 really
exports, DCGM's, or the ledger exporter's. The hardware panels read DCGM and fall back, per GPU
UUID, to the exporter's NVML gauges, so a host without DCGM still gets the hardware row.
"""

from __future__ import annotations

from typing import Any

from vllm_ledger.observe.alerts import GPU_MEMORY_FRACTION

SCHEMA_VERSION = 39
DASHBOARD_UID = "vllm-ledger"
DASHBOARD_TITLE = "vLLM and its ledger"
GRID_WIDTH = 24

TTFT = "vllm:time_to_first_token_seconds_bucket"
TPOT = "vllm:inter_token_latency_seconds_bucket"  # vLLM 0.32's time per output token


def _quantile(q: float, bucket: str) -> str:
    return f"histogram_quantile({q}, sum by (le) (rate({bucket}[5m])))"


def _gpu(dcgm: str, nvml: str) -> str:
    return f"{dcgm} or on (UUID) {nvml}"


# (title, kind, unit, [(expr, legend)], width)
Panel = tuple[str, str, str, list[tuple[str, str]], int]

ROWS: list[tuple[str, list[Panel]]] = [
    (
        "Now: how is it doing",
        [
            (
                "Requests running and waiting",
                "timeseries",
                "short",
                [
                    ("sum(vllm:num_requests_running)", "running"),
                    ("sum(vllm:num_requests_waiting)", "waiting"),
                ],
                8,
            ),
            (
                "Tokens per second",
                "timeseries",
                "short",
                [
                    ("sum(rate(vllm:generation_tokens_total[1m]))", "generated"),
                    ("sum(rate(vllm:prompt_tokens_total[1m]))", "prompt"),
                ],
                8,
            ),
            (
                "Finished requests ending in error or abort",
                "timeseries",
                "percentunit",
                [
                    (
                        'sum(rate(vllm:request_success_total{finished_reason="error"}[5m]))'
                        " / sum(rate(vllm:request_success_total[5m]))",
                        "error",
                    ),
                    (
                        'sum(rate(vllm:request_success_total{finished_reason="abort"}[5m]))'
                        " / sum(rate(vllm:request_success_total[5m]))",
                        "aborted",
                    ),
                ],
                8,
            ),
        ],
    ),
    (
        "Experience: how fast it feels",
        [
            (
                "Time to first token",
                "timeseries",
                "s",
                [
                    (_quantile(0.5, TTFT), "P50"),
                    (_quantile(0.99, TTFT), "P99"),
                ],
                12,
            ),
            (
                "Time per output token",
                "timeseries",
                "s",
                [
                    (_quantile(0.5, TPOT), "P50"),
                    (_quantile(0.99, TPOT), "P99"),
                ],
                12,
            ),
        ],
    ),
    (
        "Headroom: how much is left",
        [
            (
                "KV cache usage",
                "timeseries",
                "percentunit",
                [
                    (
                        "max by (instance, engine) (vllm:kv_cache_usage_perc)",
                        "{{instance}} engine {{engine}}",
                    ),
                ],
                6,
            ),
            (
                "GPU utilisation",
                "timeseries",
                "percent",
                [
                    (
                        _gpu("DCGM_FI_DEV_GPU_UTIL", "vllm_ledger_gpu_utilization_percent"),
                        "{{instance}} GPU {{gpu}}",
                    ),
                ],
                6,
            ),
            (
                "GPU memory used",
                "timeseries",
                "percentunit",
                [
                    (GPU_MEMORY_FRACTION, "{{instance}} GPU {{gpu}}"),
                ],
                6,
            ),
            (
                "GPU temperature and power",
                "timeseries",
                "short",
                [
                    (
                        _gpu("DCGM_FI_DEV_GPU_TEMP", "vllm_ledger_gpu_temperature_celsius"),
                        "{{instance}} GPU {{gpu}} °C",
                    ),
                    (
                        _gpu("DCGM_FI_DEV_POWER_USAGE", "vllm_ledger_gpu_power_watts"),
                        "{{instance}} GPU {{gpu}} W",
                    ),
                ],
                6,
            ),
        ],
    ),
    (
        "Ledger: what was served, restart-proof",
        [
            (
                "Tokens today",
                "stat",
                "short",
                [
                    ('sum(vllm_ledger_window_input_tokens{window="today"})', "input"),
                    ('sum(vllm_ledger_window_output_tokens{window="today"})', "output"),
                    ('sum(vllm_ledger_window_cached_tokens{window="today"})', "cached"),
                ],
                6,
            ),
            (
                "Tokens, last 7 days",
                "stat",
                "short",
                [
                    ('sum(vllm_ledger_window_input_tokens{window="7d"})', "input"),
                    ('sum(vllm_ledger_window_output_tokens{window="7d"})', "output"),
                    ('sum(vllm_ledger_window_cached_tokens{window="7d"})', "cached"),
                ],
                6,
            ),
            (
                "Prefix-cache hit rate",
                "stat",
                "percentunit",
                [
                    (
                        'sum by (window) (vllm_ledger_window_cached_tokens{window=~"today|7d"})'
                        ' / sum by (window) (vllm_ledger_window_input_tokens{window=~"today|7d"})',
                        "{{window}}",
                    ),
                ],
                4,
            ),
            (
                "Uncovered time",
                "stat",
                "s",
                [
                    (
                        "max by (window) "
                        '(vllm_ledger_window_uncovered_seconds{window=~"today|7d|total"})',
                        "{{window}}",
                    ),
                ],
                4,
            ),
            (
                "Ledger writers",
                "stat",
                "short",
                [
                    ("sum(vllm_ledger_writers_alive)", "alive"),
                    ("sum(vllm_ledger_writers_expected)", "expected"),
                ],
                4,
            ),
            (
                "Tokens per second from the ledger",
                "timeseries",
                "short",
                [
                    ("sum(rate(vllm_ledger_generation_tokens_total[5m]))", "generated"),
                    ("sum(rate(vllm_ledger_prompt_tokens_total[5m]))", "prompt"),
                    ("sum(rate(vllm_ledger_cached_tokens_total[5m]))", "cached"),
                ],
                12,
            ),
            (
                "Windows complete (1 = every second vouched for)",
                "stat",
                "short",
                [
                    ("min by (window) (vllm_ledger_window_complete)", "{{window}}"),
                ],
                12,
            ),
        ],
    ),
]

PANEL_HEIGHT = {"timeseries": 8, "stat": 5}


def _datasource(uid: str) -> dict[str, str]:
    return {"type": "prometheus", "uid": uid}


def _panel(
    pid: int,
    title: str,
    kind: str,
    unit: str,
    targets: list[tuple[str, str]],
    grid: dict[str, int],
    uid: str,
) -> dict[str, Any]:
    panel: dict[str, Any] = {
        "id": pid,
        "type": kind,
        "title": title,
        "datasource": _datasource(uid),
        "gridPos": grid,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {},
        "targets": [
            {
                "refId": chr(ord("A") + i),
                "datasource": _datasource(uid),
                "expr": expr,
                "legendFormat": legend,
                "range": True,
            }
            for i, (expr, legend) in enumerate(targets)
        ],
    }
    if kind == "stat":
        panel["options"] = {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "textMode": "value_and_name",
            "colorMode": "value",
        }
    else:
        panel["options"] = {
            "legend": {"displayMode": "list", "placement": "bottom"},
            "tooltip": {"mode": "multi"},
        }
    return panel


def dashboard(datasource_uid: str) -> dict[str, Any]:
    """The dashboard JSON model; every panel and target points at ``datasource_uid``."""
    panels: list[dict[str, Any]] = []
    y = 0
    pid = 1
    for row_title, row_panels in ROWS:
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
        for title, kind, unit, targets, width in row_panels:
            if x + width > GRID_WIDTH:
                y += line_height
                x, line_height = 0, 0
            h = PANEL_HEIGHT[kind]
            panels.append(
                _panel(
                    pid,
                    title,
                    kind,
                    unit,
                    targets,
                    {"h": h, "w": width, "x": x, "y": y},
                    datasource_uid,
                )
            )
            pid += 1
            x += width
            line_height = max(line_height, h)
        y += line_height
    return {
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
        "templating": {"list": []},
        "annotations": {"list": []},
        "links": [],
        "panels": panels,
    }


def expressions(model: dict[str, Any]) -> list[str]:
    """Every PromQL expression in a dashboard model, in panel order."""
    return [t["expr"] for p in model["panels"] for t in p.get("targets", [])]


__all__ = ["DASHBOARD_UID", "SCHEMA_VERSION", "dashboard", "expressions"]
