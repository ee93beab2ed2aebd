"""vllm-ledger preflight: check this machine against a host file before the first launch."""

from __future__ import annotations

import argparse
import sys

from vllm_ledger.commands._files import input_file
from vllm_ledger.commands._refusals import file_flag, with_flags
from vllm_ledger.commands._values import text
from vllm_ledger.errors import ConfigError

NAME = "preflight"
HELP = "check a host before launch: GPU, CPU, RAM, disk, port, clock"
EPILOG = """examples:
  vllm-ledger preflight --host local/host.json
  vllm-ledger preflight --host local/host.json --bot-user notify
  vllm-ledger preflight --host local/host.json --json
Run it on the machine that will serve, as the user that will launch vLLM.
exit status: 0 no blocker (warnings allowed), 1 a blocker, 2 a bad flag or host file
"""

MAX_HOST_BYTES = 1024 * 1024


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--host",
        required=True,
        type=input_file("--host", "HOST.json", max_bytes=MAX_HOST_BYTES, what="host file"),
        metavar="HOST.json",
        help="the host file `render` reads (JSON)",
    )
    p.add_argument(
        "--bot-user",
        type=text("--bot-user", "notify"),
        metavar="NAME",
        help="the user the bot logs in as: check that it can read the ledger folder",
    )
    p.add_argument("--json", action="store_true", help="print JSON (schema 1, docs/json-schema.md)")


def run(args: argparse.Namespace) -> int:
    from vllm_ledger.deploy.host import load_host
    from vllm_ledger.deploy.preflight import preflight, table

    with file_flag("path", "--host HOST.json"):
        try:
            host = load_host(args.host)
        except ConfigError as exc:  # the renderers' usage is render's flag
            what = with_flags(exc.what, {"usage": "`render --usage`"})
            raise ConfigError(what, exc.key, hint=exc.hint) from exc
    result = preflight(host, bot_user=args.bot_user)
    if args.json:
        from vllm_ledger.formats.command_json import dumps, preflight_dict

        sys.stdout.write(dumps(preflight_dict(result)))
        return 1 if result.blocked else 0
    for line in table(result):
        print(line)
    blockers = sum(f.result == "BLOCKER" for f in result.findings)
    print(f"{blockers} blocker{'s' if blockers != 1 else ''}")
    return 1 if result.blocked else 0
