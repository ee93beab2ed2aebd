"""`fleet --json` against a real Prometheus, held against docs/json-schema.md ("fleet --json"):
a Prometheus that scrapes no exporter (about a second to start) still answers with the whole
document, its `schema` first; with `--by key`, `by` too. The figures themselves are
tests/e2e/test_fleet.py's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.e2e.prom import Prometheus
from tests.test_json_schema_doc import hold_to_doc

pytestmark = pytest.mark.e2e


@pytest.fixture
def empty_prometheus(tmp_path: Path) -> Iterator[Prometheus]:
    config = tmp_path / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1s\n")
    prom = Prometheus(config, tmp_path / "tsdb", tmp_path / "prometheus.log").start()
    try:
        yield prom
    finally:
        prom.stop()


def test_fleet_json_is_the_documented_document(empty_prometheus: Prometheus) -> None:
    code, out, err = run_cli("fleet", "--prometheus", empty_prometheus.url, "--json")
    doc = hold_to_doc("fleet --json", out)
    assert (code, err) == (1, "")  # no host serves the ledger series: not complete
    assert next(iter(doc)) == "schema" and "by" not in doc
    assert doc["incomplete"] == ["no host serves vllm_ledger metrics: check the scrape config"]
    code, out, err = run_cli("fleet", "--prometheus", empty_prometheus.url, "--by", "key", "--json")
    doc = hold_to_doc("fleet --json", out)
    assert (code, err, doc["by"]["by"]) == (1, "", "key")
