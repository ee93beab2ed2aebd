"""Observability around the ledger: the Prometheus + Grafana stack, alerts, the exporter, NVML.

- ``stack``: the files of the stack (prometheus.yml, alerts.yml, dashboard, compose.yaml) as
  data; ``stack_write`` writes them; ``targets``: the scrape addresses as given
- ``alerts``: the alert rules by set, and their group; ``alert_table`` each rule's definition,
  ``alert_rule`` a rule as data and its thresholds, ``signals`` the job names and PromQL
  signals the rules and the dashboard share
- ``dashboard``: the Grafana dashboard model; ``panels``: a panel as data, and its rows in
  ``panels_vllm``, ``panels_host``, ``panels_ledger``
- ``exporter``: the ledger's Prometheus exporter (its own process)
- ``counters``: the exporter's memory that keeps its counters from ever going down
- ``server``: the exporter's /metrics, a route of the one bounded server (``vllm_ledger.http``)
- ``gpu``: per-GPU readings through NVML

Nothing here is imported by the plugin; prometheus_client, PyYAML and nvidia-ml-py are extras
imported only where used.
"""

from vllm_ledger.observe.alert_rule import AlertRule, Thresholds
from vllm_ledger.observe.alerts import alert_rules
from vllm_ledger.observe.dashboard import dashboard
from vllm_ledger.observe.stack import StackSpec
from vllm_ledger.observe.stack_write import documents, write_stack

__all__ = [
    "AlertRule",
    "StackSpec",
    "Thresholds",
    "alert_rules",
    "dashboard",
    "documents",
    "write_stack",
]
