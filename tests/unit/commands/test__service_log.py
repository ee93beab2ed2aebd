"""A long-running command's log lines as JSON (commands/_service_log.py)."""

from __future__ import annotations

import json
import logging

from vllm_ledger.commands._service_log import JSON_LOG_KEYS, JsonLineFormatter


def test_a_json_line_has_the_keys_vllm_writes() -> None:
    record = logging.LogRecord("vllm_ledger.exporter", logging.INFO, "f", 1, "on %s", ("x",), None)
    line = json.loads(JsonLineFormatter().format(record))
    assert tuple(line) == JSON_LOG_KEYS
    assert (line["message"], line["levelname"]) == ("on x", "INFO")
