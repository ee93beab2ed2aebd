"""The attribution middleware's CPU per request, against the same app without it (a child of
``bench/run.py --only middleware``; prints one JSON document).

The real ``vllm_ledger.middleware.LedgerMiddleware`` wraps a minimal ASGI app that reads the
body as vLLM's routes do (Starlette's ``Request.body()``: every chunk, joined) and answers; both
are driven in-process on one asyncio loop, request after request, the chunks handed over as an
ASGI server hands them. Per body, rounds of the app alone and of the middleware around it
alternate; each round is the thread's CPU time (``time.thread_time``) over its requests. A third
variant runs the middleware under ``bench/mwclock.py``'s clock, the one the probe uses inside a
serving vLLM, to check that clock against the plain difference.

Bodies: a 1 KB chat request; 400 KB of chat (four turns of prose, about 100k tokens for a
real tokenizer) in 64 KiB chunks; the same size of code pasted into a chat (a JSON-escaped
quote every few bytes). For the 400 KB bodies the API process's own CPU for the request is
measured in the same run: reading the body, ``json.loads`` and vLLM's ``ChatCompletionRequest``
validation, and the chat template (the tiny model's); its tokenizer too, reported apart.

    python bench/mwcost.py REPO MODEL_DIR
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CHUNK = 64 * 1024
PATH = "/v1/chat/completions"
KEY = b"sk-bench-0123456789abcdef0123456789abcdef"
WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there been one all we their tokens ledger engine "
    "request model serving cache prompt reply"
).split()
CODE_LINE = 'x = d["key_%d"] + f(\'a\', "b")  # see "docs"\n\tif y: return "z"\n'


def _prose(rnd: random.Random, size: int) -> str:
    out: list[str] = []
    n = 0
    while n < size:
        w = rnd.choice(WORDS) if rnd.random() > 0.01 else "\n"
        out.append(w)
        n += len(w) + 1
    return " ".join(out)


def _code(size: int) -> str:
    out: list[str] = []
    n = i = 0
    while n < size:
        line = CODE_LINE % i
        out.append(line)
        n += len(line)
        i += 1
    return "".join(out)


def chat_body(turns: list[str], user: str) -> bytes:
    """A chat request as the OpenAI client sends it (messages first, then the model, ...)."""
    messages = [{"role": "system", "content": "You are a helpful assistant."}]
    messages += [
        {"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(turns)
    ]
    doc = {
        "messages": messages,
        "model": "tiny",
        "max_tokens": 64,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.7,
        "user": user,
    }
    return json.dumps(doc).encode()


def bodies() -> dict[str, bytes]:
    rnd = random.Random(0)
    small = chat_body([_prose(rnd, 800)], "user-0017")
    return {
        "1 KB chat": small,
        "400 KB chat (prose)": chat_body([_prose(rnd, 100_000) for _ in range(4)], "user-0017"),
        "400 KB chat (code)": chat_body([_code(100_000) for _ in range(4)], "user-0017"),
    }


def scope(length: int) -> dict[str, Any]:
    """An HTTP scope as uvicorn builds it for a client's POST."""
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
        "method": "POST",
        "root_path": "",
        "path": PATH,
        "raw_path": PATH.encode(),
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"accept", b"application/json"),
            (b"content-type", b"application/json"),
            (b"user-agent", b"OpenAI/Python 1.0"),
            (b"authorization", b"Bearer " + KEY),
            (b"content-length", str(length).encode()),
        ],
        "state": {},
    }


