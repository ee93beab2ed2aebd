"""A compose.yaml from a host file: docker mode's ``docker run`` as a compose service. Pure.

``compose_file(host, usage=, tz=)`` is ``render --mode compose``. One service, ``vllm``, with
what docker mode passes to ``docker run``: the image, ``--entrypoint vllm`` and the same
``serve MODEL ...`` argv (``command``), the published port, the bind mounts (long syntax, so a
path is never split on ':'), the GPUs as a device reservation
(``deploy.resources.reservations.devices``), ``shm_size``, the environment (the ledger's with
``usage``), ``restart``, ``stop_grace_period`` above ``--shutdown-timeout`` and, with ``usage``,
the hostname of the machine (``${HOSTNAME}``, as docker mode sets it); the attribution
middleware's settings and its key names file, mounted read-only (``deploy/attribution.py``).

The API key is never in the file: a key variable is taken from the environment of
``docker compose up`` (``${NAME:?...}``); a key file becomes a compose secret, mounted at
``/run/secrets/vllm_api_key``, and a ``/bin/sh`` entrypoint reads it into ``VLLM_API_KEY``
before it ``exec``s ``vllm`` with the same argv.

YAML is written by hand: keys are fixed words, every value a JSON string or number (JSON's
double-quoted strings are YAML's), and ``$`` in a host-file value doubled so compose does not
interpolate it.

With ``usage`` a second service, ``ledger-exporter``, serves the ledger to Prometheus: vLLM's
image running the bundle's ``vllm_ledger`` over the same ledger folder, mounted read-only,
published at the address ``observability``'s Prometheus scrapes (``observe/stack.py``).
"""

from __future__ import annotations

import json
import shlex

from vllm_ledger import __version__
from vllm_ledger.deploy.attribution import container_key_names
from vllm_ledger.deploy.budgets import (
    BudgetsFile,
    budgets_env,
    budgets_for,
    container_budgets,
    container_mounts,
)
from vllm_ledger.deploy.host import Host, check_for
from vllm_ledger.deploy.kubernetes_pod import exporter_args
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
from vllm_ledger.observe.stack import EXPORTER_LISTEN, EXPORTER_PORT
from vllm_ledger.units import PORT_ENV, ROOT_ENV, WRITERS_ENV, ZONE_ENV

SERVICE = "vllm"
EXPORTER_SERVICE = "ledger-exporter"
SECRET = "vllm_api_key"
HOSTNAME = "${HOSTNAME:?export HOSTNAME (this machine's name) before docker compose up}"


def _s(value: str) -> str:
    """A host-file string as a YAML scalar compose reads back as is."""
    return json.dumps(value.replace("$", "$$"), ensure_ascii=False)


def _raw(value: str) -> str:
    """A fixed string (may use compose interpolation on purpose)."""
    return json.dumps(value, ensure_ascii=False)


def _environment(host: Host, usage: bool, tz: str | None) -> dict[str, str]:
    env = {env_name(k): _s(v) for k, v in host.extra_env}
    if usage:
        extra_path = dict(host.extra_env).get("PYTHONPATH")
        env["PYTHONPATH"] = _s(CONTAINER_PLUGIN_DIR + (f":{extra_path}" if extra_path else ""))
        env[ROOT_ENV] = _raw(CONTAINER_LEDGER_DIR)
        env[WRITERS_ENV] = _raw(str(host.api_server_count))
        env[PORT_ENV] = _raw(str(host.port))
        if tz is not None:
            env[ZONE_ENV] = _s(tz)
        env.update((k, _s(v)) for k, v in middleware_env(host, container_key_names(host.key_names)))
        if host.budgets is not None:
            env.update((k, _s(v)) for k, v in budgets_env(container_budgets(host.budgets)))
    if host.api_key_env:
        name = env_name(host.api_key_env, "api_key.env")
        env["VLLM_API_KEY"] = _raw(f"${{{name}:?the API key variable {name} is not set}}")
    return env


