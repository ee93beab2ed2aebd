"""Render a host file into a launch script: pure, deterministic, every value quoted.

``render_script(host, mode=, usage=)`` returns the text of a ``set -euo pipefail`` bash script;
the same inputs always give the same bytes, so a diff of two renders shows what changed. Every
value from the host file goes through ``shlex.quote``, whatever it contains; the only unquoted
shell in the script is fixed text written here.

* docker mode: ``docker run --detach`` of the vLLM OpenAI image, ``--entrypoint vllm`` and
  ``serve MODEL ...`` after the image, so the argv after ``vllm`` is the same in both modes.
* bare mode: ``exec vllm serve MODEL ...`` (``exec``, so the script's pid is vLLM's and a
  SIGTERM to it reaches vLLM).
* the API key is read when the script runs, from the named environment variable or file, and
  handed to vLLM as ``VLLM_API_KEY``: it never appears in the script or in any argv.
* ``usage=True`` switches the ledger on: the plugin is bundled into ``ARTIFACTS/ledger-plugin``
  (from ``ledger_code_dir``, or an existing bundle is required), put on ``PYTHONPATH``
  (docker: mounted read-only), the ledger goes to ``ARTIFACTS/usage`` (docker: mounted
  read-write), ``VLLM_LEDGER_WRITERS`` is the API server count, and ``--shutdown-timeout`` is
  set above the ledger's drain limit. With ``usage=False`` no ledger setting appears at all.
* ``usage=True`` also loads the attribution middleware (``--middleware
  vllm_ledger.middleware.LedgerMiddleware``) and hands it the host file's ``attribution``
  settings as its environment; a key names file is checked before vLLM starts (docker: mounted
  read-only at ``/vllm-ledger/key-names/key-names.json``). See ``deploy/attribution.py`` and
  docs/attribution.md.
* ``usage=True`` with the host file's ``budgets``: ``VLLM_LEDGER_BUDGETS`` names the budgets
  file, checked now with its own checks and again before vLLM starts (docker: mounted
  read-only, a cost budget's price file at its own path); vLLM's rank 0 runs the enforcer with
  it. See ``deploy/budgets.py`` and docs/budgets.md.
* ``tz=ZONE`` (with ``usage``) adds ``VLLM_LEDGER_TZ=ZONE`` to vLLM's environment: the plugin
  records it in the ledger root (``ROOT/zone``) on its first start, and every reader of that
  root then cuts "today" in that zone unless ``--tz`` or the reader's own ``VLLM_LEDGER_TZ``
  says otherwise (docs/ledger.md, "Time zone").
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass

from vllm_ledger import __version__
from vllm_ledger.deploy.attribution import container_key_names
from vllm_ledger.deploy.budgets import (
    BudgetsFile,
    budgets_check,
    budgets_env,
    budgets_for,
    container_budgets,
    container_mounts,
)
from vllm_ledger.deploy.host import Host, check_for
from vllm_ledger.deploy.serve import (
    CONTAINER_LEDGER_DIR,
    CONTAINER_PLUGIN_DIR,
    DOCKER_STOP_MARGIN_S,
    check_tz,
    env_name,
    ledger_dir,
    middleware_env,
    plugin_dir,
    serve_args,
    shutdown_timeout_s,
)
from vllm_ledger.errors import ConfigError
from vllm_ledger.format.zonefile import BUNDLE_MARKER
from vllm_ledger.http.urls import url_host
from vllm_ledger.units import PORT_ENV, ROOT_ENV, WRITERS_ENV, ZONE_ENV


@dataclass(frozen=True)
class Raw:
    """A word written into the script as is (fixed shell text, never a host-file value)."""

    text: str


Word = str | Raw


def q(word: Word) -> str:
    return word.text if isinstance(word, Raw) else shlex.quote(word)


def ledger_cli(host: Host) -> str:
    """How to run the ledger's CLI on the host, as shell words."""
    if host.ledger_code_dir:
        return f"PYTHONPATH={q(host.ledger_code_dir)} {q(host.ledger_python)} -m vllm_ledger"
    return "vllm-ledger"


def report_command(host: Host) -> str:
    """The report command for this host's ledger, as a shell line."""
    return f"{ledger_cli(host)} report --root {q(ledger_dir(host))}"


def verify_command(host: Host) -> str:
    """The check of the ledger against vLLM's /metrics, as a shell line."""
    address = "127.0.0.1" if host.host in ("0.0.0.0", "::") else host.host
    url = f"http://{url_host(address)}:{host.port}/metrics"
    return f"{ledger_cli(host)} verify --metrics-url {q(url)} --root {q(ledger_dir(host))}"


