"""Whose tokens against a real vLLM 0.32 on CPU: three API keys, two served names, two users,
DP 2 x API 2, then a restart; every kind of request a client sends. Per key, adapter and user
the ledger equals what the clients were told in ``usage``, to the token; cut streams are not
attributed (aborted); the rows add up to every window's total; a client's id reused while in
flight is ambiguous; no raw key is kept anywhere."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from devtools.vllm_server import VllmServer, free_port
from tests.conftest import REPO, run_cli
from tests.e2e.settle import settle
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.report import build_report
from vllm_ledger.read.whose import WhoseWindow, whose
from vllm_ledger.read.windows import Window
from vllm_ledger.write import keys

pytestmark = pytest.mark.e2e

# Keys a grep can find anywhere they should not be.
KEYS = {
    "k1": "sk-live-ALPHA-5f1e27c9",
    "k2": "sk-live-BRAVO-9a03bd44",
    "k3": "sk-live-CHARLIE-77e0c2d1",
}
MODELS = ("tiny", "tiny-b")
USERS = ("alice", "bob")
PROMPT = "count the tokens of this prompt and every one after it " * 6
CUT_MAX_TOKENS = 300


@dataclass
class Usage:
    """What clients were told, per (key, model, user); cached where ``usage`` says it."""

    sums: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)
    cached_unknown: set[tuple[str, str, str]] = field(default_factory=set)
    cut: int = 0
    # Each cut stream's (key, model, user) and prompt tokens: on a busy machine vLLM's engine
    # may generate all CUT_MAX_TOKENS before the API process sees the client gone; such a
    # request finished, and is credited whole, as it should be (no usage reported it).
    cut_streams: list[tuple[tuple[str, str, str], int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, who: tuple[str, str, str], u: dict[str, Any], cached: bool = True) -> None:
        with self.lock:
            acc = self.sums.setdefault(who, [0, 0, 0])
            acc[0] += u["prompt_tokens"]
            acc[1] += u["completion_tokens"]
            if cached:
                acc[2] += (u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
            else:
                self.cached_unknown.add(who)


def _headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[key]}"}


def _chat(model: str, user: str, **more: Any) -> dict[str, Any]:
    body = {
        "model": model,
        "user": user,
        "messages": [{"role": "user", "content": f"{user} {model} {PROMPT}"}],
        "max_tokens": 6,
        "ignore_eos": True,  # every answer as long as max_tokens: what a usage-less stream got
    }
    return {**body, **more}


def _requests_of(c: httpx.Client, usage: Usage, key: str, model: str, user: str, cut: bool) -> None:
    """Every kind of request, as one client of (key, model, user) sends them."""
    who = (key, model, user)
    h = _headers(key)
    r = c.post("/v1/chat/completions", json=_chat(model, user), headers=h)
    r.raise_for_status()
    plain = r.json()["usage"]
    usage.add(who, plain)
    r = c.post("/v1/chat/completions", json=_chat(model, user, n=2), headers=h)
    r.raise_for_status()
    usage.add(who, r.json()["usage"])
    body = {"model": model, "user": user, "prompt": f"{user} {PROMPT}", "max_tokens": 5}
    r = c.post("/v1/completions", json={**body, "ignore_eos": True}, headers=h)
    r.raise_for_status()
    usage.add(who, r.json()["usage"])
    stream = _chat(model, user, stream=True, stream_options={"include_usage": True})
    with c.stream("POST", "/v1/chat/completions", json=stream, headers=h) as s:
        for line in s.iter_lines():
            if line.startswith("data: {") and '"usage":{' in line.replace(" ", ""):
                u = json.loads(line[6:]).get("usage")
                if u:
                    usage.add(who, u)
    # Without include_usage the client is told nothing: the same prompt and max_tokens as the
    # plain request, ignore_eos, so its usage is that request's (cached unknown).
    with c.stream(
        "POST", "/v1/chat/completions", json=_chat(model, user, stream=True), headers=h
    ) as s:
        for _line in s.iter_lines():
            pass
    usage.add(who, {"prompt_tokens": plain["prompt_tokens"], "completion_tokens": 6}, cached=False)
    if cut:  # a client that stops reading and goes: vLLM aborts it
        long = _chat(model, user, stream=True, max_tokens=CUT_MAX_TOKENS)
        with c.stream("POST", "/v1/chat/completions", json=long, headers=h) as s:
            for i, _line in enumerate(s.iter_lines()):
                if i >= 3:
                    break
        with usage.lock:
            usage.cut += 1
            usage.cut_streams.append((who, plain["prompt_tokens"]))


def _traffic(url: str, usage: Usage) -> None:
    """Every (key, model, user), four clients at once, so both DP ranks and API processes
    serve."""
    combos = [(k, m, u) for k in KEYS for m in MODELS for u in USERS]
    errors: list[BaseException] = []

    def client(part: list[tuple[str, str, str]]) -> None:
        try:
            with httpx.Client(base_url=url, timeout=120.0) as c:
                for key, model, user in part:
                    _requests_of(c, usage, key, model, user, cut=(key == "k1"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(combos[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def _whose(root: Path, by: str) -> dict[str, WhoseWindow]:
    at = time.time()
    report = build_report([root], at_ts=at, clock=lambda: at)
    out = {}
    with LedgerSet.read([root], clock=lambda: at) as ls:
        for w in report.windows:
            credits = ls.credits(ls.sources(), Window(w.name, w.start_ts, w.cutoff_ts))
            out[w.name] = whose(w, credits, by)  # type: ignore[arg-type]
    return out


def _expected(usage: Usage, by: str) -> dict[str, list[int | None]]:
    place = {"key": 0, "adapter": 1, "user": 2}[by]
    out: dict[str, list[int | None]] = {}
    unknown: set[str] = set()
    for who, (p, g, c) in usage.sums.items():
        value = who[place]
        acc = out.setdefault(value, [0, 0, 0])
        acc[0] += p  # type: ignore[operator]
        acc[1] += g  # type: ignore[operator]
        acc[2] += c  # type: ignore[operator]
        if who in usage.cached_unknown:
            unknown.add(value)
    for value in unknown:
        out[value][2] = None
    return out


def _check(root: Path, usage: Usage, labels: dict[str, str]) -> tuple[WhoseWindow, int]:
    """Per key, adapter and user: the ledger equals the clients' usage, with the cut streams
    that nonetheless finished each credited whole (the same ones in every view); the rows and
    the rest add up to every window's figures. Returns ``total`` by key and how many cut
    streams finished."""
    cut = usage.cut_streams
    found: Exception | None = None
    for n in range(len(cut) + 1):
        for finished in itertools.combinations(range(len(cut)), n):
            try:
                _check_views(root, usage, labels, [cut[i] for i in finished])
            except AssertionError as exc:
                found = found or exc  # the first: none of the cut streams finished
                continue
            return _whose(root, "key")["total"], n
    assert found is not None
    raise found


def _check_views(
    root: Path,
    usage: Usage,
    labels: dict[str, str],
    finished: list[tuple[tuple[str, str, str], int]],
) -> None:
    for by in ("key", "adapter", "user"):
        ww = _whose(root, by)
        for w in ww.values():
            na = w.not_attributed
            for fig in ("input_tokens", "output_tokens", "cached_tokens", "requests"):
                assert sum(getattr(r, fig) for r in w.rows) + getattr(na, fig) == getattr(
                    w.total, fig
                ), (by, w.name, fig)
        got = {
            r.value: [r.input_tokens, r.output_tokens, r.cached_tokens] for r in ww["total"].rows
        }
        want = _expected(usage, by)
        place = {"key": 0, "adapter": 1, "user": 2}[by]
        for who, prompt in finished:  # credited whole: its prompt, every token it could make
            acc = want[who[place]]
            acc[0] += prompt  # type: ignore[operator]
            acc[1] += CUT_MAX_TOKENS  # type: ignore[operator]
            acc[2] = None  # its cached tokens: no usage said
        if by == "key":
            want = {labels[k]: v for k, v in want.items()}
        for value, (p, g, c) in want.items():
            assert got[value][:2] == [p, g], (by, value, got[value], (p, g))
            if c is not None:
                assert got[value][2] == c, (by, value, "cached", got[value][2], c)
        assert set(got) == set(want), by


def _label(root: Path, raw: str) -> str:
    """The name the ledger shows for a key: ``key:`` and 8 hex of its HMAC under the root's
    secret (the middleware made it at the first request)."""
    return keys.KeyLabels(keys.root_secret(root)).label(raw.encode())


@pytest.fixture
def attributed(vllm_server: Any, tmp_path: Path) -> Iterator[Any]:
    root = tmp_path / "ledger"
    env = {"VLLM_LEDGER_ATTRIBUTE_USER": "1"}

    def start(*extra: str) -> VllmServer:
        return vllm_server(
            root,
            served_name=MODELS,
            env=env,
            extra_args=(
                "--api-key",
                *KEYS.values(),
                "--middleware",
                "vllm_ledger.middleware.LedgerMiddleware",
                "--enable-prompt-tokens-details",
                *extra,
            ),
        )

    yield root, start


def test_whose_tokens_exact_to_the_token_across_a_restart_and_odd_requests(
    attributed: Any, tmp_path: Path
) -> None:
    root, start = attributed
    usage = Usage()
    s1 = start("--data-parallel-size", "2", "--api-server-count", "2")
    _traffic(s1.url, usage)
    counters = settle(s1, aborts_judged=True)
    labels = {k: _label(root, raw) for k, raw in KEYS.items()}
    assert all(v.startswith("key:") and len(v) == 12 for v in labels.values())
    total, done = _check(root, usage, labels)
    assert (total.total.input_tokens, total.total.output_tokens) == (
        counters["input"],
        counters["output"],
    )
    na = total.not_attributed
    assert na.reasons["untagged"].requests == na.reasons["ambiguous"].requests == 0
    assert na.reasons["copies"].input_tokens > 0  # n=2: the prompt again, usage counts it once
    assert usage.cut == 4 and na.requests_aborted == usage.cut - done
    if done < usage.cut:
        assert na.reasons["aborted"].output_tokens > 0  # what the cut streams generated
    assert {r.value: r.requests_aborted for r in total.rows}[labels["k1"]] == usage.cut - done
    s1.stop()

    # Again after a restart (one API process): the same keys, the same names, added up.
    s2 = start()
    _traffic(s2.url, usage)
    settle(s2, aborts_judged=True)
    total, done = _check(root, usage, labels)
    assert usage.cut == 8 and total.not_attributed.requests_aborted == usage.cut - done
    before = {r.value: r for r in total.rows}
    _odd_requests(root, s2.url)
    settle(s2, aborts_judged=True)
    total = _whose(root, "key")["total"]
    assert total.not_attributed.reasons["ambiguous"].requests == 2  # credited to neither
    after = {r.value: r for r in total.rows}
    assert after[labels["k2"]] == before[labels["k2"]]
    assert after[labels["k1"]] == before[labels["k1"]]  # its 400: nothing to credit
    assert after[labels["k3"]].requests == before[labels["k3"]].requests + 1
    odd = _whose(root, "adapter")["total"]
    assert {r.value: r.requests for r in odd.rows}[""] == 1  # served, no adapter named
    s2.stop()

    # The raw keys are nowhere: not under the root, not in vLLM's logs, not in any report.
    outputs = [p.read_bytes() for p in root.rglob("*") if p.is_file()]
    outputs += [p.read_bytes() for p in tmp_path.glob("vllm-*.log")]
    for flags in ((), ("--json",), ("--csv",)):
        _code, out, _err = run_cli("report", "--root", str(root), *flags)
        outputs.append(out.encode())
    outputs.append(_exporter_metrics(root))
    for raw in KEYS.values():
        assert not any(raw.encode() in blob for blob in outputs), raw
        assert not any(raw[8:].encode() in blob for blob in outputs), raw  # nor its tail


def _exporter_metrics(root: Path) -> bytes:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vllm_ledger",
            "exporter",
            "--root",
            str(root),
            "--listen",
            f"127.0.0.1:{port}",
            "--no-gpu",
        ],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).content
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(10)


def _odd_requests(root: Path, url: str) -> None:
    """A client's id two requests hold at once (credited to neither); a body that is not JSON
    (vLLM answers it, nothing is credited); a body the scan gives up on (credited to its key,
    no adapter named). On one API process, so both requests meet in one tag book."""
    same = {"X-Request-Id": "client-chosen-7", **_headers("k2")}
    with (
        httpx.Client(base_url=url, timeout=120.0) as a,
        httpx.Client(base_url=url, timeout=120.0) as b,
    ):
        long = _chat("tiny", "alice", stream=True, max_tokens=600)
        with a.stream("POST", "/v1/chat/completions", json=long, headers=same) as first:
            lines = first.iter_lines()
            next(lines)  # the first is running when the second arrives with the same id
            r = b.post("/v1/chat/completions", json=_chat("tiny-b", "bob"), headers=same)
            assert r.status_code == 200
            for _line in lines:
                pass
        r = a.post(
            "/v1/chat/completions",
            content=b"\x00not json{",
            headers={"Content-Type": "application/json", **_headers("k1")},
        )
        assert r.status_code == 400
        # Its model after 50,000 brackets of a field vLLM ignores: past the scan's bound.
        r = a.post(
            "/v1/completions",
            content=json.dumps(
                {"prompt": "hi", "padding": [[]] * 25_000, "max_tokens": 2, "model": "tiny"}
            ).encode(),
            headers={"Content-Type": "application/json", **_headers("k3")},
        )
        assert r.status_code == 200, r.text
