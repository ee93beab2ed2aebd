"""The attribution middleware: whose each request is, learnt in passing, never in the way.

vLLM adds it to each API server with ``--middleware vllm_ledger.middleware.LedgerMiddleware``
(the launch files ``render`` writes do so whenever usage is on; docs/attribution.md shows it
for a hand-written ``vllm serve``). For each POST to a route that reaches the engine it:

* makes sure vLLM builds its request id from an ``X-Request-Id`` (the client's, kept as it
  is; else one it makes, 32 hex digits, the form vLLM's own ids have), so that ``record()``
  can join the finished request to it (``write/tags.py``);
* names the caller: the bearer key (``write/keys.py``: an operator's name or ``key:`` and 8
  hex digits, never the key), the body's ``model`` (a served name or a LoRA adapter), the
  body's ``user`` when ``VLLM_LEDGER_ATTRIBUTE_USER=1``, and the header an upstream proxy sets
  when ``VLLM_LEDGER_TENANT_HEADER`` names it;
* reads the body as it streams to vLLM (``write/bodyscan.py``): nothing is buffered beyond
  the chunk in hand, and the scan stops once it has what it needs. The first chunk is taken
  before vLLM asks for it, to see whether the body names a ``request_id`` of its own (vLLM
  prefers a header to it: the middleware then adds none).

It never changes a response, never blocks and never fails a request: any fault is counted
(``TagBook.fault``: ``fault`` in the ledger) and the request goes through untagged. Standard
library only: this runs inside vLLM.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from vllm_ledger.format.overbudget import Over, OverBudget
from vllm_ledger.units import (
    ATTRIBUTE_USER_ENV,
    DISABLE_ENV,
    KEY_NAMES_ENV,
    ROOT_ENV,
    TENANT_HEADER_ENV,
)
from vllm_ledger.write import keys
from vllm_ledger.write.bodyscan import BodyScan
from vllm_ledger.write.tags import BOOK, Entry, TagBook

logger = logging.getLogger("vllm.ledger.middleware")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

USER_ENV = ATTRIBUTE_USER_ENV  # the switches it reads (``units.py`` spells every one)
MAX_LABEL_CHARS = 128  # a user or tenant longer than this is cut here

# Routes whose POSTs reach the engine; the first three are judged aborted when they end with
# no finished request (the others may end without one by design).
GENERATION_PATHS = frozenset({"/v1/completions", "/v1/chat/completions", "/v1/responses"})
ENGINE_PREFIXES = ("/v1/", "/v2/", "/inference/", "/pooling", "/classify", "/score", "/rerank")
_WANTED = (b"model", b"user", b"request_id")
_REQUEST_ID = b"x-request-id"
_AUTHORIZATION = b"authorization"


class Settings:
    """What the middleware reads, from the environment vLLM runs in (never raises: a setting
    that cannot be used is logged and left off)."""

    def __init__(self, env: MutableMapping[str, str] | os._Environ[str]) -> None:
        self.active = False
        self.user = env.get(ATTRIBUTE_USER_ENV, "").strip() not in ("", "0")
        header = env.get(TENANT_HEADER_ENV, "").strip().lower()
        self.tenant_header = header.encode("latin-1") if header.isascii() and header else b""
        self.labels: keys.KeyLabels | None = None
        self.root: Path | None = None
        root_text = env.get(ROOT_ENV, "").strip()
        if not root_text or env.get(DISABLE_ENV, "").strip() not in ("", "0"):
            return
        root = self.root = Path(root_text).expanduser()
        try:
            names_path = env.get(KEY_NAMES_ENV, "").strip()
            names = keys.read_names(Path(names_path)) if names_path else {}
        except keys.KeyNamesError as exc:
            logger.error(
                "vllm-ledger: %s: %s; keys are named key:<hash> instead (docs/attribution.md)",
                KEY_NAMES_ENV,
                exc,
            )
            names = {}
        try:
            self.labels = keys.KeyLabels(keys.root_secret(root), names)
        except OSError as exc:
            logger.error(
                "vllm-ledger: no key names (%s): requests are attributed without their key", exc
            )
        self.active = True


class LedgerMiddleware:
    """The ASGI middleware vLLM's ``--middleware`` takes (``app.add_middleware``)."""

    def __init__(
        self,
        app: App,
        book: TagBook = BOOK,
        env: Any = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.book = book
        try:
            self.settings = Settings(os.environ if env is None else env)
        except Exception as exc:  # never break vLLM's start-up
            logger.error("vllm-ledger: attribution off: %s", exc)
            self.settings = Settings({})
        # Hard budgets (docs/budgets.md): who the enforcer says is over, refreshed from its
        # file at most once a second; a missing or stale file refuses nothing.
        root = self.settings.root
        self.over = OverBudget(root, clock, monotonic) if root is not None else None
        self.refused_total = 0
        if self.settings.active:
            logger.info(
                "vllm-ledger: attribution on (key, adapter%s%s)",
                ", user" if self.settings.user else "",
                f", tenant from {self.settings.tenant_header.decode()}"
                if self.settings.tenant_header
                else "",
            )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope.get("type") != "http"
            or scope.get("method") != "POST"
            or not self.settings.active
            or not self.book.consumer
            or not str(scope.get("path", "")).startswith(ENGINE_PREFIXES)
        ):
            await self.app(scope, receive, send)
            return
        try:
            request = _Request(self, scope)
            over = self.over
            refused = None
            if over is not None:
                over.refresh()
                if over.over:
                    refused = request.refused_by_headers()
        except Exception:
            self.book.fault()
            await self.app(scope, receive, send)
            return
        if refused is not None:
            await request.refuse(send, refused)
            return
        # The request's whole run is here, not in a coroutine of its own: each time the app
        # resumes (every output it waits for), it passes through one frame of ours, not two.
        book = self.book
        try:
            first = await receive()
        except Exception:
            book.fault()
            raise
        scope, refused = request.start(first)
        if refused is not None:
            await request.refuse(send, refused)
            return
        request.receive, request.send, request.first = receive, send, first
        try:
            await self.app(scope, request.receive_body, request.send_watched)
        finally:
            entry = request.entry
            if entry is not None:
                try:
                    book.end(entry, request.status)
                except Exception:
                    book.fault()