def render_script(
    host: Host,
    *,
    mode: str | None = None,
    usage: bool = False,
    tz: str | None = None,
    budgets: BudgetsFile | None = None,
) -> str:
    """The launch script's text. Raises ConfigError if the host file does not fit the mode.
    ``budgets``: the host's budgets file, read already (else it is read here)."""
    mode = mode or host.mode
    check_for(host, mode, usage)
    check_tz(tz, usage)
    budgets = budgets_for(host, usage, budgets)
    out = [
        "#!/usr/bin/env bash",
        f"# vLLM launch script ({mode} mode{', usage ledger on' if usage else ''}), rendered by "
        f"vllm-ledger {__version__}.",
        "# Do not edit: change the host file, render again and review the diff.",
        "# Host-file values are single-quoted: '$' and backticks in them are literal on purpose.",
        "# shellcheck disable=SC2016",
        "set -euo pipefail",
        "",
    ]
    if mode == "bare":
        out += _bare_env(host)
    out += _api_key(host)
    if usage:
        out += _usage_setup(host, mode, tz, budgets)
    if mode == "docker":
        out += _docker_run(host, usage, tz, budgets)
    else:
        out += _bare_exec(host, usage)
    return "\n".join(out) + "\n"


def _bare_env(host: Host) -> list[str]:
    lines = []
    if isinstance(host.gpus, tuple) and host.gpus:
        devices = ",".join(str(g) for g in host.gpus)
        lines.append(f"export CUDA_VISIBLE_DEVICES={q(devices)}")
    elif isinstance(host.gpus, tuple):
        lines.append("export CUDA_VISIBLE_DEVICES=''")
    lines += [f"export {env_name(name)}={q(value)}" for name, value in host.extra_env]
    return [*lines, ""] if lines else []


def _api_key(host: Host) -> list[str]:
    if host.api_key_env:
        name = env_name(host.api_key_env, "api_key.env")
        return [
            f"# API key: read from ${name} now, given to vLLM as VLLM_API_KEY (never in argv).",
            f'VLLM_API_KEY="${{{name}:?the API key variable {name} is not set}}"',
            "export VLLM_API_KEY",
            "",
        ]
    if host.api_key_file:
        path = q(host.api_key_file)
        message = q(f"API key file {host.api_key_file} is not readable")
        return [
            "# API key: read from a file now, given to vLLM as VLLM_API_KEY (never in argv).",
            f"if [[ ! -r {path} ]]; then echo {message} >&2; exit 1; fi",
            f'VLLM_API_KEY="$(< {path})"',
            "export VLLM_API_KEY",
            "",
        ]
    return []


def _usage_setup(
    host: Host, mode: str, tz: str | None = None, budgets: BudgetsFile | None = None
) -> list[str]:
    plugin, ledger = plugin_dir(host), ledger_dir(host)
    lines = [
        "# Usage ledger (--usage): plugin from a PYTHONPATH folder (no network, no pip),",
        "# ledger files on the host so they outlive the container.",
        *_key_names_check(host, mode),
        *budgets_check(host, mode, budgets),
        f"mkdir -p -- {q(ledger)}",
    ]
    if host.ledger_code_dir:
        lines.append(
            f"PYTHONPATH={q(host.ledger_code_dir)} {q(host.ledger_python)} -m vllm_ledger "
            f"bundle --output {q(plugin)} >/dev/null"
        )
    else:
        marker = q(posixpath.join(plugin, BUNDLE_MARKER))
        message = q(
            f"no ledger plugin bundle in {plugin}: run 'vllm-ledger bundle --output {plugin}' "
            "or set ledger_code_dir in the host file"
        )
        lines.append(f"if [[ ! -f {marker} ]]; then echo {message} >&2; exit 1; fi")
    if mode == "bare":
        lines += [
            f'export PYTHONPATH={q(plugin)}"${{PYTHONPATH:+:${{PYTHONPATH}}}}"',
            f"export {ROOT_ENV}={q(ledger)}",
            f"export {WRITERS_ENV}={host.api_server_count}",
            f"export {PORT_ENV}={host.port}",
        ]
        if tz is not None:  # recorded in the root as ROOT/zone by the plugin
            lines.append(f"export {ZONE_ENV}={q(tz)}")
        lines += [
            f"export {name}={q(value)}"
            for name, value in [
                *middleware_env(host, host.key_names),
                *budgets_env(host.budgets),
            ]
        ]
    lines += [
        f"printf '%s\\n' {q('ledger plugin: ' + plugin)}",
        f"printf '%s\\n' {q('ledger report: ' + report_command(host))}",
        f"printf '%s\\n' {q('ledger check:  ' + verify_command(host))}",
        "",
    ]
    return lines


