"""A supervisord ``[program:NAME]`` section from a host file: vLLM kept running. Pure.

``program_section(host, usage=, tz=, log_dir=)`` is ``render --mode supervisor``: ``command=``
is bare mode's ``vllm serve`` argv (``serve_args``) run by ``vllm_executable``,
``environment=`` bare mode's environment (the ledger's with ``usage``), ``autorestart=true``
with ``startretries`` so large that supervisord never gives up, ``stopsignal=TERM`` to vLLM
alone (``stopasgroup=false``: vLLM stops its own workers, as systemd's ``KillMode=mixed``) and
``killasgroup=true`` for what is left after ``stopwaitsecs`` = ``--shutdown-timeout`` + the
ledger's drain limit, and the program's output in rotated log files.

The API key is never in the section: a ``/bin/sh -c`` wrapper reads the key file, or the key
variable from supervisord's own environment, into ``VLLM_API_KEY`` and ``exec``s the argv, so
vLLM's pid is the program's pid.

vLLM runs as the host file's ``user``, else as the dedicated account systemd mode declares
(``vllm``, home /var/lib/vllm), never as supervisord's own (root): the header says how to make
the account, and ``environment=`` sets its ``HOME`` and ``USER`` (supervisord's ``user=``
switches the account alone).

Quoting follows supervisord's readers: the file is an ini file whose values lose anything after
a whitespace-led ``;`` or ``#``, then ``%`` is Python string formatting (``%%`` is a literal
``%``); ``command`` is then split with ``shlex.split`` (POSIX), ``environment`` with a non-POSIX
``shlex`` (``KEY="value"``, no escapes, surrounding quotes stripped). A value those readers
cannot give back exactly (a line break; an environment value holding both quote characters,
starting or ending with one, or a whitespace-led ``;`` or ``#``) is refused with ConfigError.
"""

from __future__ import annotations

import re
import shlex

from vllm_ledger import __version__
from vllm_ledger.deploy.budgets import BudgetsFile, budgets_for
from vllm_ledger.deploy.host import Host, check_for
from vllm_ledger.deploy.serve import (
    bare_environment,
    check_tz,
    env_name,
    ledger_dir,
    plugin_dir,
    serve_args,
)
from vllm_ledger.deploy.serve import shutdown_timeout_s as vllm_shutdown_timeout_s
from vllm_ledger.deploy.units import DEFAULT_HOME, DEFAULT_USER
from vllm_ledger.errors import ConfigError
from vllm_ledger.units import BUDGETS_ENV
from vllm_ledger.write.keys import NAMES_ENV
from vllm_ledger.write.recorder import DRAIN_TIMEOUT_S

DEFAULT_LOG_DIR = "/var/log/supervisor"
CONF_DIR = "/etc/supervisor/conf.d"
START_RETRIES = 1_000_000  # supervisord gives up (FATAL) after this many failed starts in a row
START_SECS = 10  # alive this long counts as started
STOP_WAIT_DEFAULT_S = 10  # supervisord's own default, kept when vLLM has no shutdown timeout
LOG_MAX_BYTES = "100MB"
LOG_BACKUPS = 10
_LINE_BREAK = re.compile(r"[\n\r]")
_COMMENT = re.compile(r"\s[;#]")
_COMMENT_MARK = re.compile(r"((?:^|(?<=\s))[;#])")  # what the ini reader would cut at


def program_name(host: Host) -> str:
    """The program's name in supervisord (``supervisorctl status NAME``): the unit's name."""
    return host.name


def conf_name(host: Host) -> str:
    return f"{host.name}.conf"


def stop_wait_s(host: Host, usage: bool) -> int:
    """``stopwaitsecs``: vLLM's ``--shutdown-timeout`` plus the ledger's drain limit."""
    timeout = vllm_shutdown_timeout_s(host, usage)
    if timeout is None:
        return STOP_WAIT_DEFAULT_S
    return timeout + int(DRAIN_TIMEOUT_S)


def sv_word(word: str, key: str) -> str:
    """One ``command`` word: shell-quoted for ``shlex.split``; a ``;`` or ``#`` that starts it or
    follows a space goes outside the quotes, backslash-escaped (never an ini comment); ``%``
    doubled."""
    if _LINE_BREAK.search(word):
        raise ConfigError(
            f"{key}: {word!a} holds a line break, which a supervisor command cannot", key=key
        )
    if word == "":
        return "''"
    parts = _COMMENT_MARK.split(word)
    text = "".join(f"\\{p}" if p in (";", "#") else shlex.quote(p) for p in parts if p)
    return text.replace("%", "%%")


def sv_env_value(value: str, key: str) -> str:
    """One ``environment`` value, quoted so supervisord reads it back exactly."""
    why = None
    if _LINE_BREAK.search(value):
        why = "a line break"
    elif value[:1] in ("'", '"') or value[-1:] in ("'", '"'):
        why = "a quote character at its start or end"
    elif '"' in value and "'" in value:
        why = "both quote characters"
    elif _COMMENT.search(value):
        why = "a ';' or '#' after a space"
    if why is not None:
        raise ConfigError(
            f"{key}: {value!a} holds {why}, which a supervisor environment value cannot",
            key=key,
        )
    quote = "'" if '"' in value else '"'
    return f"{quote}{value}{quote}".replace("%", "%%")


