"""deploy/yamltext.py: the YAML it writes reads back as the same value."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_ledger.deploy.yamltext import to_yaml

_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
_SCALARS = st.none() | st.booleans() | st.integers() | _TEXT
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, derandomize=True)
@given(st.dictionaries(_TEXT, _VALUES, max_size=5))
def test_yaml_writer_reads_back_the_same(value: dict[str, Any]) -> None:
    assert yaml.safe_load("\n".join(to_yaml(value)) + "\n") == (value or {})


def test_yaml_writer_uses_a_literal_block_for_multiline_text() -> None:
    text = '{\n  "a": 1\n}\n'
    lines = to_yaml({"data": {"x.json": text}})
    assert lines == ["data:", "  x.json: |", "    {", '      "a": 1', "    }"]
    assert yaml.safe_load("\n".join(lines) + "\n") == {"data": {"x.json": text}}