async def app(scope: Any, receive: Any, send: Any) -> None:
    """Reads the whole body as Starlette's ``Request.body()`` does, then answers."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b'{"n": %d}' % len(body)})


async def _discard(message: Any) -> None:
    return None


def run_round(asgi: Callable[..., Any], body: bytes, n: int) -> float:
    """CPU seconds per request over ``n`` requests, one after another on one loop."""
    chunks = [body[i : i + CHUNK] for i in range(0, len(body), CHUNK)]
    last = len(chunks) - 1
    sc = scope(len(body))

    async def batch() -> None:
        for _ in range(n):
            at = 0

            async def receive() -> dict[str, Any]:
                nonlocal at
                i = at
                at += 1
                return {"type": "http.request", "body": chunks[i], "more_body": i < last}

            await asgi(dict(sc), receive, _discard)

    loop = asyncio.new_event_loop()
    try:
        t = time.thread_time()
        loop.run_until_complete(batch())
        return (time.thread_time() - t) / n
    finally:
        loop.close()


def api_cpu(body: bytes, model: str, repeats: int = 7) -> dict[str, float]:
    """Seconds of the API process's own work on one such request, medians: vLLM's parsing
    (``json.loads``, ``ChatCompletionRequest``), its chat template, its tokenizer."""
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.tokenizers import get_tokenizer

    tok = get_tokenizer(model)
    parse, template, tokenize = [], [], []
    tokens = 0
    for _ in range(repeats):
        t = time.thread_time()
        req = ChatCompletionRequest.model_validate(json.loads(body))
        t1 = time.thread_time()
        msgs: list[Any] = [{"role": m["role"], "content": m["content"]} for m in req.messages]
        prompt: Any = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        t2 = time.thread_time()
        parse.append(t1 - t)
        template.append(t2 - t1)
    for _ in range(3):
        t = time.thread_time()
        tokens = len(tok.encode(prompt))
        tokenize.append(time.thread_time() - t)
    return {
        "parse_s": statistics.median(parse),
        "template_s": statistics.median(template),
        "tokenize_s": statistics.median(tokenize),
        "tokens": tokens,
    }


def measure(body: bytes, rounds: int, n: int, root: str) -> dict[str, Any]:
    from bench.mwclock import MiddlewareClock
    from vllm_ledger.write.middleware import LedgerMiddleware
    from vllm_ledger.write.tags import TagBook

    env = {"VLLM_LEDGER_DIR": root, "VLLM_LEDGER_ATTRIBUTE_USER": "1"}
    book = TagBook()
    book.consumer = True  # a ledger plugin records in this process
    mw = LedgerMiddleware(app, book=book, env=env)
    clock = MiddlewareClock()
    clock.calibrate()
    timed = LedgerMiddleware(clock.wrap_app(app), book=book, env=env)
    # Budgets on: a root whose enforcer file is fresh and lists 100 others over their budgets
    # (the bench's key not among them: every request is looked up, and served).
    budgets = LedgerMiddleware(app, book=book, env={**env, "VLLM_LEDGER_DIR": _over_root()})

    def clocked(sc: Any, receive: Any, send: Any) -> Any:
        return clock.wrap_call(timed, sc, receive, send)

    variants: dict[str, Callable[..., Any]] = {
        "app": app,
        "mw": mw,
        "clocked": clocked,
        "budgets": budgets,
    }
    per: dict[str, list[float]] = {k: [] for k in variants}
    for r in range(rounds + 1):
        names = list(variants)[r % 4 :] + list(variants)[: r % 4]
        for name in names:
            if name == "clocked":
                before = (clock.own_s(), clock.requests)
            took = run_round(variants[name], body, n)
            if r:  # the first round warms up
                per[name].append(took)
            if name == "clocked" and r:
                per.setdefault("clock_own", []).append(
                    (clock.own_s() - before[0]) / (clock.requests - before[1])
                )
            book.tick(), book.tick(), book.tick()
            book.settle(book.records, final=True)  # the recorder's part: not timed here
    med = {k: statistics.median(v) for k, v in per.items()}
    parts = _parts(body, mw, max(4, n // 4), rounds)
    return {
        **parts,
        "bytes": len(body),
        "chunks": -(-len(body) // CHUNK),
        "rounds": rounds,
        "requests_per_round": n,
        "app_s": med["app"],
        "mw_app_s": med["mw"],
        "added_s": med["mw"] - med["app"],
        "added_quartiles_s": _quartiles(
            [m - a for m, a in zip(per["mw"], per["app"], strict=True)]
        ),
        "clock_own_s": med["clock_own"],
        "budgets_s": med["budgets"],
        "budgets_added_s": med["budgets"] - med["mw"],
        "budgets_refused": budgets.refused_total,
        "clock_bias_s": clock.bias_s,
        "faults": book.faults_total,
        "tagged": book.begun_total,
        "escaped_quotes": body.count(b'\\"'),
    }


def _over_root() -> str:
    """A root with a fresh over-budget file of 100 keys (none of them the bench's)."""
    from vllm_ledger.format import overbudget

    root = tempfile.mkdtemp(prefix="bench-mw-budgets-")
    now = time.time()
    over = [overbudget.Over("key", f"key:{i:08x}", now + 86400, f"b{i}") for i in range(100)]
    overbudget.write(Path(root), over, written_ts=now, fresh_s=3600)
    return root


def _parts(body: bytes, mw: Any, n: int, rounds: int) -> dict[str, float]:
    """Where the middleware's time goes, each part alone on the same body (medians of rounds of
    ``n``): the body scan over the same chunks, naming the bearer key; and, for scale,
    ``json.loads`` of the whole body."""
    from vllm_ledger.write.bodyscan import BodyScan
    from vllm_ledger.write.middleware import _WANTED

    chunks = [body[i : i + CHUNK] for i in range(0, len(body), CHUNK)]
    labels = mw.settings.labels
    scan, key, loads = [], [], []
    for _ in range(rounds):
        t = time.thread_time()
        for _ in range(n):
            json.loads(body)
        loads.append((time.thread_time() - t) / n)
        t = time.thread_time()
        for _ in range(n):
            s = BodyScan(_WANTED)
            for c in chunks:
                s.feed(c)
        scan.append((time.thread_time() - t) / n)
        t = time.thread_time()
        for _ in range(n):
            labels.label(KEY)
        key.append((time.thread_time() - t) / n)
    return {
        "scan_s": statistics.median(scan),
        "key_s": statistics.median(key),
        "loads_s": statistics.median(loads),
        "scan_steps": float(s._steps),
    }


def _quartiles(xs: list[float]) -> list[float]:
    q = statistics.quantiles(xs, n=4)
    return [q[0], q[2]]


def main() -> None:
    repo, model = sys.argv[1], sys.argv[2]
    sys.path.insert(0, repo)
    root = tempfile.mkdtemp(prefix="bench-mw-")
    out: dict[str, Any] = {}
    plan = {"1 KB chat": (15, 2000), "400 KB chat (prose)": (15, 100), "400 KB chat (code)": (9, 4)}
    for name, body in bodies().items():
        rounds, n = plan[name]
        out[name] = measure(body, rounds, n, root)
        if len(body) > 100_000:
            out[name]["api"] = api_cpu(body, model)
    out["pid"] = os.getpid()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
