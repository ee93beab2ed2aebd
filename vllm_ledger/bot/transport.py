"""The two ways to a host's status beside SSH: ``local`` and ``http``. Stdlib and our client.

``local``: the notifier runs the very command the forced command runs, on this machine::

    PYTHON -m vllm_ledger status --root DATA_DIR [--budgets FILE] [--ask WORD]

as an argv list (no shell), with ``PYTHONPATH=CODE_DIR`` and ``CODE_DIR`` as its working
folder where the entry names one (else the notifier's own package and interpreter), through
``bot.capped.run_capped``: the same deadline, output cap and process-group kill as ssh, and the
same ``classify`` of its exit and document.

``http``: a GET of the exporter's ``/status`` (``exporter --status-token-file``) through the one
HTTP client (``http/client.py``) with ``Authorization: Bearer TOKEN``, the token read from the
entry's file at each fetch (so a rotated Secret is taken up), within the fetcher's deadline and
at most ``MAX_OUTPUT_BYTES``; an ask is the query ``?ask=WORD``. The answer's body is parsed as
the ssh output is (``formats.status.parse``). Outcomes, in the poller's states:

- 200: the document, ``ok`` (or ``unparseable``);
- no connection, a name that does not resolve, 401 or 403 (a wrong token, as a wrong key over
  ssh): ``unreachable``;
- the deadline passed, or the exporter's own (504): ``timeout``;
- a body over the cap, or an answer the client cannot read: ``unparseable``;
- any other status (404: the exporter serves no status; 5xx: the command failed there):
  ``remote_failed``.
"""

from __future__ import annotations

import errno
import os
import sys
import urllib.parse
from collections.abc import Sequence

from vllm_ledger.bot.validate import Target
from vllm_ledger.errors import (
    AnswerTooLarge,
    BadResponse,
    NotARegularFile,
    RemoteError,
    RemoteTimeout,
    StatusParseError,
)
from vllm_ledger.formats import status as status_format
from vllm_ledger.http import client
from vllm_ledger.infile import read_regular_text

MAX_TOKEN_BYTES = 4096
STATUS_PATH = "/status"
ASK_PARAM = "ask"


def status_argv(
    python: str, data_dir: str, budgets: str | None = None, ask: str | None = None
) -> list[str]:
    """The status command's argv: the forced command's words, without its ``cd`` and env."""
    return [
        python,
        "-m",
        "vllm_ledger",
        "status",
        "--root",
        data_dir,
        *(("--budgets", budgets) if budgets is not None else ()),
        *(("--ask", ask) if ask is not None else ()),
    ]


def local_argv(target: Target, ask: str | None = None) -> list[str]:
    python = target.python or sys.executable
    return status_argv(python, target.data_dir, target.budgets, ask)


def local_env(target: Target) -> dict[str, str] | None:
    """The child's environment: ours, with ``PYTHONPATH=CODE_DIR`` where the entry names one
    (as the forced command sets it); None (ours unchanged) where it does not."""
    if not target.code_dir:
        return None
    return {**os.environ, "PYTHONPATH": target.code_dir}


def read_token(path: str) -> str:
    """A bearer token file: a regular file, at most 4 KiB, one line of printable ASCII."""
    try:
        text = read_regular_text(path, MAX_TOKEN_BYTES).strip()
    except NotARegularFile:
        raise OSError(errno.EINVAL, "not a regular file") from None
    except UnicodeDecodeError:
        raise OSError(errno.EINVAL, "not UTF-8 text") from None
    if not text or any(not 0x21 <= ord(c) <= 0x7E for c in text):
        raise OSError(errno.EINVAL, "must hold one line of printable ASCII, no blanks")
    return text


def status_url(url: str, ask: str | None) -> str:
    if ask is None:
        return url
    sep = "&" if urllib.parse.urlsplit(url).query else "?"
    return f"{url}{sep}{ASK_PARAM}={urllib.parse.quote(ask, safe='')}"


def http_state(status: int) -> str:
    """The poller's state of an answer that is not 200."""
    if status in (401, 403):
        return "unreachable"
    if status == 504:
        return "timeout"
    return "remote_failed"


def fetch_http(
    target: Target, *, deadline_s: float, max_bytes: int, ask: str | None = None
) -> tuple[str, status_format.StatusDoc | None]:
    """GET the exporter's status document; (state, document) as ``bot.poll.classify``."""
    assert target.url is not None and target.token_file is not None
    try:
        token = read_token(target.token_file)
    except OSError:
        return "remote_failed", None  # our side: said by ``poll``'s check of the entry
    try:
        answer = client.get(
            status_url(target.url, ask),
            deadline_s=deadline_s,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            max_bytes=max_bytes,
        )
    except RemoteTimeout:
        return "timeout", None
    except (AnswerTooLarge, BadResponse):
        return "unparseable", None
    except RemoteError:
        return "unreachable", None
    if answer.status != 200:
        return http_state(answer.status), None
    try:
        return "ok", status_format.parse(answer.body, max_bytes=max_bytes)
    except StatusParseError:
        return "unparseable", None


def token_problems(targets: Sequence[Target]) -> list[str]:
    """One line per http entry whose token file cannot be read now (said at start)."""
    lines = []
    for t in targets:
        if t.transport == "http" and t.token_file is not None:
            try:
                read_token(t.token_file)
            except OSError as exc:
                lines.append(f"usage[{t.port}].token_file: {t.token_file}: {exc.strerror}")
    return lines


__all__ = [
    "ASK_PARAM",
    "MAX_TOKEN_BYTES",
    "STATUS_PATH",
    "fetch_http",
    "http_state",
    "local_argv",
    "local_env",
    "read_token",
    "status_argv",
    "status_url",
    "token_problems",
]
