"""``render --mode kubernetes --autoscale``: a HorizontalPodAutoscaler on vLLM's queue. Pure.

The ``autoscaling/v2`` HorizontalPodAutoscaler scales the StatefulSet on the requests waiting
in each pod's queue (``vllm:num_requests_waiting``, summed over the pod's engines), read from
the custom metrics API that prometheus-adapter serves. The adapter's rule is a ConfigMap
(``config.yaml``, the adapter's ``--config`` file): it renames the series to
``vllm_num_requests_waiting`` (a custom metric's name cannot hold vLLM's ``:``) and maps the
``namespace`` and ``pod`` labels the ServiceMonitor's scrape gives every series onto their
resources.

The StatefulSet leaves out ``replicas`` then (the autoscaler owns it: an apply that set it
would undo every scaling). Each replica gets its own ledger claim from the StatefulSet's
``volumeClaimTemplates`` (``ledger-NAME-0``, ``ledger-NAME-1``, ...): a pod writes only its own
files, and a claim outlives a scale-down (docs/kubernetes.md, "Autoscaling").
"""

from __future__ import annotations

from typing import Any

from vllm_ledger.names import VLLM_NUM_REQUESTS_WAITING

QUEUE_SERIES = VLLM_NUM_REQUESTS_WAITING
QUEUE_METRIC = "vllm_num_requests_waiting"  # its name in the custom metrics API
MIN_REPLICAS = 1
MAX_REPLICAS = 4
WAITING_PER_POD = 4  # scale up past 4 requests waiting, on average over the pods
SCALE_UP_WINDOW_S = 60  # a queue held a minute, not one burst
SCALE_DOWN_WINDOW_S = 900  # a pod loads its model for minutes: keep it 15 min past the need
SCALE_DOWN_PERIOD_S = 600  # then one pod at a time, every 10 min at most
ADAPTER_CONFIG_KEY = "config.yaml"


def adapter_rules() -> dict[str, Any]:
    """prometheus-adapter's rules: the queue series, per pod, as ``QUEUE_METRIC``."""
    return {
        "rules": [
            {
                "seriesQuery": f'{{__name__="{QUEUE_SERIES}",namespace!="",pod!=""}}',
                "resources": {
                    "overrides": {
                        "namespace": {"resource": "namespace"},
                        "pod": {"resource": "pod"},
                    }
                },
                "name": {"matches": f"^{QUEUE_SERIES}$", "as": QUEUE_METRIC},
                "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
            }
        ]
    }


def adapter_configmap(name: str, labels: dict[str, str], rules_yaml: str) -> dict[str, Any]:
    """The rules as a ConfigMap for prometheus-adapter (its ``--config`` file)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-adapter-rules", "labels": labels},
        "data": {ADAPTER_CONFIG_KEY: rules_yaml},
    }


def autoscaler(name: str, labels: dict[str, str]) -> dict[str, Any]:
    """The HorizontalPodAutoscaler of the StatefulSet ``name``."""
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": name},
            "minReplicas": MIN_REPLICAS,
            "maxReplicas": MAX_REPLICAS,
            "metrics": [
                {
                    "type": "Pods",
                    "pods": {
                        "metric": {"name": QUEUE_METRIC},
                        "target": {"type": "AverageValue", "averageValue": str(WAITING_PER_POD)},
                    },
                }
            ],
            "behavior": {
                "scaleUp": {"stabilizationWindowSeconds": SCALE_UP_WINDOW_S},
                "scaleDown": {
                    "stabilizationWindowSeconds": SCALE_DOWN_WINDOW_S,
                    "policies": [
                        {"type": "Pods", "value": 1, "periodSeconds": SCALE_DOWN_PERIOD_S}
                    ],
                },
            },
        },
    }
