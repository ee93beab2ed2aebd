"""vllm-ledger enforce: the budgets' enforcer beside vLLM (a sidecar), or a one-shot look."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from vllm_ledger.commands._service_log import service_logging
from vllm_ledger.commands._times import TIME_FLAG_HELP, resolve_flag, time_flag
from vllm_ledger.errors import BadArgument
from vllm_ledger.format.identity import default_root
from vllm_ledger.formats.safe import printable
from vllm_ledger.units import BUDGETS_ENV, ENFORCER_ENV

if TYPE_CHECKING:
    from vllm_ledger.plan.budgets import BudgetConfig

NAME = "enforce"
HELP = "judge the budgets every 5 s and publish who is over (hard budgets), or look once"
EPILOG = f"""examples:
  vllm-ledger enforce --root /srv/artifacts/usage --config /etc/vllm-ledger/budgets.toml
  vllm-ledger enforce --root /srv/artifacts/usage --config budgets.toml --once
  vllm-ledger enforce --root /srv/artifacts/usage --config budgets.toml --once --json
  vllm-ledger enforce --root /srv/artifacts/usage --config budgets.toml --once --at 1796194800
vLLM's rank 0 already runs the enforcer where ${BUDGETS_ENV} names the budgets file; run this
one beside vLLM instead (a sidecar) with {ENFORCER_ENV}=0 in vLLM's environment. One enforcer
holds a root at a time: a second one stands by and takes over when the first stops. --once
prints each budget's state and what the enforcer's file says, and writes nothing
(docs/budgets.md).
exit status: 0 stopped (SIGTERM or Ctrl-C) or looked, 2 a bad flag or budgets file
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--root",
        type=Path,
        metavar="DIR",
        help="the ledger root (vLLM's VLLM_LEDGER_DIR); default: $VLLM_LEDGER_DIR or "
        "~/.local/share/vllm-ledger",
    )
    p.add_argument(
        "--config",
        type=Path,
        required=True,
        metavar="FILE",
        help="the budgets file, JSON or TOML (docs/budgets.md)",
    )
    p.add_argument(
        "--once",
        action="store_true",
        help="judge once and print each budget's state; publish nothing",
    )
    p.add_argument(
        "--at",
        type=time_flag("--at"),
        metavar="TIME",
        help=f"with --once: judge as of TIME (default: now) in the budgets' zone: {TIME_FLAG_HELP}",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="with --once: the states as JSON (docs/budgets.md#the-enforcer)",
    )


def _root(args: argparse.Namespace) -> Path:
    root: Path = args.root or default_root(os.environ)
    if not root.is_dir():
        raise BadArgument(
            f"ledger root {root} is not a directory: pass --root DIR where the ledgers are"
        )
    return root


def run(args: argparse.Namespace) -> int:
    from vllm_ledger.plan.budgets import load_budgets

    if not args.once and (args.at is not None or args.json):
        raise BadArgument("--at and --json shape a one-shot look: add --once")
    root = _root(args)
    config = load_budgets(args.config)  # a bad file: one line, exit 2
    if args.once:
        return look(root, args, config)
    return publish(root, args.config, len(config.budgets))


def look(root: Path, args: argparse.Namespace, config: BudgetConfig) -> int:
    import time
    from zoneinfo import ZoneInfo

    from vllm_ledger.enforcer import judge
    from vllm_ledger.formats.budget_states import states_json, states_text
    from vllm_ledger.plan.enforcement import look_at
    from vllm_ledger.read.zone import resolve_zone

    tz_name = config.zone or resolve_zone(None, os.environ, [root]).name
    at = resolve_flag(args.at, "--at", tz_name)
    at_ts = at if at is not None else time.time()
    states = judge(root, config, lambda: at_ts)
    file_look = look_at(root, time.time())  # the file as it is now, whatever --at says
    if args.json:
        sys.stdout.write(
            states_json(
                states,
                file_look,
                at_ts=int(at_ts),
                tz=tz_name,
                root=str(root),
                config=str(args.config),
            )
        )
        return 0
    currency = config.rates.currency if config.rates is not None else ""
    lines = states_text(
        states,
        file_look,
        at_ts=int(at_ts),
        tz=ZoneInfo(tz_name),
        tz_name=tz_name,
        config=str(args.config),
        currency=currency,
    )
    print("\n".join(lines))
    return 0


def publish(root: Path, config_path: Path, budgets: int) -> int:
    """Publish every 5 s until SIGTERM or Ctrl-C; while another enforcer holds the root, stand
    by and take over when it stops."""
    from vllm_ledger import enforcer
    from vllm_ledger.format.overbudget import path_in

    service_logging()
    # Its one INFO line is "another enforcer holds ROOT", once per retry: said once below.
    logging.getLogger(enforcer.logger.name).setLevel(logging.WARNING)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    say = f"vllm-ledger enforce: {budgets} budget{'' if budgets == 1 else 's'} from " + printable(
        str(config_path)
    )
    print(
        f"{say}; publishing {printable(str(path_in(root)))} every {enforcer.INTERVAL_S:g} s",
        file=sys.stderr,
        flush=True,
    )
    waiting = False
    while not stop.is_set():
        code = enforcer.run(root, config_path, stop=stop)
        if code != 0 or stop.is_set():
            return code
        if not waiting:  # run() returned at once: another enforcer holds the root
            print(
                f"vllm-ledger enforce: another enforcer holds {printable(str(root))} (vLLM's "
                "rank 0, or another enforce): standing by to take over when it stops",
                file=sys.stderr,
                flush=True,
            )
            waiting = True
        stop.wait(enforcer.INTERVAL_S)
    return 0