def _key_names_check(host: Host, mode: str) -> list[str]:
    """Stop before anything is done when the key names file is not there (docker would make
    a folder in its place; bare mode's vLLM must be able to read it)."""
    if host.key_names is None:
        return []
    path = q(host.key_names)
    test = f"! -f {path}" if mode == "docker" else f"! -f {path} || ! -r {path}"
    message = q(f"key names file {host.key_names} is not a readable file (docs/attribution.md)")
    return [f"if [[ {test} ]]; then echo {message} >&2; exit 1; fi"]


def docker_run_words(
    host: Host, usage: bool, tz: str | None = None, budgets: BudgetsFile | None = None
) -> list[list[Word]]:
    """The ``docker run`` command as groups of words (one group per script line)."""
    assert host.image is not None and not host.image.startswith("-"), "check_for first"
    groups: list[list[Word]] = [["docker", "run", "--detach"], ["--name", host.name]]
    if usage:
        groups.append(["--hostname", Raw('"${HOSTNAME}"')])
    groups.append(["--restart", host.restart])
    if host.gpus == "all":
        groups.append(["--gpus", "all"])
    elif host.gpus:
        groups.append(["--gpus", '"device=' + ",".join(str(g) for g in host.gpus) + '"'])
    groups.append(["--shm-size", host.shm_size])
    timeout = shutdown_timeout_s(host, usage)
    if timeout is not None:
        groups.append(["--stop-timeout", str(timeout + DOCKER_STOP_MARGIN_S)])
    groups.append(["--publish", f"{url_host(host.host)}:{host.port}:{host.port}"])
    for v in host.volumes:
        groups.append(["--volume", f"{v.host}:{v.container}:{'ro' if v.read_only else 'rw'}"])
    if usage:
        groups.append(["--volume", f"{plugin_dir(host)}:{CONTAINER_PLUGIN_DIR}:ro"])
        groups.append(["--volume", f"{ledger_dir(host)}:{CONTAINER_LEDGER_DIR}:rw"])
        names = container_key_names(host.key_names)
        if names is not None:
            groups.append(["--volume", f"{host.key_names}:{names}:ro"])
        for source, target in container_mounts(host.budgets, budgets):
            if ":" in source:  # the budgets file's own path is checked with the host file
                raise ConfigError(
                    f"budgets: its price file {source!r}: a docker volume path cannot contain ':'",
                    key="budgets",
                )
            groups.append(["--volume", f"{source}:{target}:ro"])
    if host.api_key_env or host.api_key_file:
        groups.append(["--env", "VLLM_API_KEY"])  # value from the script's environment
    env = dict(host.extra_env)
    if usage:
        extra_path = env.get("PYTHONPATH")
        env["PYTHONPATH"] = CONTAINER_PLUGIN_DIR + (f":{extra_path}" if extra_path else "")
        env[ROOT_ENV] = CONTAINER_LEDGER_DIR
        env[WRITERS_ENV] = str(host.api_server_count)
        env[PORT_ENV] = str(host.port)
        if tz is not None:  # recorded in the root as ROOT/zone by the plugin
            env[ZONE_ENV] = tz
        env.update(middleware_env(host, container_key_names(host.key_names)))
        if host.budgets is not None:
            env.update(budgets_env(container_budgets(host.budgets)))
    for name in sorted(env):
        groups.append(["--env", f"{env_name(name)}={env[name]}"])
    groups.append(["--entrypoint", "vllm"])
    groups.append([host.image])
    args = serve_args(host, mode="docker", usage=usage)
    groups.append([*args[:2]])
    groups += _flag_groups(args[2:])
    return groups


def _flag_groups(args: list[str]) -> list[list[Word]]:
    """``--flag value`` pairs on one line each; a lone flag or value on its own."""
    groups: list[list[Word]] = []
    i = 0
    while i < len(args):
        if args[i].startswith("-") and i + 1 < len(args) and not args[i + 1].startswith("-"):
            groups.append([args[i], args[i + 1]])
            i += 2
        else:
            groups.append([args[i]])
            i += 1
    return groups


def _command(groups: list[list[Word]]) -> list[str]:
    lines = [" ".join(q(w) for w in g) for g in groups]
    return [
        (line if i == 0 else "  " + line) + (" \\" if i < len(lines) - 1 else "")
        for i, line in enumerate(lines)
    ]


def _docker_run(
    host: Host, usage: bool, tz: str | None = None, budgets: BudgetsFile | None = None
) -> list[str]:
    return _command(docker_run_words(host, usage, tz, budgets))


def _bare_exec(host: Host, usage: bool) -> list[str]:
    args = serve_args(host, mode="bare", usage=usage)
    groups: list[list[Word]] = [["exec", "vllm", *args[:2]], *_flag_groups(args[2:])]
    return _command(groups)
