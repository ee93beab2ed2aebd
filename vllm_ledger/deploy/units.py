"""systemd units from a host file: vLLM as a service, and the ledger's own services. Pure.

``vllm_unit(host, usage=, tz=)`` is ``render --mode systemd``: the bare mode's ``vllm serve``
command line as ExecStart, its environment as ``Environment=`` lines (the ledger's with
``usage``, exactly as bare mode exports them), ``Restart=always`` with no start limit (a crash
loop keeps retrying every ``RESTART_SEC``), ``KillMode=mixed`` (SIGTERM to vLLM alone, which
stops its own workers; SIGKILL to what is left after the stop timeout) and ``TimeoutStopSec``
above ``--shutdown-timeout``, so the ledger drains before systemd kills anything.

The service is sandboxed (``_hardening``): a dedicated account by default (``vllm``, declared
by ``sysusers_text``, written beside the unit), ``ProtectSystem=strict`` with the ledger's
folder and the caches ``extra_env`` names writable, and nothing that would stop CUDA: no
``PrivateDevices``, ``DeviceAllow``, ``ProtectClock`` (it implies a device allow-list),
``MemoryDenyWriteExecute`` (JIT) or ``SystemCallFilter``.

The API key is never in the unit: a key file is handed to the service with ``LoadCredential=``
(so it may stay readable by root alone) and a key variable comes from an ``EnvironmentFile=``;
either way a ``/bin/sh -c`` wrapper sets ``VLLM_API_KEY`` and ``exec``s the very argv bare mode
runs, so vLLM's pid is the service's main pid. The attribution key names file is a credential
too (``LoadCredential=vllm-key-names:PATH``, ``VLLM_LEDGER_KEY_NAMES=%d/vllm-key-names``), so it
may stay readable by root alone.

``ledger_units(host, ...)`` is ``render --units DIR``: the exporter (a long-running service),
``check`` (a oneshot service and a daily timer) and, given the notifier's config, the notifier
(``notifier --print-unit``'s unit, from ``notify.unit.unit_text``).

Quoting: every word from the host file goes through ``sd_word`` (systemd's double quotes, C
escapes, ``%%`` for its specifiers, ``$$`` in command lines). Directives that take one path
(``LoadCredential=``, ``AssertPathExists=``) get only plain paths, else ConfigError.

Sizes (``deploy/limits.py``): a path a directive takes is within PATH_MAX and NAME_MAX, a unit's
name within systemd's 255 characters, and every line (continuations joined) within its 1 MiB
line limit; a unit systemd would not load is refused with ConfigError naming the key.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

from vllm_ledger import __version__
from vllm_ledger.deploy.budgets import BudgetsFile, budgets_for
from vllm_ledger.deploy.host import Host, check_for
from vllm_ledger.deploy.limits import check_unit_lines, check_unit_name, path_problem
from vllm_ledger.deploy.serve import (
    DOCKER_STOP_MARGIN_S,
    bare_environment,
    check_tz,
    env_name,
    ledger_dir,
    plugin_dir,
    serve_args,
    shutdown_timeout_s,
)
from vllm_ledger.errors import ConfigError
from vllm_ledger.format.zonefile import BUNDLE_MARKER
from vllm_ledger.notify.unit import unit_text
from vllm_ledger.units import LOG_FORMAT_ENV, is_plain_path
from vllm_ledger.write.keys import NAMES_ENV

RESTART_SEC = 10
DEFAULT_USER = "vllm"  # the account the vLLM unit runs as when the host file names none
DEFAULT_HOME = f"/var/lib/{DEFAULT_USER}"  # its home: StateDirectory, so writable
SYSUSERS_FILE = f"{DEFAULT_USER}.sysusers.conf"  # written beside the unit
NOFILE_LIMIT = 65536  # sockets, shared-memory handles and model shards
NPROC_LIMIT = 65536  # the account's processes and threads (compile workers, NCCL)
# extra_env names whose value is a cache folder vLLM writes: made writable (ReadWritePaths).
CACHE_ENV_NAMES = (
    "HF_HOME",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "TRANSFORMERS_CACHE",
    "XDG_CACHE_HOME",
    "VLLM_CACHE_ROOT",
    "VLLM_CONFIG_ROOT",
    "TRITON_CACHE_DIR",
    "TORCHINDUCTOR_CACHE_DIR",
)
STOP_MARGIN_S = DOCKER_STOP_MARGIN_S  # systemd waits this much past vLLM's shutdown timeout
CREDENTIAL = "vllm-api-key"
KEY_NAMES_CREDENTIAL = "vllm-key-names"  # the key names file, loaded as a credential too
ENV_FILE_DIR = "/etc/vllm-ledger"
CHECK_CALENDAR = "daily"
DEFAULT_NOTIFIER_PYTHON = "/usr/bin/python3"
_PLAIN_WORD = re.compile(r"[A-Za-z0-9._/:,=+@-]+")


def sd_word(word: str, *, command: bool = True) -> str:
    """One word as systemd reads it back: plain if it is safe, else double-quoted with C
    escapes; ``%`` doubled (specifiers) and, in a command line, ``$`` doubled (expansion)."""
    if word == ";":
        return "\\;"
    if _PLAIN_WORD.fullmatch(word):
        return word
    text = word.replace("\\", "\\\\").replace('"', '\\"')
    text = text.replace("\n", "\\n").replace("\t", "\\t").replace("%", "%%")
    if command:
        text = text.replace("$", "$$")
    return f'"{text}"'


def plain_path(path: str, key: str) -> str:
    if not is_plain_path(path):
        raise ConfigError(
            f"{key}: {path!a} cannot go in a systemd unit unquoted: use a path of letters, "
            "digits and ._+/@,- only",
            key=key,
        )
    problem = path_problem(path)
    if problem is not None:
        raise ConfigError(f"{key}: a path in a systemd unit {problem}", key=key)
    return path


def unit_name(host: Host) -> str:
    """The vLLM service's name, ``NAME.service`` (NAME: container_name, else vllm-PORT)."""
    return f"{host.name}.service"


