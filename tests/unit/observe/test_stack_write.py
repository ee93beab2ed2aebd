"""The stack's files written under one folder: each rendered (YAML with its header, the
dashboard as JSON), and the Alertmanager token made once, mode 0600, never replaced."""

from __future__ import annotations

import json
import stat
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from vllm_ledger.errors import BadArgument
from vllm_ledger.observe.stack import HEADER, StackSpec
from vllm_ledger.observe.stack_write import documents, render, token_path, write_stack

SPEC = StackSpec()
FILES = [
    "prometheus.yml",
    "alerts.yml",
    "alertmanager.yml",
    "compose.yaml",
    "grafana/provisioning/datasources/prometheus.yml",
    "grafana/provisioning/dashboards/vllm-ledger.yml",
]


def test_every_file_of_the_stack_by_its_path() -> None:
    docs = documents(SPEC)
    assert list(docs)[:6] == FILES
    assert len(docs) == 7 and next(reversed(docs)).startswith("grafana/dashboards/")
    assert "budgets.yml" not in docs


def test_yaml_carries_the_header_and_json_is_indented() -> None:
    text = render("compose.yaml", {"services": {"a": {"ports": ["1:2"]}}})
    assert text == HEADER + "services:\n  a:\n    ports:\n    - '1:2'\n"  # never base 60
    assert render("d.json", {"é": [1]}) == '{\n  "é": [\n    1\n  ]\n}\n'


def test_the_stack_is_written_and_the_token_made_once(tmp_path: Path) -> None:
    out = tmp_path / "stack"
    first = write_stack(out, SPEC)
    assert [str(p.relative_to(out)) for p in first.files][:6] == FILES
    assert (first.token_file, first.token_created) == (out / "alertmanager-token", True)
    token = first.token_file.read_text()
    assert len(token.strip()) == 43 and token.endswith("\n")
    assert stat.S_IMODE(first.token_file.stat().st_mode) == 0o600
    assert yaml.safe_load((out / "compose.yaml").read_text())["services"]["grafana"]["ports"] == [
        "3300:3000"
    ]
    json.loads(first.files[-1].read_text())
    again = write_stack(out, SPEC)
    assert again.token_created is False and first.token_file.read_text() == token


def test_the_token_file_is_the_given_one_and_must_be_a_file(tmp_path: Path) -> None:
    elsewhere = replace(SPEC, token_file=str(tmp_path / "notifier-token"))
    assert token_path(tmp_path / "stack", elsewhere) == tmp_path / "notifier-token"
    (tmp_path / "stack" / "alertmanager-token").mkdir(parents=True)
    with pytest.raises(BadArgument, match="is not a regular file"):
        write_stack(tmp_path / "stack", SPEC)
    missing = replace(SPEC, token_file=str(tmp_path / "no" / "token"))
    with pytest.raises(BadArgument, match="cannot write the Alertmanager token"):
        write_stack(tmp_path / "other", missing)
    (tmp_path / "a-file").write_text("")
    with pytest.raises(BadArgument, match="exists and is not a directory"):
        write_stack(tmp_path / "a-file", SPEC)
