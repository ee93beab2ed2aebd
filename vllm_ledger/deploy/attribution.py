"""Whose tokens, in the launch files: the middleware vLLM loads and the settings it reads. Pure.

With usage on, every mode passes ``--middleware vllm_ledger.middleware.LedgerMiddleware`` to
``vllm serve`` (``launch.serve_args``): each request is then named by its bearer key and the
body's ``model`` (a served name or a LoRA adapter), and the ledger credits each finished
request to them (docs/attribution.md). The host file's ``attribution`` object switches on more,
each as the environment variable the middleware reads (``attribution_env``):

* ``user``: the body's ``user`` field (OpenAI's end-user id), ``VLLM_LEDGER_ATTRIBUTE_USER=1``;
* ``tenant_header``: a header an upstream proxy sets, credited as the tenant,
  ``VLLM_LEDGER_TENANT_HEADER``; a header that carries a credential (or the request id the join
  uses) is refused (``tenant_header_problem``): its value would be stored as a label;
* ``key_names``: the operator's names for keys (name -> the key's SHA-256),
  ``VLLM_LEDGER_KEY_NAMES``: the file on the host outside a container, mounted read-only at
  ``CONTAINER_KEY_NAMES`` in one (a Secret's volume in Kubernetes), loaded as a credential by
  the systemd unit.
"""

from __future__ import annotations

import posixpath

from vllm_ledger.units import TENANT_HEADER_ENV
from vllm_ledger.write.keys import NAMES_ENV
from vllm_ledger.write.middleware import USER_ENV

MIDDLEWARE = "vllm_ledger.middleware.LedgerMiddleware"  # what --middleware names
MIDDLEWARE_FLAG = "--middleware"
CONTAINER_KEY_NAMES_DIR = "/vllm-ledger/key-names"
KEY_NAMES_FILE = "key-names.json"
CONTAINER_KEY_NAMES = posixpath.join(CONTAINER_KEY_NAMES_DIR, KEY_NAMES_FILE)
ATTRIBUTION_ENV = (USER_ENV, TENANT_HEADER_ENV, NAMES_ENV)

# Headers a tenant label must never be read from, and why (lower case, as the middleware
# compares them): a credential would be stored in the ledger as it is.
NOT_TENANT_HEADERS = {
    "authorization": "it carries the API key",
    "proxy-authorization": "it carries a credential",
    "cookie": "it carries session credentials",
    "x-api-key": "it carries an API key",
    "api-key": "it carries an API key",
    "x-request-id": "it is the request id the ledger joins by",
}


def tenant_header_problem(name: str) -> str | None:
    """Why ``name`` cannot be the tenant's header, or None."""
    why = NOT_TENANT_HEADERS.get(name.lower())
    if why is None:
        return None
    return f"{name!r} cannot name the tenant: {why}, and a label is stored as it is"


def is_ledger_middleware(words: tuple[str, ...], i: int) -> bool:
    """Whether ``words[i]`` (an ``extra_args`` word) names this project's middleware: render
    adds it with usage, and a second copy would see every request twice."""
    word = words[i]
    if word == f"{MIDDLEWARE_FLAG}={MIDDLEWARE}":
        return True
    return word == MIDDLEWARE and i > 0 and words[i - 1] == MIDDLEWARE_FLAG


def middleware_args(usage: bool) -> list[str]:
    """The flag and its value when usage is on, else nothing."""
    return [MIDDLEWARE_FLAG, MIDDLEWARE] if usage else []


def attribution_env(
    user: bool, tenant_header: str | None, key_names: str | None
) -> list[tuple[str, str]]:
    """The middleware's settings (the host file's ``attribution``) as (name, value), in this
    order; ``key_names`` is where vLLM finds the names file (the host's path, a container's, a
    credential's), None for none."""
    env: list[tuple[str, str]] = []
    if user:
        env.append((USER_ENV, "1"))
    if tenant_header is not None:
        env.append((TENANT_HEADER_ENV, tenant_header))
    if key_names is not None:
        env.append((NAMES_ENV, key_names))
    return env


def container_key_names(key_names: str | None) -> str | None:
    """Where a container finds the names file: ``CONTAINER_KEY_NAMES`` when there is one."""
    return CONTAINER_KEY_NAMES if key_names is not None else None


__all__ = [
    "ATTRIBUTION_ENV",
    "CONTAINER_KEY_NAMES",
    "CONTAINER_KEY_NAMES_DIR",
    "KEY_NAMES_FILE",
    "MIDDLEWARE",
    "MIDDLEWARE_FLAG",
    "NOT_TENANT_HEADERS",
    "attribution_env",
    "container_key_names",
    "is_ledger_middleware",
    "middleware_args",
    "tenant_header_problem",
]
