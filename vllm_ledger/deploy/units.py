"""The systemd unit that runs vLLM as a service from a host file: ``render --mode systemd``. Pure.

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

The ledger's own units (``render --units DIR``) are ``deploy/ledger_units.py``'s.

Quoting: every word from the host file goes through ``sd_word`` (``deploy/unitwords.py``).
Directives that take one path (``LoadCredential=``, ``AssertPathExists=``) get only plain paths,
else ConfigError.

Sizes (``deploy/limits.py``): a path a directive takes is within PATH_MAX and NAME_MAX, a unit's
name within systemd's 255 characters, and every line (continuations joined) within its 1 MiB
line limit; a unit systemd would not load is refused with ConfigError naming the key.
"""

from __future__ import annotations

import posixpath

from vllm_ledger import __version__
from vllm_ledger.deploy.budgets import BudgetsFile, budgets_for
from vllm_ledger.deploy.host import Host, check_for
from vllm_ledger.deploy.limits import check_unit_lines, check_unit_name
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
from vllm_ledger.deploy.unitwords import command_lines, plain_path, sd_word
from vllm_ledger.format.zonefile import BUNDLE_MARKER
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


def unit_name(host: Host) -> str:
    """The vLLM service's name, ``NAME.service`` (NAME: container_name, else vllm-PORT)."""
    return f"{host.name}.service"


def env_file(host: Host) -> str:
    return f"{ENV_FILE_DIR}/{host.name}.env"


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


def _assertions(host: Host, usage: bool, budgets: BudgetsFile | None) -> list[str]:
    """What must exist before the service starts: the plugin's bundle where no step makes it,
    the budgets file and its price file (the enforcer reads them at its start)."""
    out = []
    if usage and not host.ledger_code_dir:
        marker = posixpath.join(plugin_dir(host), BUNDLE_MARKER)
        out.append(f"AssertPathExists={plain_path(marker, 'artifacts_dir')}")
    if budgets is not None and host.budgets is not None:
        for path in (host.budgets, budgets.prices):
            if path is not None:
                out.append(f"AssertPathExists={plain_path(path, 'budgets')}")
    return out


def _start_pre(host: Host) -> list[str]:
    """With the ledger: its root made, and the plugin bundled from ``ledger_code_dir``."""
    out = command_lines("ExecStartPre", ["/bin/mkdir", "-p", "--", ledger_dir(host)])
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
        out += command_lines("ExecStartPre", bundle)
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
    out += _assertions(host, usage, budgets)
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
    out += _start_pre(host) if usage else []
    args = serve_args(host, mode="bare", usage=usage)
    heads = [h for h in (_key_wrapper(host), [host.vllm_executable, *args[:2]]) if h]
    out += command_lines("ExecStart", args[2:], *heads)
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


__all__ = [
    "DEFAULT_USER",
    "SYSUSERS_FILE",
    "env_file",
    "sysusers_text",
    "unit_name",
    "vllm_unit",
    "writable_paths",
]
