"""A panel as data (observe/panels.py): the record's defaults and the matchers every row uses."""

from __future__ import annotations

from vllm_ledger.names import LEDGER_INSTANCE_LABEL, MODEL_NAME_LABEL
from vllm_ledger.observe.panels import LM, VM, G, L, Panel, V


def test_a_panel_has_no_description_and_no_up_down_mapping_unless_given() -> None:
    p = Panel("t", "stat", "none", [("up", "{{instance}}")], 6)
    assert p.description == ""
    assert p.up_down is False


def test_the_matchers_follow_the_template_variables() -> None:
    assert V == 'instance=~"$instance"'
    assert VM == V + ',model_name=~"$model_name"'
    assert f'{LEDGER_INSTANCE_LABEL}=~"$instance"' == L
    assert L + f',{MODEL_NAME_LABEL}=~"$model_name"' == LM
    assert G == 'instance=~"$host:[0-9]+"'  # a GPU or a host is picked by its host