def compose_file(
    host: Host, *, usage: bool = False, tz: str | None = None, budgets: BudgetsFile | None = None
) -> str:
    """The compose.yaml text. Raises ConfigError if the host file does not fit docker mode.
    ``budgets``: the host's budgets file, read already (else it is read here)."""
    check_for(host, "docker", usage)
    check_tz(tz, usage)
    budgets = budgets_for(host, usage, budgets)
    assert host.image is not None
    out = [
        f"# vLLM compose file (compose mode{', usage ledger on' if usage else ''}), rendered by "
        f"vllm-ledger {__version__}.",
        "# Do not edit: change the host file, render again and review the diff.",
        "# Start: docker compose -f FILE up -d   Stop: docker compose -f FILE down",
    ]
    if usage:
        out.append(
            f"# Before up: mkdir -p {shlex.quote(ledger_dir(host))}; the plugin bundle must be "
            f"in {plugin_dir(host)} (vllm-ledger bundle --output {shlex.quote(plugin_dir(host))})."
        )
    if budgets is not None:
        out.append(
            "# The budgets file (docs/budgets.md) is mounted read-only: it must be there before "
            "up (docker makes a folder in its place)."
        )
    out += ["services:", f"  {SERVICE}:", f"    image: {_s(host.image)}"]
    out.append(f"    container_name: {_s(host.name)}")
    if usage:
        out.append(f"    hostname: {_raw(HOSTNAME)}")
    out.append(f"    restart: {_s(host.restart)}")
    args = serve_args(host, mode="docker", usage=usage)
    if host.api_key_file:
        script = (
            f'VLLM_API_KEY="$$(cat /run/secrets/{SECRET})" || exit 1; '
            'export VLLM_API_KEY; exec vllm "$$@"'
        )
        out.append("    entrypoint:")
        out += [f"      - {_raw(w)}" for w in ("/bin/sh", "-c", script, "sh")]
    else:
        out.append(f"    entrypoint: [{_raw('vllm')}]")
    out.append("    command:")
    out += [f"      - {_s(w)}" for w in args]
    out += [
        "    ports:",
        f"      - target: {host.port}",
        f"        published: {_raw(str(host.port))}",
        f"        host_ip: {_s(host.host)}",
        "        protocol: tcp",
    ]
    volumes = _volumes(host, usage, budgets)
    if volumes:
        out.append("    volumes:")
        for source, target, read_only in volumes:
            out += [
                "      - type: bind",
                f"        source: {_s(source)}",
                f"        target: {_s(target)}",
                f"        read_only: {'true' if read_only else 'false'}",
            ]
    env = _environment(host, usage, tz)
    if env:
        out.append("    environment:")
        out += [f"      {name}: {env[name]}" for name in sorted(env)]
    if host.api_key_file:
        out += ["    secrets:", f"      - {SECRET}"]
    out.append(f"    shm_size: {_s(host.shm_size)}")
    timeout = shutdown_timeout_s(host, usage)
    if timeout is not None:
        out.append(f"    stop_grace_period: {_raw(f'{timeout + DOCKER_STOP_MARGIN_S}s')}")
    out.append("    stop_signal: SIGTERM")
    out += _gpus(host)
    if usage:
        out += _exporter_service(host, tz, budgets)
    if host.api_key_file:
        out += ["secrets:", f"  {SECRET}:", f"    file: {_s(host.api_key_file)}"]
    return "\n".join(out) + "\n"


def _volumes(host: Host, usage: bool, budgets: BudgetsFile | None) -> list[tuple[str, str, bool]]:
    """(source, target, read-only) of every bind mount."""
    volumes = [(v.host, v.container, v.read_only) for v in host.volumes]
    if usage:
        volumes.append((plugin_dir(host), CONTAINER_PLUGIN_DIR, True))
        volumes.append((ledger_dir(host), CONTAINER_LEDGER_DIR, False))
        names = container_key_names(host.key_names)
        if host.key_names is not None and names is not None:
            volumes.append((host.key_names, names, True))
        volumes += [(s, t, True) for s, t in container_mounts(host.budgets, budgets)]
    return volumes


def _exporter_service(host: Host, tz: str | None, budgets: BudgetsFile | None) -> list[str]:
    """The ledger exporter beside vLLM: vLLM's image running the bundle's ``vllm_ledger``
    (``python3 -m vllm_ledger exporter``, as the Kubernetes sidecar's argv), the same ledger
    folder read-only, published at ``observe.stack.EXPORTER_LISTEN`` where the stack scrapes it."""
    path = container_budgets(host.budgets) if budgets and host.budgets is not None else None
    published_ip = EXPORTER_LISTEN.rpartition(":")[0]
    out = [f"  {EXPORTER_SERVICE}:", f"    image: {_s(host.image or '')}"]
    out.append(f"    container_name: {_s(host.name + '-' + EXPORTER_SERVICE)}")
    out.append(f"    restart: {_s(host.restart)}")
    out.append(f"    entrypoint: [{_raw('python3')}, {_raw('-m')}, {_raw('vllm_ledger')}]")
    out.append("    command:")
    out += [f"      - {_s(w)}" for w in exporter_args(tz, path)[1:]]
    out += [
        "    ports:",
        f"      - target: {EXPORTER_PORT}",
        f"        published: {_raw(str(EXPORTER_PORT))}",
        f"        host_ip: {_raw(published_ip)}",
        "        protocol: tcp",
        "    volumes:",
    ]
    mounts = [(plugin_dir(host), CONTAINER_PLUGIN_DIR), (ledger_dir(host), CONTAINER_LEDGER_DIR)]
    mounts += container_mounts(host.budgets, budgets)
    for source, target in mounts:
        out += [
            "      - type: bind",
            f"        source: {_s(source)}",
            f"        target: {_s(target)}",
            "        read_only: true",
        ]
    out += ["    environment:", f"      PYTHONPATH: {_raw(CONTAINER_PLUGIN_DIR)}"]
    return [*out, "    stop_signal: SIGTERM"]


def _gpus(host: Host) -> list[str]:
    if host.gpus == "all":
        which: list[str] = ["              count: all"]
    elif host.gpus:
        ids = ", ".join(_raw(str(g)) for g in host.gpus)
        which = [f"              device_ids: [{ids}]"]
    else:
        return []
    return [
        "    deploy:",
        "      resources:",
        "        reservations:",
        "          devices:",
        "            - driver: nvidia",
        *which,
        "              capabilities: [gpu]",
    ]


__all__ = ["EXPORTER_SERVICE", "SECRET", "SERVICE", "compose_file"]
