"""vllm-ledger render: a host file becomes a reviewed vLLM launch script (never run here)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from vllm_ledger.deploy.host import MODES, load_host, schema_json
from vllm_ledger.deploy.launch import render_script
from vllm_ledger.errors import BadArgument, ConfigError

NAME = "render"
HELP = "write a vLLM launch script (docker run or vllm serve) from a host file"
EPILOG = """examples:
  vllm-ledger render --host local/host.json --output local/run.sh --usage
  vllm-ledger render --host local/host.json --output local/run.sh --mode bare
  vllm-ledger render --print-schema > host.schema.json
The script is only written, never started: review it (git diff), then run it yourself.
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", type=Path, metavar="HOST.json", help="the host file (JSON)")
    p.add_argument("--output", metavar="FILE", help="script to write, mode 0755 ('-': stdout)")
    p.add_argument(
        "--usage",
        action="store_true",
        help="switch the usage ledger on (plugin folder, ledger dir, writer count)",
    )
    p.add_argument(
        "--mode",
        choices=MODES,
        help="docker (docker run of the vLLM image) or bare (vllm serve); "
        "default: the host file's mode, else docker",
    )
    p.add_argument(
        "--print-schema", action="store_true", help="print the host file's JSON Schema and exit"
    )


def run(args: argparse.Namespace) -> int:
    if args.print_schema:
        sys.stdout.write(schema_json())
        return 0
    if args.host is None or args.output is None:
        raise BadArgument("render needs --host HOST.json and --output FILE (or --print-schema)")
    host = load_host(args.host)
    mode = args.mode or host.mode
    try:
        text = render_script(host, mode=mode, usage=args.usage)
    except ConfigError as exc:
        raise ConfigError(f"host file {args.host}: {exc}", key=exc.key) from exc
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    out = Path(args.output)
    _write_atomically(out, text)
    ledger = "on" if args.usage else "off"
    print(
        f"wrote {out} ({mode} mode, ledger {ledger}); review it, then start it: bash {out}",
        file=sys.stderr,
    )
    return 0


def _write_atomically(path: Path, text: str) -> None:
    if path.is_dir():
        raise BadArgument(f"--output {path} is a directory: give a file name like run.sh")
    if not path.parent.is_dir():
        raise BadArgument(f"--output {path}: folder {path.parent} does not exist: create it first")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
