"""The ledger's own systemd units beside vLLM's (``render --units DIR``): the exporter (a
long-running service), ``check`` (a oneshot service and a daily timer) and, given the notifier's
config, the notifier (``notifier --print-unit``'s unit, from ``notify.unit.unit_text``), each
run as the host file's ``user`` and ``group`` with the ledger's CLI as bare mode runs it. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vllm_ledger import __version__
from vllm_ledger.deploy.host import Host, check_for
from vllm_ledger.deploy.limits import check_unit_lines, check_unit_name
from vllm_ledger.deploy.serve import ledger_dir
from vllm_ledger.deploy.units import RESTART_SEC, unit_name
from vllm_ledger.deploy.unitwords import command_lines, sd_word
from vllm_ledger.notify.unit import unit_text
from vllm_ledger.units import LOG_FORMAT_ENV

CHECK_CALENDAR = "daily"
DEFAULT_NOTIFIER_PYTHON = "/usr/bin/python3"


@dataclass(frozen=True)
class Unit:
    """One unit file: its name (``NAME.service``, ``NAME.timer``) and text."""

    name: str
    text: str


def _ledger_argv(host: Host, *args: str) -> list[str]:
    """The ledger CLI as ExecStart words (bare mode's ``ledger_cli``, through /usr/bin/env)."""
    if host.ledger_code_dir:
        head = [f"PYTHONPATH={host.ledger_code_dir}", host.ledger_python, "-m", "vllm_ledger"]
    else:
        head = ["vllm-ledger"]
    return ["/usr/bin/env", *head, *args]


def _header(what: str) -> list[str]:
    return [
        f"# {what}, rendered by vllm-ledger {__version__} (render --units).",
        "# Do not edit: change the host file, render again and review the diff.",
    ]


def _user_lines(host: Host) -> list[str]:
    return [f"User={host.user}"] * bool(host.user) + [f"Group={host.group}"] * bool(host.group)


def _log_lines(host: Host) -> list[str]:
    """``log_format: json``: the service logs JSON lines, the keys vLLM's JSON formatter writes."""
    return [f"Environment={LOG_FORMAT_ENV}=json"] * (host.log_format == "json")


def ledger_units(host: Host, *, listen: str, notifier_config: Path | None = None) -> list[Unit]:
    """The exporter's service, check's service and daily timer, and (given its config) the
    notifier's service, for the ledger at ARTIFACTS/usage."""
    check_values_for_units(host)
    check_unit_name(host.name)
    root = ledger_dir(host)
    base = host.name
    vllm = unit_name(host)
    exporter = [
        *_header(f"The ledger's Prometheus exporter for {vllm}"),
        "[Unit]",
        f"Description=vllm-ledger exporter: {host.name}'s ledger as Prometheus metrics",
        "After=network-online.target",
        "Wants=network-online.target",
        "",
        "[Service]",
        "Type=simple",
        *_user_lines(host),
        *_log_lines(host),
        *command_lines(
            "ExecStart", _ledger_argv(host, "exporter", "--root", root, "--listen", listen)
        ),
        "Restart=on-failure",
        f"RestartSec={RESTART_SEC}",
        "NoNewPrivileges=yes",
        "PrivateTmp=yes",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
    ]
    check_service = [
        *_header(f"The ledger's daily integrity check for {vllm} (started by its timer)"),
        "[Unit]",
        f"Description=vllm-ledger check: an integrity pass over {host.name}'s ledger",
        "",
        "[Service]",
        "Type=oneshot",
        *_user_lines(host),
        *command_lines("ExecStart", _ledger_argv(host, "check", "--root", root)),
        "NoNewPrivileges=yes",
        "PrivateTmp=yes",
    ]
    check_timer = [
        *_header(f"Starts {base}-ledger-check.service once a day"),
        "[Unit]",
        f"Description=vllm-ledger check of {host.name}'s ledger, daily",
        "",
        "[Timer]",
        f"OnCalendar={CHECK_CALENDAR}",
        "Persistent=true",
        "RandomizedDelaySec=15min",
        f"Unit={base}-ledger-check.service",
        "",
        "[Install]",
        "WantedBy=timers.target",
    ]
    units = [
        Unit(f"{base}-ledger-exporter.service", check_unit_lines("\n".join(exporter) + "\n")),
        Unit(f"{base}-ledger-check.service", check_unit_lines("\n".join(check_service) + "\n")),
        Unit(f"{base}-ledger-check.timer", "\n".join(check_timer) + "\n"),
    ]
    if notifier_config is not None:
        units.append(Unit("vllm-ledger-notifier.service", notifier_unit(host, notifier_config)))
    return units


def notifier_unit(host: Host, config: Path) -> str:
    """``notifier --print-unit``'s unit, run by the host file's ledger Python (an absolute
    ``ledger_python``, else /usr/bin/python3) with ``ledger_code_dir`` on PYTHONPATH."""
    python = host.ledger_python if host.ledger_python.startswith("/") else DEFAULT_NOTIFIER_PYTHON
    text = unit_text(python, config)
    if host.ledger_code_dir:
        code = sd_word(f"PYTHONPATH={host.ledger_code_dir}", command=False)
        text = text.replace("[Service]\n", f"[Service]\nEnvironment={code}\n", 1)
    for line in _log_lines(host):
        text = text.replace("[Service]\n", f"[Service]\n{line}\n", 1)
    return "".join(line + "\n" for line in _header("The notifier (bot) service")) + text


def check_values_for_units(host: Host) -> None:
    check_for(host, "bare", True)  # the units read ARTIFACTS/usage: as with --usage
