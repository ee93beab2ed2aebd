"""vllm-ledger render: a host file becomes a reviewed vLLM launch script (never run here)."""

from __future__ import annotations

import argparse
import sys

from vllm_ledger.commands._common import input_file, output_file
from vllm_ledger.deploy.host import MODES, load_host, schema_json
from vllm_ledger.deploy.launch import render_script
from vllm_ledger.errors import BadArgument, ConfigError
from vllm_ledger.outfile import write_file

NAME = "render"
HELP = "write a vLLM launch script (docker run or vllm serve) from a host file"
EPILOG = """examples:
  vllm-ledger render --host local/host.json --output local/run.sh --usage
  vllm-ledger render --host local/host.json --output local/run.sh --mode bare
  vllm-ledger render --print-schema > host.schema.json
The script is only written, never started: review it (git diff), then run it yourself.
"""


MAX_HOST_BYTES = 1024 * 1024


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--host",
        type=input_file("--host", "HOST.json", max_bytes=MAX_HOST_BYTES, what="host file"),
        metavar="HOST.json",
        help="the host file (JSON)",
    )
    p.add_argument(
        "--output",
        type=output_file("--output", "run.sh", stdout=True),
        metavar="FILE",
        help="script to write, mode 0755, a regular file replaced whole ('-': stdout)",
    )
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
    out = args.output
    write_file(out, text.encode("utf-8"), flag="--output", example="--output run.sh", mode=0o755)
    ledger = "on" if args.usage else "off"
    print(
        f"wrote {out} ({mode} mode, ledger {ledger}); review it, then start it: bash {out}",
        file=sys.stderr,
    )
    return 0
