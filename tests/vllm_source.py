"""vLLM's own metric names, read from the installed vLLM's source without importing vLLM.

``vllm/v1/metrics/loggers.py`` declares every ``vllm:*`` series its Prometheus logger serves
(``name="vllm:..."``); a counter is exposed with ``_total``, a histogram with ``_bucket``,
``_sum`` and ``_count``.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

SUFFIXES = ("", "_total", "_bucket", "_sum", "_count")


def vllm_loggers() -> Path:
    """vLLM's metrics source, found without importing vLLM."""
    spec = importlib.util.find_spec("vllm")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "v1" / "metrics" / "loggers.py"


def vllm_metric_names() -> set[str]:
    """Every name the installed vLLM's logger serves, with each suffix a series may carry."""
    bases = set(re.findall(r'name="(vllm:[a-z_]+)"', vllm_loggers().read_text()))
    return {b + s for b in bases for s in SUFFIXES}