def _key_wrapper(host: Host) -> list[str]:
    """``/bin/sh -c SCRIPT sh`` that sets VLLM_API_KEY and execs the rest, or nothing."""
    if host.api_key_file:
        script = 'VLLM_API_KEY="$(cat -- "$0")" || exit 1; export VLLM_API_KEY; exec "$@"'
        return ["/bin/sh", "-c", script, host.api_key_file]  # the file is $0
    if host.api_key_env:
        name = env_name(host.api_key_env, "api_key.env")
        script = (
            f'VLLM_API_KEY="${{{name}:?the API key variable {name} is not set in '
            f'supervisord\'s environment}}"; export VLLM_API_KEY; exec "$@"'
        )
        return ["/bin/sh", "-c", script, "sh"]
    return []


def command_argv(host: Host, usage: bool) -> list[str]:
    """The program's argv: the key wrapper (if any), then ``vllm_executable serve MODEL ...``."""
    return [*_key_wrapper(host), host.vllm_executable, *serve_args(host, mode="bare", usage=usage)]


def _directory(host: Host, usage: bool) -> str:
    """ARTIFACTS with ``usage`` (it exists: the ledger lives in it), else ``/``."""
    if not (usage and host.artifacts_dir):
        return "/"
    path = host.artifacts_dir
    if _LINE_BREAK.search(path) or _COMMENT.search(path):
        raise ConfigError(
            f"artifacts_dir: {path!a} cannot be a supervisor directory (a line break, or a ';' "
            "or '#' after a space)",
            key="artifacts_dir",
        )
    return path.replace("%", "%%")


def _env_key(name: str) -> str:
    """The host-file key an environment entry comes from, for a refusal to name."""
    if name == BUDGETS_ENV:
        return "budgets"
    return "attribution.key_names" if name == NAMES_ENV else f"extra_env.{name}"


def program_section(
    host: Host,
    *,
    usage: bool = False,
    tz: str | None = None,
    log_dir: str = DEFAULT_LOG_DIR,
    budgets: BudgetsFile | None = None,
) -> str:
    """The ``[program:NAME]`` file's text. Raises ConfigError if the host file does not fit.
    ``budgets``: the host's budgets file, read already (else it is read and checked here)."""
    check_for(host, "bare", usage)
    check_tz(tz, usage)
    budgets_for(host, usage, budgets)
    name = program_name(host)
    command = " ".join(sv_word(w, "command") for w in command_argv(host, usage))
    account = [] if host.user else [("HOME", DEFAULT_HOME), ("USER", DEFAULT_USER)]
    env = ",".join(
        f"{key}={sv_env_value(value, _env_key(key))}"
        for key, value in [*account, *bare_environment(host, usage, tz)]
    )
    out = [
        f"; vLLM under supervisord (supervisor mode{', usage ledger on' if usage else ''}), "
        f"rendered by vllm-ledger {__version__}.",
        "; Do not edit: change the host file, render again and review the diff.",
        f"; Install: cp {conf_name(host)} {CONF_DIR}/ && supervisorctl reread && "
        "supervisorctl update",
    ]
    if not host.user:
        out.append(
            f"; The account: id -u {DEFAULT_USER} || useradd --system --create-home --home-dir "
            f"{DEFAULT_HOME} {DEFAULT_USER} (or the host file's user)"
        )
    if usage:
        out.append(
            f"; Before the first start: mkdir -p {shlex.quote(ledger_dir(host))} && "
            f"chown {host.user or DEFAULT_USER} {shlex.quote(ledger_dir(host))} && "
            f"vllm-ledger bundle --output {shlex.quote(plugin_dir(host))}"
        )
    out += [
        f"[program:{name}]",
        f"command={command}",
        f"directory={_directory(host, usage)}",
    ]
    out.append(f"user={host.user or DEFAULT_USER}")
    if env:
        out.append(f"environment={env}")
    out += [
        "autostart=true",
        "autorestart=true",
        f"startsecs={START_SECS}",
        f"startretries={START_RETRIES}",
        "stopsignal=TERM",
        f"stopwaitsecs={stop_wait_s(host, usage)}",
        "stopasgroup=false",
        "killasgroup=true",
    ]
    for stream in ("stdout", "stderr"):
        out += [
            f"{stream}_logfile={log_dir}/{name}.{stream}.log",
            f"{stream}_logfile_maxbytes={LOG_MAX_BYTES}",
            f"{stream}_logfile_backups={LOG_BACKUPS}",
        ]
    return "\n".join(out) + "\n"


__all__ = [
    "command_argv",
    "conf_name",
    "program_name",
    "program_section",
    "stop_wait_s",
    "sv_env_value",
    "sv_word",
]
