"""One vLLM server of the serving bench, for either side of a pair: with the ledger (a bundle
first on PYTHONPATH, ``VLLM_PLUGINS=ledger``, the attribution middleware with users on) or with
no plugin loaded at all (``VLLM_PLUGINS=''``, a list that names none), both requiring an API
key; and the check of its log for its side.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.load import KEYS

AUTH_ARGS = ("--api-key", *KEYS)
# The ledger's servers run the attribution middleware with users on, as a launch file with
# usage on does.
MIDDLEWARE_ARGS = ("--middleware", "vllm_ledger.middleware.LedgerMiddleware")
ATTRIBUTION_ENV = {"VLLM_LEDGER_ATTRIBUTE_USER": "1"}
# The plugin's name in vLLM's allow-list (the entry point's name in the bundle's dist-info).
PLUGIN_NAME = "ledger"


def vllm_server(
    model: Path,
    tmp: Path,
    tag: str,
    *,
    plugin: Path | None,
    env: dict[str, str],
    extra_args: tuple[str, ...] = (),
) -> Any:
    """A server with the ledger (``plugin``: a bundle folder put first on PYTHONPATH) or with
    no plugin loaded at all: .venv has vllm-ledger installed, so its entry point is found in
    both cases, and ``VLLM_PLUGINS`` decides (see the module's docstring)."""
    from devtools.vllm_server import VllmServer

    if plugin is None:
        env = {k: v for k, v in env.items() if not k.startswith("VLLM_LEDGER_")}
        extra_args = (*AUTH_ARGS, *extra_args)
    else:
        env = {**env, **ATTRIBUTION_ENV}
        extra_args = (*AUTH_ARGS, *MIDDLEWARE_ARGS, *extra_args)
    env = {**env, "VLLM_PLUGINS": PLUGIN_NAME if plugin is not None else ""}
    return VllmServer(
        model,
        env=env,
        pythonpath=[plugin] if plugin is not None else [],
        extra_args=extra_args,
        log_path=tmp / f"vllm-{tag}.log",
    )


def check_log(text: str, mode: str, writers: int) -> str | None:
    """What is wrong with a server's log for its side, or None: with the plugin off no
    ``vllm-ledger`` line at all; with it on, one ``recording to`` line and one ``attribution
    on`` line per API process."""
    if mode == "off":
        lines = [ln for ln in text.splitlines() if "vllm-ledger" in ln]
        return f"the plugin was loaded: {lines[0].strip()[:200]}" if lines else None
    n = text.count("vllm-ledger: recording to")
    if n != writers:
        return f"{n} 'vllm-ledger: recording to' line(s), want {writers} (one per API process)"
    n = text.count("vllm-ledger: attribution on")
    if n != writers:
        return f"{n} 'vllm-ledger: attribution on' line(s), want {writers} (one per API process)"
    return None
