"""The dashboard's expressions as Grafana fills them (observe/dashboard.py's ``interpolate``).
The dashboard as the stack writes it, every expression through promtool, is
tests/unit/observe/test_stack.py's."""

from __future__ import annotations

from vllm_ledger.observe.dashboard import interpolate


def test_interpolate_escapes_as_grafana_does() -> None:
    e = 'up{instance=~"$instance",model_name=~"$model_name"} * $max_model_len'
    got = interpolate(e, {"instance": ["a.b:1", "c:2"], "model_name": ".*", "max_model_len": "7"})
    assert got == 'up{instance=~"(a\\\\.b:1|c:2)",model_name=~".*"} * 7'
    assert interpolate('"$1" $other', {"instance": ".*"}) == '"$1" $other'
