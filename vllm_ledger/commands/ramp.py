"""vllm-ledger ramp: load a server step by step and find where throughput or KV cache bends."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from vllm_ledger.commands._files import input_file, output_dir, say_wrote
from vllm_ledger.commands._refusals import file_flag
from vllm_ledger.commands._renamed import add_renamed
from vllm_ledger.commands._values import duration, number, text, url
from vllm_ledger.errors import BadArgument
from vllm_ledger.formats.ramp import OUTPUT_NAMES, render_files, render_table
from vllm_ledger.http.urls import local_host, url_host
from vllm_ledger.outfile import write_file
from vllm_ledger.plan.ramp import errors_verdict, find_knee

NAME = "ramp"
HELP = "drive an OpenAI-compatible server at rising concurrency; chart throughput, TTFT, KV"
EPILOG = """example:
  vllm-ledger ramp --url http://127.0.0.1:8000 --model qwen3-8b --concurrency 1,2,4,8,16 \\
      --duration 1m --output ramp-2026-11-29
  vllm-ledger ramp --host gpu-node.json --concurrency 1,2,4,8 --duration 1m
The API key (vLLM's --api-key) comes from --api-key-file, else from the host file's api_key
({"env": NAME} or {"file": PATH}) with --host, else from $VLLM_API_KEY; never from the command
line, where every user of the machine could read it. A step where more than 1 % of the
requests failed (a wrong key: HTTP 401) is reported with the first failure, and no knee is drawn.
exit status: 0 written, 4 written but a step had more than 1 % failed requests (no knee), 2 a
bad flag or a server that cannot be reached, 1 the system refused a write (a full disk, a
denied folder)
"""
if TYPE_CHECKING:
    from vllm_ledger.deploy.host import Host

ERRORS_EXIT = 4
MAX_KEY_FILE_BYTES = 64 * 1024


MAX_CONCURRENCY = 4096  # requests in flight at once (each a connection and a thread)
MAX_STEPS = 64
MAX_PROMPT_CHARS = 1_000_000


def _concurrency(value: str) -> list[int]:
    """``--concurrency``: 1 to 64 whole numbers from 1 to 4096, comma-separated."""
    example = "give whole numbers from 1 to 4096, e.g. --concurrency 1,2,4,8"
    parts = value.split(",")
    if len(value) > 1000 or len(parts) > MAX_STEPS:
        raise BadArgument(
            f"--concurrency {value[:40]!r}... has too many steps (at most 64): {example}"
        )
    step = number("--concurrency", 1, MAX_CONCURRENCY, "8", unit="whole numbers", integer=True)
    values = [int(step(x)) for x in parts if x.strip()]
    if not values:
        raise BadArgument(f"--concurrency {value!r} is empty: {example}")
    return values


def _prompt(value: str) -> str:
    if not value or len(value) > MAX_PROMPT_CHARS:
        raise BadArgument(
            f"--prompt is {'empty' if not value else 'longer than 1,000,000 characters'}: "
            "give a prompt, e.g. --prompt 'Write a story.'"
        )
    return value


def _no_key_on_the_command_line(_value: str) -> str:
    raise BadArgument(
        "--api-key on the command line is readable by every user of this machine (ps): put "
        "the key in a file and pass --api-key-file FILE, or set VLLM_API_KEY"
    )


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--url",
        type=url("--url", "http://127.0.0.1:8000"),
        help="the server's base URL, e.g. http://127.0.0.1:8000 (with --host: the host "
        "file's host and port)",
    )
    p.add_argument(
        "--model",
        type=text("--model", "qwen3-8b"),
        metavar="NAME",
        help="the served model name (with --host: the host file's served_model_name or model)",
    )
    p.add_argument(
        "--host",
        type=input_file("--host", "HOST.json", max_bytes=1024 * 1024, what="host file"),
        metavar="HOST.json",
        help="the host file `render` reads: the URL, the model and the API key come from it "
        "unless given",
    )
    p.add_argument(
        "--api-key-file",
        type=input_file(
            "--api-key-file", "KEY_FILE", max_bytes=MAX_KEY_FILE_BYTES, what="API key file"
        ),
        metavar="FILE",
        help="a file holding the server's API key (trailing newlines dropped); default: the "
        "host file's api_key with --host, else $VLLM_API_KEY",
    )
    p.add_argument("--api-key", type=_no_key_on_the_command_line, help=argparse.SUPPRESS)
    p.add_argument(
        "--concurrency",
        type=_concurrency,
        default=[1, 2, 4, 8],
        metavar="LIST",
        help="concurrency steps (default 1,2,4,8)",
    )
    p.add_argument(
        "--duration",
        type=duration("--duration", 0, 3600, "1m", lo_open=True),
        default=30.0,
        metavar="DURATION",
        help="how long each step starts requests for (default 30s)",
    )
    p.add_argument(
        "--max-tokens",
        type=number("--max-tokens", 1, 1_000_000, "64", unit="tokens", integer=True),
        default=64,
        metavar="N",
        help="output tokens per request (ignore_eos; default 64)",
    )
    p.add_argument("--prompt", type=_prompt, help="the prompt (each request gets a unique prefix)")
    p.add_argument(
        "--metrics-url",
        type=url("--metrics-url", "http://127.0.0.1:8000/metrics"),
        metavar="URL",
        help="the server's /metrics (default URL/metrics)",
    )
    p.add_argument(
        "--output",
        type=output_dir("--output", "ramp-2026-11-29", OUTPUT_NAMES),
        default="ramp",  # a string: argparse checks it as it checks a given one
        metavar="DIR",
        help="where ramp.png, ramp.html, ramp.json and ramp.csv go (default ./ramp); "
        "each a regular file, replaced whole",
    )
    out = output_dir("--out", "ramp-2026-11-29", OUTPUT_NAMES)
    add_renamed(p, "--out", "--output", dest="output", type=out)
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def _one_line_key(key: str, source: str) -> str:
    """The key as read from ``source``, trailing newlines dropped: one line of text that can be
    sent in a header (the key itself never goes in a message)."""
    key = key.rstrip("\n")
    if not key:
        raise BadArgument(f"the API key in {source} is empty: put the server's key there")
    if not key.isprintable() or not all(ord(c) < 256 for c in key):
        raise BadArgument(
            f"the API key in {source} has a line break, a control or a non-Latin-1 character: "
            "a key is one line of text, as vLLM's --api-key takes it"
        )
    return key


def _read_key(path: Path, source: str, hint: str) -> str:
    try:
        return _one_line_key(path.read_text(encoding="utf-8"), source)
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or "not UTF-8 text"
        raise BadArgument(f"{source} cannot be read ({why}): {hint}") from None


def api_key(args: argparse.Namespace, host: Host | None) -> str | None:
    """``--api-key-file``, else the host file's ``api_key``, else ``$VLLM_API_KEY``, else none."""
    if args.api_key_file is not None:
        path = args.api_key_file
        return _read_key(path, f"API key file {path}", "pass --api-key-file FILE")
    env_name = None if host is None else host.api_key_env
    key_file = None if host is None else host.api_key_file
    if key_file:
        hint = "run ramp where that file can be read, or pass --api-key-file FILE"
        return _read_key(Path(key_file), f"the host file's api_key.file {key_file}", hint)
    if env_name:
        value = os.environ.get(env_name)
        if value is None:
            raise BadArgument(
                f"the host file's api_key.env {env_name} is not set here: export {env_name} "
                "with the server's key, or pass --api-key-file FILE"
            )
        return _one_line_key(value, f"${env_name}")
    value = os.environ.get("VLLM_API_KEY")  # empty: no key, as vLLM reads it
    return _one_line_key(value, "$VLLM_API_KEY") if value else None


def _target(args: argparse.Namespace) -> tuple[str, str, Host | None]:
    """The URL, the model and the host file (or None), from the flags and ``--host``."""
    host = None
    if args.host is not None:
        from vllm_ledger.deploy.host import load_host

        with file_flag("path", "--host HOST.json"):
            host = load_host(args.host)
    base, model = args.url, args.model
    if host is not None:
        base = base or f"http://{url_host(local_host(host.host))}:{host.port}"
        model = model or host.served_model_name or host.model
    if base is None or model is None:
        missing = " and ".join(f for f, v in (("--url", base), ("--model", model)) if v is None)
        raise BadArgument(
            f"give {missing}, or --host HOST.json to take {'them' if ' and ' in missing else 'it'} "
            "from the host file, e.g. "
            "--url http://127.0.0.1:8000 --model qwen3-8b"
        )
    return base, model, host


def run(args: argparse.Namespace) -> int:
    from vllm_ledger.plan.ramp_load import Load, bearer, run_ramp

    base, model, host = _target(args)
    load = Load(
        base_url=base,
        model=model,
        metrics_url=args.metrics_url or base.rstrip("/") + "/metrics",
        max_tokens=args.max_tokens,
        headers=bearer(api_key(args, host)),
        **({} if args.prompt is None else {"prompt": args.prompt}),
    )
    steps = run_ramp(load, args.concurrency, args.duration, progress_bars=not args.no_progress)
    knee = find_knee(steps)
    files = render_files(steps, knee, f"Load ramp: {model} at {base}")
    # Each written whole and only as a regular file: a directory, FIFO or device already at
    # one of those names is refused with one line.
    args.output.mkdir(parents=True, exist_ok=True)
    paths = [args.output / f"ramp.{key}" for key in files]
    for path, data in zip(paths, files.values(), strict=True):
        write_file(path, data, flag="--output", example="--output ramp-2026-11-29")
    sys.stdout.write(render_table(steps, knee))
    for path in paths:
        say_wrote(path)
    # More than 1 % failed in a step: the verdict above says why no knee, the exit says so too.
    return ERRORS_EXIT if errors_verdict(steps) is not None else 0
