"""The Grafana dashboard: three rows (now, experience, headroom), the GPUs, the ledger per
instance, whose tokens (by key and adapter, and what is not attributed) and the fleet, filtered
by template variables and importable through Grafana's import form.

Pure: ``dashboard()`` returns the dashboard JSON model (schemaVersion 39, which Grafana 10.3 to
11 load as is). Every target queries metric names the pinned vLLM 0.32 really exports, DCGM's,
or the ledger exporter's. The rows are data (``observe/panels.py``'s ``Panel``), in
``panels_vllm`` (now, experience, headroom), ``panels_host`` (GPUs, host) and ``panels_ledger``
(ledger, whose tokens, fleet); this module lays them out on Grafana's grid and adds the
variables.

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
from typing import Any

from vllm_ledger.names import (
    LEDGER_INSTANCE_LABEL,
    LEDGER_WINDOW_REQUESTS,
    LEDGER_WRITERS_EXPECTED,
    MODEL_NAME_LABEL,
    VLLM_NUM_REQUESTS_RUNNING,
)
from vllm_ledger.observe.panels import Panel, Row
from vllm_ledger.observe.panels_host import GPU_ROW, host_row
from vllm_ledger.observe.panels_ledger import LEDGER_ROWS
from vllm_ledger.observe.panels_vllm import VLLM_ROWS
from vllm_ledger.observe.signals import DEFAULT_LEDGER_MOUNTPOINT, VLLM_JOB

SCHEMA_VERSION = 39
DASHBOARD_UID = "vllm-ledger"
DASHBOARD_TITLE = "vLLM and its ledger"
GRID_WIDTH = 24
GRAFANA_MIN_VERSION = "10.3.0"  # the first Grafana whose schemaVersion is 39

DS_INPUT = "DS_PROMETHEUS"  # the import form's data-source input
DS_VAR = "${datasource}"  # every panel and target reads the $datasource variable
DEFAULT_MAX_MODEL_LEN = 32768  # a common setting; set it to the instances' flag

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
    rows: list[Row] = [*VLLM_ROWS, GPU_ROW, host_row(ledger_mountpoint), *LEDGER_ROWS]
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