def env_file(host: Host) -> str:
    return f"{ENV_FILE_DIR}/{host.name}.env"


def _command_lines(key: str, words: list[str], *heads: list[str]) -> list[str]:
    """``key=w1 w2 ...`` on one line if short and there are no ``heads``; else each head on a
    line of its own, then ``--flag value`` pairs, continued with ``\\``."""
    one = " ".join(sd_word(w) for w in words)
    if not heads and len(key) + 1 + len(one) <= 96:
        return [f"{key}={one}"]
    groups: list[list[str]] = [list(h) for h in heads]
    for w in words:
        flag_value = groups and len(groups[-1]) == 1 and groups[-1][0].startswith("-")
        if flag_value and not w.startswith("-"):
            groups[-1].append(w)
        else:
            groups.append([w])
    lines = [" ".join(sd_word(w) for w in g) for g in groups]
    out = [f"{key}={lines[0]}"] + ["  " + line for line in lines[1:]]
    return [line + (" \\" if i < len(out) - 1 else "") for i, line in enumerate(out)]


def _key_wrapper(host: Host) -> list[str]:
    """``/bin/sh -c SCRIPT sh`` that sets VLLM_API_KEY and execs the rest, or nothing."""
    if host.api_key_file:
        script = (
            f'VLLM_API_KEY="$(cat -- "$CREDENTIALS_DIRECTORY/{CREDENTIAL}")" || exit 1; '
            'export VLLM_API_KEY; exec "$@"'
        )
    elif host.api_key_env:
        name = env_name(host.api_key_env, "api_key.env")
        script = (
            f'VLLM_API_KEY="${{{name}:?the API key variable {name} is not set in '
            f'{env_file(host)}}}"; export VLLM_API_KEY; exec "$@"'
        )
    else:
        return []
    return ["/bin/sh", "-c", script, "sh"]


def sysusers_text(host: Host) -> str | None:
    """The sysusers.d line that declares the vLLM unit's dedicated account, or None when the
    host file names its own ``user`` (an account that exists already)."""
    if host.user:
        return None
    return (
        "# The account the vLLM service runs as, rendered by vllm-ledger "
        f"{__version__} (render --mode systemd).\n"
        f"# Install: cp {SYSUSERS_FILE} /etc/sysusers.d/{DEFAULT_USER}.conf && systemd-sysusers\n"
        f'u {DEFAULT_USER} - "vLLM server" {DEFAULT_HOME}\n'
    )


def writable_paths(host: Host, usage: bool) -> list[str]:
    """The folders the sandboxed service may write, besides its home and a private /tmp:
    ARTIFACTS with ``usage`` (the ledger root is created in it and the bundle step swaps the
    plugin folder beside it), then the cache folders ``extra_env`` names, in name order."""
    paths = [plain_path(host.artifacts_dir or "", "artifacts_dir")] if usage else []
    for name, value in host.extra_env:
        if name in CACHE_ENV_NAMES:
            path = plain_path(value, f"extra_env.{name}")
            if path not in paths:
                paths.append(path)
    return paths


def _hardening(host: Host, usage: bool) -> list[str]:
    """Limits and the sandbox. A named ``user`` keeps its own home (taken to be /home/USER, or
    /root for root) writable, since vLLM, Triton and Hugging Face cache under ``~``."""
    out = [
        f"LimitNOFILE={NOFILE_LIMIT}",
        "LimitMEMLOCK=infinity",
        f"LimitNPROC={NPROC_LIMIT}",
        "NoNewPrivileges=yes",
        "CapabilityBoundingSet=",
        "ProtectSystem=strict",
        "ProtectHome=read-only",
    ]
    paths = writable_paths(host, usage)
    if host.user:
        paths.append("-" + ("/root" if host.user == "root" else f"/home/{host.user}"))
    else:
        out.append(f"StateDirectory={DEFAULT_USER}")
    out += [f"ReadWritePaths={path}" for path in paths]
    out += [
        "PrivateTmp=yes",
        "PrivateMounts=yes",
        "ProtectKernelTunables=yes",
        "ProtectKernelModules=yes",
        "ProtectKernelLogs=yes",
        "ProtectControlGroups=yes",
        "ProtectHostname=yes",
        "ProtectProc=invisible",
        "RestrictNamespaces=yes",
        "RestrictRealtime=yes",
        "RestrictSUIDSGID=yes",
        "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK",
        "LockPersonality=yes",
        "SystemCallArchitectures=native",
    ]
    if not host.user:
        out.append("RemoveIPC=yes")
    return out


