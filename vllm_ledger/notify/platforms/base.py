"""What a chat platform is to the notifier: the types each platform module fills in. Pure.

A ``Platform`` says how a message goes out: its ``body`` (the JSON posted), its ``ok`` (the
success rule on the answer), its ``sign`` where it signs its webhook, its ``url`` where the
configured address is not posted to as is. Its ``inbound``, where the platform sends its own
requests with a user's command, says how one comes in: the route, the secret's setting, the
signature check and the body read into the ``{message_id, text}`` command that
``POST /command`` takes.

Every message is plain text from our own templates with outside strings in it (alert labels
and summaries, instance names), and the templates hold no markup of any platform: so each
platform's ``body`` neutralises its mention and link markup in the whole text (docs/notifier.md,
"Mentions and links"). ``joined`` does it: a word joiner (U+2060: no width, no line break)
after each character that opens such markup where markup could form (``OPENS``: ``<`` before
a tag's first character, ``@`` before a word), so ``@all`` shows as ``@\u2060all`` (read
``@all``) and mentions no one, while ``<0.01`` and ``a @ b`` are left as written, and inside
the ``](`` / ``][`` of every markdown link (``unlinked``). Slack escapes ``&``, ``<`` and
``>`` instead of joining, its documented way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from vllm_ledger.errors import LedgerError
from vllm_ledger.notify.signing import Verdict

WORD_JOINER = "\u2060"
_LINK = re.compile(r"\](?=[(\[])")  # the middle of [text](url) and [text][ref]
# what may follow a character for markup to open there: a tag or Slack's <!x>, <@U>, <#C>,
# <https:...> after "<"; a name, a number or 所有人 after "@" (not a space, a digit after "<")
OPENS = {"<": r"[A-Za-z!?/@#]", "@": r"\w"}

# the body of one command, as ``POST /command`` takes it: {"message_id": ..., "text": ...}
CommandBody = dict[str, object]


class NotACommand(LedgerError, ValueError):
    """A platform request that is valid but carries no command (acknowledged, dropped)."""


@dataclass(frozen=True)
class Challenge:
    """A platform's check of the route (Slack's ``url_verification``): the answer is
    ``{"challenge": value}``."""

    value: str


@dataclass(frozen=True)
class Signed:
    """Where a webhook's signature goes: the URL to post to and fields added to the body."""

    url: str
    fields: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Inbound:
    """The platform's own requests to the notifier, each carrying a user's command.

    ``verify(headers, body, secret, now_ts)`` is called before the body is parsed (header
    names in lower case); ``parse(doc)`` gets the body's JSON and returns the command or a
    ``Challenge``, raises ``NotACommand`` for a request that is not for us and ``ValueError``
    for a bad one. ``body_name`` names the body in the refusal (``bad_event``)."""

    route: str
    secret_file: str  # the config's setting that names the secret's file
    secret_env: str  # the environment variable read when that setting is absent
    verify: Callable[[Mapping[str, str], bytes, bytes, float], Verdict]
    parse: Callable[[object], CommandBody | Challenge]
    body_name: str


def unlinked(text: str) -> str:
    """``text`` with a word joiner inside every ``](`` and ``][``: ``[t](u)`` becomes
    ``[t]\u2060(u)``, a markdown link no more; a ``]`` elsewhere (``usage[19001].target``) is
    left alone."""
    return _LINK.sub("]" + WORD_JOINER, text)


def joined(text: str, after: str) -> str:
    """``text`` with a word joiner after each character in ``after`` where it could open markup
    (``OPENS``: ``@all`` becomes ``@\u2060all``, ``<at`` becomes ``<\u2060at``; ``<0.01`` stays)
    and in every markdown link (``unlinked``): the characters are all still there and read the
    same, and none opens markup any more."""
    for c in after:
        text = re.sub(f"{re.escape(c)}(?={OPENS[c]})", c + WORD_JOINER, text)
    return unlinked(text)


def accepted(status: int, answer: bytes) -> bool:
    """The rule of a platform that says no with its HTTP status: any 2xx is accepted."""
    return 200 <= status <= 299


@dataclass(frozen=True)
class Platform:
    """One chat platform: its outgoing message and, where it has them, its inbound requests."""

    name: str
    body: Callable[[str], dict[str, Any]]  # text -> the JSON posted (signature fields aside)
    ok: Callable[[int, bytes], bool] = accepted  # (HTTP status, answer) -> accepted?
    sign: Callable[[str, str, float], Signed] | None = None  # (url, secret, now_ts)
    url: Callable[[str], str] = str  # the configured address -> the one posted to
    inbound: Inbound | None = None


def error_code(answer: bytes, keys: tuple[str, ...]) -> int | None:
    """The first integer error code (not 0) under ``keys`` in a JSON answer, or None when the
    answer carries none (0, absent, or not JSON: accepted)."""
    try:
        doc = json.loads(answer.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    for key in keys:
        v = doc.get(key)
        if type(v) is int and v != 0:
            return v
    return None


__all__ = [
    "OPENS",
    "WORD_JOINER",
    "Challenge",
    "CommandBody",
    "Inbound",
    "NotACommand",
    "Platform",
    "Signed",
    "accepted",
    "error_code",
    "joined",
    "unlinked",
]
