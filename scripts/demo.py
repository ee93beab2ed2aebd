"""make demo: a real vLLM server on CPU with the ledger on, real traffic, the report.

1. bundles the plugin into build/demo/plugin (the no-install path: PYTHONPATH);
2. starts `vllm serve` on 127.0.0.1 with the tiny test model and --api-server-count 2;
3. sends a mix of requests (completions, chat, streaming, n=2, prefix-cache hits, a client
   that hangs up mid-stream) with a progress bar;
4. prints `vllm-ledger report` and `vllm-ledger verify`, then stops the server.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from rich.progress import Progress

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from devtools.tiny_model import make_tiny_model  # noqa: E402
from devtools.traffic import plan, send_mix  # noqa: E402
from devtools.vllm_server import VllmServer  # noqa: E402
from vllm_ledger.deploy.bundle import bundle  # noqa: E402

ROUNDS = 3


# `make setup` installs the checkout into .venv: the command printed is the command run.
VLLM_LEDGER = Path(sys.executable).parent / "vllm-ledger"


def cli(*args: str) -> int:
    print(f"\n$ .venv/bin/vllm-ledger {' '.join(args)}", flush=True)
    return subprocess.call([str(VLLM_LEDGER), *args], cwd=REPO)


def _wait_for_watermark(ledger: Path, since_ts: float, timeout_s: float = 20.0) -> None:
    """A live report ends where every writer has proven its counts (the watermark); the
    writers prove once more about 2 s after the last event, so the report then holds all.
    The cutoff is exclusive: every event stamped before ``since_ts`` is in once it passes the
    second ``since_ts`` falls in."""
    from vllm_ledger.read.report import build_report

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and build_report([ledger]).cutoff_ts <= int(since_ts):
        time.sleep(0.5)


def main() -> int:
    work = REPO / "build" / "demo"
    ledger = work / "ledger"
    model = make_tiny_model(REPO / "build" / "tiny-model").resolve()
    bundle(work / "plugin")
    server = VllmServer(
        model,
        # The attribution middleware on, as render writes it: report --by key names the callers.
        extra_args=(
            "--api-server-count",
            "2",
            "--middleware",
            "vllm_ledger.middleware.LedgerMiddleware",
        ),
        env={"VLLM_LEDGER_DIR": str(ledger)},
        pythonpath=[work / "plugin"],
        log_path=work / "vllm.log",
    )
    log = os.path.relpath(server.log_path)  # as the README shows it: relative to the checkout
    print(f"starting vllm serve on {server.url} (log: {log}); about 30-60 s on CPU")
    t0 = time.monotonic()
    server.start()
    try:
        shown = os.path.relpath(ledger)
        print(f"vLLM is up after {time.monotonic() - t0:.0f} s; the ledger writes to {shown}")
        n = len(plan("tiny")) * ROUNDS
        with Progress() as progress:
            task = progress.add_task("sending requests", total=n)
            send_mix(server.url, "tiny", rounds=ROUNDS, progress=lambda _k: progress.advance(task))
        _wait_for_watermark(ledger, time.time())
        rel = str(ledger.relative_to(REPO))  # the commands run in the checkout, as printed
        cli("report", "--root", rel)
        code = cli("verify", "--root", rel, "--metrics-url", server.url + "/metrics")
    finally:
        server.stop()
    print(
        "\nserver stopped; the ledger stays: "
        f".venv/bin/vllm-ledger report --root {ledger.relative_to(REPO)}"
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