def vllm_unit(
    host: Host, *, usage: bool = False, tz: str | None = None, budgets: BudgetsFile | None = None
) -> str:
    """The vLLM service unit's text. Raises ConfigError if the host file does not fit.
    ``budgets``: the host's budgets file, read already (else it is read and checked here)."""
    check_for(host, "bare", usage)
    check_tz(tz, usage)
    budgets = budgets_for(host, usage, budgets)
    check_unit_name(host.name)
    name = unit_name(host)
    account = (
        f"cp {SYSUSERS_FILE} /etc/sysusers.d/{DEFAULT_USER}.conf && systemd-sysusers && "
        if not host.user
        else ""
    )
    out = [
        f"# vLLM service unit (systemd mode{', usage ledger on' if usage else ''}), rendered by "
        f"vllm-ledger {__version__}.",
        "# Do not edit: change the host file, render again and review the diff.",
        f"# Install: {account}cp {name} /etc/systemd/system/ && systemctl daemon-reload && "
        f"systemctl enable --now {name}",
        "[Unit]",
        f"Description=vLLM OpenAI server on port {host.port} ({host.name})",
        "After=network-online.target",
        "Wants=network-online.target",
        "StartLimitIntervalSec=0",
    ]
    if usage and not host.ledger_code_dir:
        marker = posixpath.join(plugin_dir(host), BUNDLE_MARKER)
        out.append(f"AssertPathExists={plain_path(marker, 'artifacts_dir')}")
    if budgets is not None and host.budgets is not None:  # the enforcer reads them at its start
        for path in (host.budgets, budgets.prices):
            if path is not None:
                out.append(f"AssertPathExists={plain_path(path, 'budgets')}")
    out += ["", "[Service]", "Type=exec"]
    out.append(f"User={host.user or DEFAULT_USER}")
    if host.group or not host.user:
        out.append(f"Group={host.group or DEFAULT_USER}")
    out.append(f"WorkingDirectory={'~' if host.user else DEFAULT_HOME}")
    for key, value in bare_environment(host, usage, tz):
        if key == NAMES_ENV:  # %d: the service's credentials folder (LoadCredential below)
            out.append(f"Environment={NAMES_ENV}=%d/{KEY_NAMES_CREDENTIAL}")
            continue
        out.append(f"Environment={sd_word(f'{key}={value}', command=False)}")
    if host.api_key_file:
        path = plain_path(host.api_key_file, "api_key.file")
        out.append(f"LoadCredential={CREDENTIAL}:{path}")
    elif host.api_key_env:
        out.append(f"EnvironmentFile={env_file(host)}")
    if usage and host.key_names is not None:
        path = plain_path(host.key_names, "attribution.key_names")
        out.append(f"LoadCredential={KEY_NAMES_CREDENTIAL}:{path}")
    if usage:
        out += _command_lines("ExecStartPre", ["/bin/mkdir", "-p", "--", ledger_dir(host)])
        if host.ledger_code_dir:
            bundle = [
                "/usr/bin/env",
                f"PYTHONPATH={host.ledger_code_dir}",
                host.ledger_python,
                "-m",
                "vllm_ledger",
                "bundle",
                "--output",
                plugin_dir(host),
            ]
            out += _command_lines("ExecStartPre", bundle)
    args = serve_args(host, mode="bare", usage=usage)
    heads = [h for h in (_key_wrapper(host), [host.vllm_executable, *args[:2]]) if h]
    out += _command_lines("ExecStart", args[2:], *heads)
    out += [
        "Restart=always",
        f"RestartSec={RESTART_SEC}",
        "KillMode=mixed",
        "KillSignal=SIGTERM",
    ]
    timeout = shutdown_timeout_s(host, usage)
    if timeout is not None:
        out.append(f"TimeoutStopSec={timeout + STOP_MARGIN_S}")
    out += _hardening(host, usage)
    out += [f"SyslogIdentifier={host.name}", "", "[Install]", "WantedBy=multi-user.target"]
    return check_unit_lines("\n".join(out) + "\n")


# ---- the ledger's own units -------------------------------------------------------------------


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
        *_command_lines(
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
        *_command_lines("ExecStart", _ledger_argv(host, "check", "--root", root)),
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


__all__ = [
    "DEFAULT_USER",
    "SYSUSERS_FILE",
    "Unit",
    "env_file",
    "ledger_units",
    "notifier_unit",
    "sd_word",
    "sysusers_text",
    "unit_name",
    "vllm_unit",
    "writable_paths",
]
