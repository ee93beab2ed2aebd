"""A dashboard panel as data: the ``Panel`` record each row lists, the label matchers its
targets filter by (every panel follows the dashboard's template variables) and the unit the
token-rate panels share. The rows live in ``panels_vllm``, ``panels_host`` and
``panels_ledger``; ``dashboard`` lays them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vllm_ledger.names import LEDGER_INSTANCE_LABEL, MODEL_NAME_LABEL

# Label matchers: vLLM's series by Prometheus's `instance`, the ledger's by `ledger_instance`,
# GPU series (DCGM's or the exporter's NVML gauges) by the host of their target.
V = 'instance=~"$instance"'
VM = 'instance=~"$instance",model_name=~"$model_name"'
L = f'{LEDGER_INSTANCE_LABEL}=~"$instance"'
LM = f'{LEDGER_INSTANCE_LABEL}=~"$instance",{MODEL_NAME_LABEL}=~"$model_name"'
G = 'instance=~"$host:[0-9]+"'

TOKENS_PER_S = "suffix: tokens/s"  # Grafana's custom unit: the number, a space, tokens/s


@dataclass(frozen=True)
class Panel:
    title: str
    kind: str  # timeseries, stat, bargauge
    unit: str  # a Grafana unit id
    targets: Sequence[tuple[str, str]]  # (expr, legend)
    width: int
    description: str = ""
    up_down: bool = False  # map 0/1 to down/up


# A row: its title and its panels, laid out left to right and wrapped at the grid's width.
Row = tuple[str, list[Panel]]

__all__ = ["LM", "TOKENS_PER_S", "VM", "G", "L", "Panel", "Row", "V"]
