"""The attribution middleware around a stand-in ASGI app (vLLM's side of the process
boundary): what it tags, what it leaves as it is, and that a fault never fails a request."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest

from vllm_ledger.write import keys
from vllm_ledger.write.middleware import LedgerMiddleware
from vllm_ledger.write.tags import TagBook


class App:
    """Reads the whole body as vLLM does, remembers what it saw, answers 200 (or ``status``)."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.scope: dict[str, Any] = {}
        self.messages: list[dict[str, Any]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.scope = scope
        while True:
            m = await receive()
            self.messages.append(m)
            if m["type"] != "http.request" or not m.get("more_body"):
                break
        await send({"type": "http.response.start", "status": self.status, "headers": []})
        await send({"type": "http.response.body", "body": b'{"ok":true}'})


def _env(tmp_path: Path, **more: str) -> dict[str, str]:
    return {"VLLM_LEDGER_DIR": str(tmp_path / "root"), **more}


def _run(
    mw: LedgerMiddleware,
    chunks: list[bytes],
    headers: list[tuple[bytes, bytes]] = (),  # type: ignore[assignment]
    method: str = "POST",
    path: str = "/v1/chat/completions",
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    incoming = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
        for i, c in enumerate(chunks)
    ]
    given = list(incoming)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(m: MutableMapping[str, Any]) -> None:
        sent.append(dict(m))

    scope = {"type": "http", "method": method, "path": path, "headers": list(headers)}
    asyncio.run(mw(scope, receive, send))
    return given, sent


def _middleware(tmp_path: Path, app: App, **env: str) -> tuple[LedgerMiddleware, TagBook]:
    book = TagBook()
    book.consumer = True
    return LedgerMiddleware(app, book=book, env=_env(tmp_path, **env)), book


BODY = {"model": "tiny-b", "user": "alice", "messages": [{"role": "user", "content": "hi"}]}


def test_a_request_gets_an_id_and_its_labels_and_passes_unchanged(tmp_path: Path) -> None:
    app = App()
    mw, book = _middleware(
        tmp_path, app, VLLM_LEDGER_ATTRIBUTE_USER="1", VLLM_LEDGER_TENANT_HEADER="X-Tenant"
    )
    body = json.dumps(BODY).encode()
    given, sent = _run(
        mw, [body], [(b"authorization", b"Bearer sk-secret"), (b"x-tenant", b"acme")]
    )
    assert app.messages == given  # the same messages, nothing added or held back
    assert sent[0]["status"] == 200 and sent[1]["body"] == b'{"ok":true}'
    (x,) = [v.decode() for k, v in app.scope["headers"] if k == b"x-request-id"]
    assert len(x) == 32 and int(x, 16) >= 0
    entry = book.entries[x]
    label = keys.KeyLabels(keys.root_secret(tmp_path / "root")).label(b"sk-secret")
    assert entry.dims == (label, "tiny-b", "alice", "acme")
    assert entry.live == 0 and book.ended[0][1] == 200
    assert "sk-secret" not in repr(entry.dims)


def test_the_clients_id_is_kept_and_a_body_request_id_is_not_overridden(tmp_path: Path) -> None:
    app = App()
    mw, book = _middleware(tmp_path, app)
    _run(mw, [json.dumps(BODY).encode()], [(b"x-request-id", b"client-7")])
    assert [k for k, _v in app.scope["headers"]].count(b"x-request-id") == 1
    assert "client-7" in book.entries
    _run(mw, [json.dumps({**BODY, "request_id": "body-9"}).encode()])
    assert b"x-request-id" not in [k for k, _v in app.scope["headers"]]
    assert book.entries["body-9"].dims[1] == "tiny-b"
    # The user is read only when switched on.
    assert book.entries["body-9"].dims[2] == ""


def test_a_large_body_streams_through_in_its_chunks_and_is_named_at_its_end(
    tmp_path: Path,
) -> None:
    app = App()
    mw, book = _middleware(tmp_path, app)
    text = json.dumps({"messages": [{"role": "user", "content": "x" * 400_000}], "model": "tiny"})
    raw = text.encode()
    chunks = [raw[i : i + 65536] for i in range(0, len(raw), 65536)]
    given, _sent = _run(mw, chunks)
    assert app.messages == given and all(a is b for a, b in zip(app.messages, given, strict=True))
    (entry,) = book.entries.values()
    assert entry.dims == ("", "tiny", "", "")


@pytest.mark.parametrize("body", [b"not json at all", b"", b"[1,2,3]", b"\xff\xfe\x00"])
def test_a_body_that_is_not_a_json_object_is_served_and_tagged_without_labels(
    tmp_path: Path, body: bytes
) -> None:
    app = App(status=400)
    mw, book = _middleware(tmp_path, app)
    given, sent = _run(mw, [body])
    assert app.messages == given and sent[0]["status"] == 400
    assert book.faults_total == 0
    assert [e.dims for e in book.entries.values()] == [("", "", "", "")]


def test_a_fault_in_the_middleware_is_counted_and_the_request_goes_through(
    tmp_path: Path,
) -> None:
    app = App()
    mw, book = _middleware(tmp_path, app)

    class Broken:
        def label(self, raw: bytes) -> str:
            raise RuntimeError("injected")

    mw.settings.labels = Broken()  # type: ignore[assignment]
    given, sent = _run(mw, [json.dumps(BODY).encode()], [(b"authorization", b"Bearer k")])
    assert app.messages == given and sent[0]["status"] == 200
    assert book.faults_total == 1 and book.entries == {}
    assert book.settle(0) == [(("", "", "", "", "fault"), 0, 0, 0, 0, 1)]


def test_what_it_leaves_alone(tmp_path: Path) -> None:
    app = App()
    mw, book = _middleware(tmp_path, app)
    _run(mw, [b""], method="GET", path="/v1/models")
    _run(mw, [b"{}"], path="/metrics")
    assert book.entries == {} and book.begun_total == 0
    book.consumer = False  # no ledger in this process: nothing to join to
    _run(mw, [json.dumps(BODY).encode()])
    assert book.entries == {}
    off = LedgerMiddleware(app, book=book, env={})  # no VLLM_LEDGER_DIR: off
    book.consumer = True
    _run(off, [json.dumps(BODY).encode()])
    assert book.entries == {}


# ---- hard budgets: 429 before the engine -----------------------------------------------------


def test_a_key_over_its_hard_budget_gets_429_and_the_request_never_reaches_vllm(
    tmp_path: Path,
) -> None:
    from vllm_ledger.format import overbudget

    app = App()
    mw, book = _middleware(tmp_path, app)
    label = keys.KeyLabels(keys.root_secret(tmp_path / "root")).label(b"sk-over")
    now = time.time()
    overbudget.write(
        tmp_path / "root",
        [
            overbudget.Over("key", label, now + 3600.4, "team-a-day"),
            overbudget.Over("adapter", "tiny-b", now + 60, "b-day"),
        ],
        written_ts=now,
    )
    _given, sent = _run(mw, [json.dumps(BODY).encode()], [(b"authorization", b"Bearer sk-over")])
    assert app.messages == [] and sent[0]["status"] == 429
    headers = dict(sent[0]["headers"])
    assert headers[b"retry-after"] == b"3601"
    err = json.loads(sent[1]["body"])["error"]
    assert (err["type"], err["code"], err["param"]) == (
        "insufficient_quota",
        "budget_exceeded",
        None,
    )
    assert label in err["message"] and "team-a-day" in err["message"]
    assert book.settle(0) == [((label, "", "", "", "refused"), 0, 0, 0, 0, 1)]
    # Another key is served; an adapter over its budget is refused from the body's first chunk.
    _given, sent = _run(
        mw, [json.dumps({**BODY, "model": "tiny"}).encode()], [(b"authorization", b"Bearer ok")]
    )
    assert sent[0]["status"] == 200
    _given, sent = _run(mw, [json.dumps(BODY).encode()], [(b"authorization", b"Bearer ok")])
    assert sent[0]["status"] == 429 and mw.refused_total == 2


def test_a_stale_over_budget_file_refuses_nothing(tmp_path: Path) -> None:
    from vllm_ledger.format import overbudget

    app = App()
    mw, _book = _middleware(tmp_path, app)
    label = keys.KeyLabels(keys.root_secret(tmp_path / "root")).label(b"sk-over")
    old = time.time() - 60  # the enforcer stopped a minute ago: enforcement fails open
    overbudget.write(tmp_path / "root", [overbudget.Over("key", label, old + 3600, "b")], old)
    _given, sent = _run(mw, [json.dumps(BODY).encode()], [(b"authorization", b"Bearer sk-over")])
    assert sent[0]["status"] == 200
    assert mw.over is not None and "stale" in (mw.over.problem or "")
