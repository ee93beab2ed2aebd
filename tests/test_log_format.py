"""JSON logs on request: the host file's ``log_format: json`` gives vLLM its own JSON formatter
(``--logging-config.formatter json``) in every mode and the exporter and notifier beside it
``VLLM_LEDGER_LOG_FORMAT=json``; the Vector example in docs/observability.md reads fields that
a real vLLM JSON line and a real exporter JSON line have."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from vllm_ledger.deploy.compose import compose_file
from vllm_ledger.deploy.host import parse_host
from vllm_ledger.deploy.kubernetes import manifests
from vllm_ledger.deploy.launch import render_script
from vllm_ledger.deploy.ledger_units import ledger_units, notifier_unit
from vllm_ledger.deploy.serve import JSON_LOGS_FLAG, serve_args
from vllm_ledger.deploy.supervisor import program_section
from vllm_ledger.deploy.units import vllm_unit
from vllm_ledger.doctor.vllmparse import parse_serve_argvs
from vllm_ledger.errors import ConfigError
from vllm_ledger.units import LOG_FORMAT_ENV

BASE: dict[str, Any] = {
    "model": "/models/tiny",
    "image": "vllm/vllm-openai:v0.32.0",
    "gpus": [],
    "artifacts_dir": "/srv/artifacts",
}
JSON = {**BASE, "log_format": "json"}
needs_vllm = pytest.mark.skipif(
    importlib.util.find_spec("vllm") is None, reason="no vLLM in this Python"
)


def _renders(data: dict[str, Any]) -> dict[str, str]:
    host = parse_host(data)
    return {
        "docker": render_script(host, mode="docker"),
        "bare": render_script(host, mode="bare", usage=True),
        "systemd": vllm_unit(host, usage=True),
        "supervisor": program_section(host, usage=True),
        "compose": compose_file(host),
        "kubernetes": json.dumps([m.doc for m in manifests(host, usage=True)]),
    }


def test_json_logs_reach_every_mode_and_only_when_asked() -> None:
    off, text, on = _renders(BASE), _renders({**BASE, "log_format": "text"}), _renders(JSON)
    assert off == text
    for mode, rendered in on.items():
        spellings = (
            f"{JSON_LOGS_FLAG} json",
            f'"{JSON_LOGS_FLAG}", "json"',
            f'- "{JSON_LOGS_FLAG}"\n      - "json"',  # compose's list
        )
        assert any(spelling in rendered for spelling in spellings), mode
        assert JSON_LOGS_FLAG not in off[mode], mode


def test_the_services_beside_vllm_log_json_when_asked(tmp_path: Path) -> None:
    config = tmp_path / "notifier.toml"
    for data, wanted in ((BASE, 0), (JSON, 1)):
        host = parse_host(data)
        exporter = ledger_units(host, listen="127.0.0.1:9464")[0].text
        notifier = notifier_unit(host, config)
        line = f"Environment={LOG_FORMAT_ENV}=json\n"
        assert (exporter.count(line), notifier.count(line)) == (wanted, wanted)
        sidecar = [
            c
            for m in manifests(host, usage=True)
            if m.doc["kind"] == "StatefulSet"
            for c in m.doc["spec"]["template"]["spec"]["containers"]
            if c["name"] == "ledger-exporter"
        ]
        assert sidecar[0].get("env", []) == [{"name": LOG_FORMAT_ENV, "value": "json"}] * wanted


def test_any_other_log_format_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_host({**BASE, "log_format": "logfmt"})
    assert "log_format" in str(caught.value) and "\n" not in str(caught.value)


@needs_vllm
def test_vllms_own_parser_takes_the_flag() -> None:
    args = serve_args(parse_host(JSON), mode="bare", usage=True)
    parsed = parse_serve_argvs(sys.executable, [args])
    assert (parsed.why_not, parsed.errors) == ("", (None,)), parsed


VLLM_LINE = """
from vllm.config.logging import LoggingConfig
from vllm.logger import _configure_vllm_root_logger, init_logger
_configure_vllm_root_logger(LoggingConfig(formatter="json"))
init_logger("vllm.entrypoints.openai.api_server").info("Starting vLLM API server %d", 0)
"""
EXPORTER_LINE = """
import logging
from vllm_ledger.commands._service_log import service_logging
service_logging()
logging.getLogger("vllm_ledger.exporter").info("listening on %s", "127.0.0.1:9464")
"""


def _line(program: str, stream: str, env: dict[str, str]) -> tuple[dict[str, Any], int]:
    """The last line ``program`` writes on ``stream``, decoded, and the writer's pid."""
    full = {**os.environ, "PYTHONPATH": str(REPO), **env}
    p = subprocess.Popen(
        [sys.executable, "-c", program + "\nimport os; print('PID', os.getpid())"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=full,
        cwd=REPO,
    )
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    pid = int(out.splitlines()[-1].split()[1])
    lines = [x for x in (out if stream == "stdout" else err).splitlines() if x.startswith("{")]
    return json.loads(lines[-1]), pid


def _vector_fields() -> set[str]:
    doc = (REPO / "docs" / "observability.md").read_text()
    remap = doc.split('type = "remap"', 1)[1].split("'''", 2)[1]
    return set(re.findall(r"parsed\.([A-Za-z_]+)", remap))


@needs_vllm
def test_the_vector_example_reads_a_real_vllm_line_and_an_exporter_line() -> None:
    fields = _vector_fields()
    assert fields == {"levelname", "name", "process", "asctime", "message"}
    vllm, vllm_pid = _line(VLLM_LINE, "stdout", {"VLLM_LOGGING_LEVEL": "INFO"})
    ours, our_pid = _line(EXPORTER_LINE, "stderr", {LOG_FORMAT_ENV: "json"})
    for line, pid, logger, message in (
        (vllm, vllm_pid, "vllm.entrypoints.openai.api_server", "Starting vLLM API server 0"),
        (ours, our_pid, "vllm_ledger.exporter", "listening on 127.0.0.1:9464"),
    ):
        assert fields <= set(line), line
        assert isinstance(line["levelname"], str) and line["levelname"].lower() == "info"
        assert (line["name"], line["process"], line["message"]) == (logger, pid, message)
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}", line["asctime"]), line
