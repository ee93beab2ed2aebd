"""Validate the notification config's ``usage`` object before anything runs. Pure.

Each entry is keyed by the instance's node port::

    {"usage": {"19001": {"target": "example-primary",
                         "code_dir": "/srv/LLMDeploy", "data_dir": "/srv/artifacts/usage"}}}

Optional fields: ``host`` (IPv4/IPv6 address or host name for the HTTP ``/health`` probe
and the label; only an IP's last part is ever shown), ``python`` (``python3``, a
``python3.N`` name or an absolute path; default ``python3``) and ``budgets`` (the host's
budgets file, an absolute path as the others: the status command is run with
``--budgets FILE``, as ``ssh-key-line --budgets FILE`` pins it).

A target is an SSH alias or host name, optionally ``user@``; paths are absolute, normalised
and made of ``A-Z a-z 0-9 . _ - + / @ ,`` only, so the remote command built from them needs
no quoting and cannot carry a shell metacharacter. A bad entry is refused with one line
naming its key and field; the other entries still run.

``transport`` (optional) says how the status is fetched (``bot/transport.py``):

- ``ssh`` (the default): the fields above, over SSH to the forced command;
- ``local``: the notifier runs the status command itself, for a root on this machine:
  ``{"transport": "local", "data_dir": "/srv/artifacts/usage"}``, with optional ``code_dir``
  and ``python`` (default: the notifier's own package and interpreter), ``budgets``, ``host``;
- ``http``: the exporter's ``/status`` (``exporter --status-token-file``):
  ``{"transport": "http", "url": "http://vllm-0.vllm:9464/status",
  "token_file": "/etc/notify/status_token"}``, with optional ``host``. The URL is
  ``http://`` or ``https://``, its host and port, and a path; the token file an absolute path.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_ledger.errors import BadArgument, ConfigError, FieldError
from vllm_ledger.strictjson import load_file
from vllm_ledger.units import is_plain_path

MAX_TARGET_CHARS = 253
MAX_PATH_CHARS = 1024
MAX_CONFIG_BYTES = 1024 * 1024
MAX_URL_CHARS = 2048
FIELDS_REQUIRED = ("target", "code_dir", "data_dir")
FIELDS_OPTIONAL = ("host", "python", "budgets")
TRANSPORTS: tuple[str, ...] = ("ssh", "local", "http")
# the fields each transport takes: (required, optional), ``transport`` itself aside
TRANSPORT_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "ssh": (FIELDS_REQUIRED, FIELDS_OPTIONAL),
    "local": (("data_dir",), ("code_dir", "python", "host", "budgets")),
    "http": (("url", "token_file"), ("host",)),
}
LOCAL_TARGET = "local"  # a local entry's ``target``: its hosts group by data dir

_PORT_KEY = re.compile(r"^[1-9][0-9]{0,4}$")
_HOST = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9._-]{0,251}[A-Za-z0-9_])?$")
_USER = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$")
_PYTHON_NAME = re.compile(r"^python3(?:\.[0-9]{1,2})?$")
_URL = re.compile(r"^https?://[A-Za-z0-9._~%!$&'()*+,;=:@/\[\]?-]+$")


@dataclass(frozen=True)
class Target:
    """One validated usage entry: every field is safe to put in an argv or remote command.

    ``transport`` ssh | local | http. A local entry's ``target`` is ``local`` and its
    ``code_dir`` empty when it runs the notifier's own package, its ``python`` empty for the
    notifier's own interpreter; an http entry's ``target`` is
    its ``url`` and its ``code_dir``/``data_dir`` are empty (the exporter knows its root)."""

    port: int
    target: str
    code_dir: str
    data_dir: str
    python: str = "python3"
    host: str | None = None
    budgets: str | None = None  # the host's budgets file (status --budgets)
    transport: str = "ssh"
    url: str | None = None  # http: the exporter's /status
    token_file: str | None = None  # http: the bearer token's file


@dataclass(frozen=True)
class Refusal:
    key: str
    field: str
    message: str

    def __str__(self) -> str:
        return (
            f"usage[{self.key}].{self.field}: {self.message}"
            if self.field
            else (f"usage[{self.key}]: {self.message}")
        )


def _shown(value: object) -> str:
    """A config value as it may appear in a one-line error: escaped and bounded."""
    text = ascii(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_port_key(key: object) -> int:
    if not isinstance(key, str) or not _PORT_KEY.fullmatch(key) or not 1 <= int(key) <= 65535:
        raise FieldError("", f"key {_shown(key)} is not a port 1..65535")
    return int(key)


def check_target(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise FieldError("target", "missing", hint="give the SSH alias or host name")
    if len(value) > MAX_TARGET_CHARS:
        raise FieldError("target", f"longer than {MAX_TARGET_CHARS} characters")
    user, sep, host = value.rpartition("@")
    if (sep and not _USER.fullmatch(user)) or not _HOST.fullmatch(host):
        raise FieldError(
            "target",
            f"{_shown(value)} is not an SSH alias or host name "
            "(letters, digits, . _ - and an optional user@; no leading -)",
        )
    return value


def check_path(field: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise FieldError(field, "missing", hint="give an absolute path")
    if len(value) > MAX_PATH_CHARS:
        raise FieldError(field, f"longer than {MAX_PATH_CHARS} characters")
    if not is_plain_path(value):
        raise FieldError(
            field,
            f"{_shown(value)} is not an absolute path of letters, digits and . _ - + / @ , only",
        )
    if posixpath.normpath(value) != value:
        raise FieldError(
            field,
            f"{_shown(value)} is not normalised",
            hint=f"write it as {_shown(posixpath.normpath(value))}",
        )
    return value


def check_python(value: object) -> str:
    if isinstance(value, str) and _PYTHON_NAME.fullmatch(value):
        return value
    if isinstance(value, str) and value.startswith("/"):
        return check_path("python", value)
    raise FieldError("python", f"{_shown(value)} is not python3, python3.N or an absolute path")


def check_host(value: object) -> str:
    if isinstance(value, str) and "%" not in value:  # no IPv6 scope: it may hold anything
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            if len(value) <= MAX_TARGET_CHARS and _HOST.fullmatch(value):
                return value
    raise FieldError("host", f"{_shown(value)} is not an IP address or host name")


def check_url(value: object) -> str:
    """An ``http://`` or ``https://`` URL of printable ASCII, no blanks, no ``user@``."""
    if not isinstance(value, str) or not value:
        raise FieldError("url", "missing", hint="give the exporter's /status URL")
    if len(value) > MAX_URL_CHARS:
        raise FieldError("url", f"longer than {MAX_URL_CHARS} characters")
    authority = value.split("://", 1)[-1].split("/", 1)[0]
    if not _URL.fullmatch(value) or not authority or "@" in authority:
        raise FieldError(
            "url",
            f"{_shown(value)} is not an http:// or https:// URL of a host (no user@), "
            "e.g. http://vllm-0.vllm:9464/status",
        )
    return value


