"""Real OpenAI-API traffic against a vLLM server: the mix the end-to-end tests and demo send.

Completions, chat, streaming, ``n=2``, repeated long prompts that hit the prefix cache, and a
client that disconnects mid-stream. Every request goes to the given 127.0.0.1 URL.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

LONG_PROMPT = " ".join(["the ledger counts every token of every request in every window"] * 12)


@dataclass
class TrafficResult:
    sent: int = 0
    ok: int = 0
    disconnected: int = 0
    kinds: dict[str, int] = field(default_factory=dict)


def _post(client: httpx.Client, url: str, body: dict) -> dict:
    r = client.post(url, json=body)
    r.raise_for_status()
    return r.json()


def plan(model: str, secret: str = "") -> list[tuple[str, str, dict]]:
    """The requests to send, as (kind, path, body)."""
    tag = f" {secret}" if secret else ""
    reqs: list[tuple[str, str, dict]] = []
    for i in range(3):
        reqs.append(
            (
                "completion",
                "/v1/completions",
                {"model": model, "prompt": f"count the tokens {i}{tag}", "max_tokens": 12},
            )
        )
    for i in range(2):
        reqs.append(
            (
                "chat",
                "/v1/chat/completions",
                {
                    "model": model,
                    "max_tokens": 10,
                    "messages": [{"role": "user", "content": f"how many tokens {i}{tag}"}],
                },
            )
        )
    reqs.append(
        (
            "n2",
            "/v1/completions",
            {"model": model, "prompt": f"two answers please{tag}", "max_tokens": 8, "n": 2},
        )
    )
    for _ in range(3):
        reqs.append(
            (
                "prefix",
                "/v1/completions",
                {"model": model, "prompt": LONG_PROMPT + tag, "max_tokens": 6},
            )
        )
    reqs.append(
        (
            "stream",
            "/v1/completions",
            {"model": model, "prompt": f"stream this{tag}", "max_tokens": 16, "stream": True},
        )
    )
    reqs.append(
        (
            "stream_chat",
            "/v1/chat/completions",
            {
                "model": model,
                "max_tokens": 12,
                "stream": True,
                "messages": [{"role": "user", "content": f"stream chat{tag}"}],
            },
        )
    )
    reqs.append(
        (
            "disconnect",
            "/v1/completions",
            {
                "model": model,
                "prompt": f"hang up on me{tag}",
                "max_tokens": 400,
                "stream": True,
                "ignore_eos": True,
            },
        )
    )
    return reqs


def send_mix(
    base_url: str,
    model: str,
    *,
    secret: str = "",
    rounds: int = 1,
    progress: Callable[[str], None] | None = None,
    api_key: str = "",
) -> TrafficResult:
    result = TrafficResult()
    headers = {"X-Request-Id": f"req-{secret}"} if secret else {}
    if api_key:  # a server started with --api-key
        headers["Authorization"] = f"Bearer {api_key}"
    with httpx.Client(base_url=base_url, timeout=120.0, headers=headers) as client:
        for _ in range(rounds):
            for kind, path, body in plan(model, secret):
                result.sent += 1
                result.kinds[kind] = result.kinds.get(kind, 0) + 1
                if body.get("stream"):
                    with client.stream("POST", path, json=body) as r:
                        r.raise_for_status()
                        chunks = 0
                        for line in r.iter_lines():
                            if not line.startswith("data: ") or line == "data: [DONE]":
                                continue
                            json.loads(line[6:])
                            chunks += 1
                            if kind == "disconnect" and chunks >= 3:
                                break  # closing the response drops the connection mid-stream
                    if kind == "disconnect":
                        result.disconnected += 1
                    else:
                        result.ok += 1
                else:
                    _post(client, path, body)
                    result.ok += 1
                if progress:
                    progress(kind)
    return result