class _Request:
    """One tagged request: its headers read, its body scanned, its end told to the book."""

    __slots__ = (
        "book",
        "entry",
        "first",
        "key",
        "mw",
        "receive",
        "scan",
        "scope",
        "send",
        "status",
        "tenant",
        "x",
    )

    def __init__(self, mw: LedgerMiddleware, scope: Scope) -> None:
        self.mw = mw
        self.book = mw.book
        self.scope = scope
        self.x = ""
        self.key = ""
        self.tenant = ""
        self.status: int | None = None
        self.entry: Entry | None = None
        self.first: Message | None = None  # the first chunk, scanned already, for the app
        self.receive: Receive | None = None  # the server's
        self.send: Send | None = None
        tenant_header = mw.settings.tenant_header
        for name, value in scope.get("headers") or ():
            if name == _REQUEST_ID:
                self.x = value.decode("latin-1")
            elif name == _AUTHORIZATION:
                self.key = self._key_label(value)
            elif tenant_header and name == tenant_header:
                self.tenant = _label(value.decode("latin-1"))
        self.scan = BodyScan(_WANTED)

    def refused_by_headers(self) -> Over | None:
        """The hard budget the request's key or tenant is past, if the enforcer says so."""
        over = self.mw.over
        if over is None or not over.over:
            return None
        if self.key:
            got = over.refused("key", self.key)
            if got is not None:
                return got
        return over.refused("tenant", self.tenant) if self.tenant else None

    def refused_by_body(self) -> Over | None:
        """The hard budget the body's model or user is past (where the first chunk named
        them: a field further on is not waited for)."""
        over = self.mw.over
        if over is None or not over.over:
            return None
        model = self.scan.value(b"model")
        if model is not None:
            got = over.refused("adapter", _label(model))
            if got is not None:
                return got
        user = self.scan.value(b"user") if self.mw.settings.user else None
        return over.refused("user", _label(user)) if user is not None else None

    async def refuse(self, send: Send, over: Over) -> None:
        """Answer 429 before the request reaches the engine: OpenAI's error shape, and
        ``Retry-After`` at the end of the budget's period. Counted in the ledger."""
        now = time.time()
        wait_s = max(1, math.ceil(over.until_ts - now))
        until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(over.until_ts))
        body = json.dumps(
            {
                "error": {
                    "message": (
                        f"{over.kind} {over.value!r} is over its budget {over.budget!r} until "
                        f"{until}: retry after that (docs/budgets.md)"
                    ),
                    "type": "insufficient_quota",
                    "param": None,
                    "code": "budget_exceeded",
                }
            },
            ensure_ascii=True,
        ).encode()
        self.mw.refused_total += 1
        self.book.refused((self.key, "", "", self.tenant))
        await send(
            {
                "type": "http.response.start",
                "status": 429,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", str(wait_s).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def _key_label(self, value: bytes) -> str:
        scheme, _, token = value.strip().partition(b" ")
        token = token.strip()
        labels = self.mw.settings.labels
        if scheme.lower() != b"bearer" or not token or labels is None:
            return ""
        return labels.label(token)

    def start(self, first: Message) -> tuple[Scope, Over | None]:
        """With the first chunk in hand: the hard budget its model or user is past (then
        nothing else), else the scope vLLM gets, the request's id chosen and its entry open.
        A fault in either is counted and the request goes on (untagged where it must)."""
        try:
            body = first.get("body") or b""
            scan = self.scan
            if first.get("more_body", False) or not scan.whole(body):
                scan.feed(body)
            over = self.mw.over
            refused = self.refused_by_body() if over is not None and over.over else None
        except Exception:
            self.book.fault()
            refused = None
        if refused is not None:
            return self.scope, refused
        try:
            return self._begin(first), None
        except Exception:
            self.book.fault()
            return self.scope, None

    async def receive_body(self) -> Message:
        """The app's ``receive``: the first chunk again, then the server's, each scanned."""
        first = self.first
        if first is not None:  # scanned already
            self.first = None
            return first
        assert self.receive is not None
        message = await self.receive()
        if self.entry is not None:
            try:
                self._feed(message)
            except Exception:
                self.book.fault()
                self.entry = None
        return message

    def send_watched(self, message: Message) -> Awaitable[None]:
        """The app's ``send``: the response's status noted, the server's awaitable handed
        back as it is (no coroutine of ours: each chunk of a stream costs one check here and
        no extra frame to await)."""
        if self.status is None and message.get("type") == "http.response.start":
            self.status = message.get("status")
        assert self.send is not None
        return self.send(message)

    def _begin(self, first: Message) -> Scope:
        """Choose the id (the first chunk scanned), open the entry; the scope vLLM gets."""
        scope = self.scope
        if not self.x:
            body_id = self.scan.value(b"request_id")
            whole = not first.get("more_body", False)
            if body_id is not None and (whole or self.scan.done):
                self.x = body_id
            else:
                self.x = _new_id()
                scope = dict(scope)
                scope["headers"] = [*(scope.get("headers") or ()), (_REQUEST_ID, self.x.encode())]
        path = str(scope.get("path", ""))
        self.entry = self.book.begin(self.x, judge_abort=path in GENERATION_PATHS)
        self._name_if_done(first)
        return scope

    def _feed(self, message: Message) -> None:
        if message is not None and message.get("type") == "http.request":
            self.scan.feed(message.get("body") or b"")
            self._name_if_done(message)

    def _name_if_done(self, message: Message) -> None:
        entry = self.entry
        if entry is None or not (self.scan.done or not message.get("more_body", False)):
            return
        scan = self.scan
        model = scan.value(b"model")
        user = scan.value(b"user") if self.mw.settings.user else None
        model = "" if model is None else _label(model)
        user = "" if user is None else _label(user)
        self.book.named(entry, self.key, model, user, self.tenant)
        self.scan.done = True  # nothing more to look for in later chunks


_ID_PREFIX = os.urandom(8).hex()  # this process's: no two processes make the same id
_id_counter = itertools.count(1)


def _new_id() -> str:
    """A request id as vLLM's own look (32 hex digits), unique in this process and apart from
    every other's (a random prefix per process, a counter after it); cheaper than 16 random
    bytes a request."""
    return f"{_ID_PREFIX}{next(_id_counter):016x}"


def _label(text: str) -> str:
    """A user, tenant or model as a label: at most ``MAX_LABEL_CHARS``, no control characters
    (the readers print every label terminal-safe as well)."""
    text = text.strip()[:MAX_LABEL_CHARS]
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else "?" for c in text)