def check_transport(entry: Mapping[Any, Any]) -> str:
    transport = entry.get("transport", "ssh")
    if transport not in TRANSPORTS:
        raise FieldError("transport", f"{_shown(transport)} is not one of {', '.join(TRANSPORTS)}")
    known = ("transport", *TRANSPORT_FIELDS[transport][0], *TRANSPORT_FIELDS[transport][1])
    unknown = sorted(str(k) for k in entry if k not in known)
    if unknown:
        raise FieldError(
            _shown(unknown[0]).strip("'"),
            f"unknown field of a {transport} entry (known: {', '.join(known)})",
        )
    return str(transport)


def check_entry(key: object, entry: object) -> Target:
    port = check_port_key(key)
    if not isinstance(entry, Mapping):
        raise FieldError("", "not an object with target, code_dir and data_dir")
    transport = check_transport(entry)
    host = None if entry.get("host") is None else check_host(entry.get("host"))
    if transport == "http":
        url = check_url(entry.get("url"))
        token_file = check_path("token_file", entry.get("token_file"))
        return Target(
            port, url, "", "", host=host, transport="http", url=url, token_file=token_file
        )
    budgets = None if entry.get("budgets") is None else check_path("budgets", entry["budgets"])
    if transport == "local":
        code_dir = entry.get("code_dir")
        return Target(
            port=port,
            target=LOCAL_TARGET,
            code_dir="" if code_dir is None else check_path("code_dir", code_dir),
            data_dir=check_path("data_dir", entry.get("data_dir")),
            python="" if entry.get("python") is None else check_python(entry["python"]),
            host=host,
            budgets=budgets,
            transport="local",
        )
    return Target(
        port=port,
        target=check_target(entry.get("target")),
        code_dir=check_path("code_dir", entry.get("code_dir")),
        data_dir=check_path("data_dir", entry.get("data_dir")),
        python=check_python(entry.get("python", "python3")),
        host=host,
        budgets=budgets,
    )


def validate_usage(usage: object) -> tuple[list[Target], list[Refusal]]:
    """The entries that passed, sorted by port, and one refusal per entry that did not."""
    if not isinstance(usage, Mapping):
        raise ConfigError(
            "the usage object must map node ports to {target, code_dir, data_dir}", key="usage"
        )
    targets: list[Target] = []
    refusals: list[Refusal] = []
    for key, entry in usage.items():
        try:
            targets.append(check_entry(key, entry))
        except FieldError as bad:
            refusals.append(Refusal(_shown(key).strip("'"), bad.field, bad.message))
    return sorted(targets, key=lambda t: t.port), refusals


def read_config(path: Path) -> Mapping[str, Any]:
    """A notification config file read whole: a JSON object with a ``usage`` object (not yet
    validated); a file that cannot be read is a ``BadArgument`` naming ``path``. The one reader
    of the file: ``load_usage`` here, ``notify/service.load_config`` for the notifier."""
    try:
        doc: Any = load_file(
            path, max_bytes=MAX_CONFIG_BYTES, hint="is it the notification config?"
        )
    except OSError as exc:
        raise BadArgument(
            f"cannot read {path}: {exc.strerror}", argument="path", value=path
        ) from exc
    if not isinstance(doc, Mapping) or "usage" not in doc:
        raise ConfigError(
            f'{path} has no "usage" object',
            key="usage",
            hint='add {"usage": {"PORT": {"target": ..., "code_dir": ..., "data_dir": ...}}}',
        )
    return doc


def load_usage(path: Path) -> tuple[list[Target], list[Refusal]]:
    """Read a notification config file (JSON with a ``usage`` object) and validate it; a file
    that cannot be read is a ``BadArgument`` naming ``path``."""
    return validate_usage(read_config(path)["usage"])


__all__ = [
    "LOCAL_TARGET",
    "TRANSPORTS",
    "FieldError",
    "Refusal",
    "Target",
    "check_entry",
    "check_url",
    "load_usage",
    "read_config",
    "validate_usage",
]
