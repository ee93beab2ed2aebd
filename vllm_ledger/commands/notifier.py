"""vllm-ledger notifier: run the bot (commands in, health and alerts out), show or resend."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from datetime import tzinfo
from pathlib import Path
from types import FrameType

from vllm_ledger.bot.validate import MAX_CONFIG_BYTES
from vllm_ledger.commands._files import input_file
from vllm_ledger.commands._refusals import file_flag
from vllm_ledger.commands._service_log import service_logging
from vllm_ledger.commands._zones import add_local_tz, local_zone_of
from vllm_ledger.errors import BadArgument, ConfigError, LedgerError
from vllm_ledger.http.urls import local_host
from vllm_ledger.notify.config import DEFAULT_LISTEN, parse_listen

NAME = "notifier"
HELP = "run the chat bot: status replies, health and alerts, sent once"
EPILOG = """example:
  vllm-ledger notifier --config /etc/notify/private.json
  vllm-ledger notifier status --config /etc/notify/private.json
  vllm-ledger notifier status --config /etc/notify/private.json --tz Asia/Shanghai
  vllm-ledger notifier resend 12 --config /etc/notify/private.json
  vllm-ledger notifier --print-unit --config /etc/notify/private.json > vllm-ledger-notifier.service

Secrets (the command secret, the webhook URL and its signing secret) come from files named in
the config's "notifier" object or from VLLM_LEDGER_COMMAND_SECRET, VLLM_LEDGER_WEBHOOK_URL and
VLLM_LEDGER_WEBHOOK_SECRET, never from the command line. The state is kept in
CONFIG.notifier.sqlite beside the config. `notifier status` shows its times with their offset
in --tz, else $VLLM_LEDGER_TZ, else this machine's zone ($TZ, /etc/localtime, UTC). See
docs/notifier.md.
exit status: 0 done (serve: stopped), 1 status found failed deliveries or a stopped loop
(not with --json), 2 a bad flag or config
"""

ACTIONS = ("run", "status", "resend")
STATUS_JSON_SCHEMA = 1  # `notifier status --json`: docs/json-schema.md


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        nargs="?",
        choices=ACTIONS,
        default="run",
        help="run (default): serve until SIGTERM; status: deliveries, failures, cursor, "
        "health, budgets near or over and digests from the state file; resend ID: send a "
        "delivery again, once (the same command again answers with the copy already queued)",
    )
    p.add_argument(
        "delivery_id",
        nargs="?",
        metavar="ID",
        help="with resend: the delivery id (from `notifier status` or a status reply)",
    )
    p.add_argument(
        "--config",
        required=True,
        type=input_file("--config", "/etc/notify/private.json", max_bytes=MAX_CONFIG_BYTES),
        metavar="FILE",
        help='the notification config (JSON with a "usage" and an optional "notifier" object)',
    )
    p.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help=f"where to serve commands and alerts (default: the config's, else {DEFAULT_LISTEN})",
    )
    p.add_argument(
        "--ssh-config",
        type=input_file("--ssh-config", "~/.ssh/bot_config", max_bytes=MAX_CONFIG_BYTES),
        metavar="FILE",
        help="an ssh client config for the targets (ssh -F FILE; default: the config's)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="with status: print JSON (schema 1, docs/json-schema.md)",
    )
    add_local_tz(p, "the times `notifier status` prints")
    p.add_argument(
        "--print-unit",
        action="store_true",
        help="print a systemd unit that runs this notifier with this config, and exit",
    )


def _delivery_id(args: argparse.Namespace) -> int:
    value = args.delivery_id
    if value is None or not value.isdigit() or not 1 <= int(value) <= 10**12:
        raise BadArgument(
            f"resend needs a delivery id, not {value!a}: e.g. vllm-ledger notifier "
            "resend 12 --config FILE (ids are in `notifier status`)"
        )
    return int(value)


def run(args: argparse.Namespace) -> int:
    config = Path(args.config).resolve()
    if args.action != "resend" and args.delivery_id is not None:
        raise BadArgument(f"an ID is only taken by resend, not by {args.action}")
    if args.print_unit:
        from vllm_ledger.notify.unit import unit_text

        sys.stdout.write(unit_text(sys.executable, config))
        return 0
    listen = None
    if args.listen is not None:
        try:
            listen = parse_listen(args.listen)
        except ConfigError as exc:
            raise BadArgument(
                f"--listen {args.listen!a}: give HOST:PORT, e.g. 127.0.0.1:9095"
            ) from exc
    if args.action == "status":
        return _status(config, listen, as_json=args.json, tz=local_zone_of(args)[0])
    if args.action == "resend":
        return _resend(config, _delivery_id(args), listen)
    ssh_config = None if args.ssh_config is None else Path(args.ssh_config).resolve()
    return _run(config, listen, ssh_config)


def _run(config: Path, listen: tuple[str, int] | None, ssh_config: Path | None) -> int:
    from vllm_ledger.notify.service import Notifier

    service_logging()
    try:
        with file_flag("path", "--config FILE"):
            notifier = Notifier(config, listen=listen, ssh_config=ssh_config)
        notifier.start()
    except OSError as exc:
        raise LedgerError(
            f"the notifier cannot start: {exc.strerror or exc}",
            hint="is another notifier listening on that address?",
        ) from exc
    for r in notifier.refusals:
        print(f"vllm-ledger: refused: {r}", file=sys.stderr)
    cfg = notifier.cfg
    print(
        f"vllm-ledger notifier: listening on {cfg.listen_host}:{notifier.endpoint.port}, "
        f"{len(notifier.targets)} instance(s), platform {cfg.platform}, "
        f"state {notifier.store.path}"
        + (
            "; interrupted deliveries now unknown (not resent): "
            + ", ".join(f"#{i}" for i in notifier.interrupted)
            if notifier.interrupted
            else ""
        ),
        file=sys.stderr,
        flush=True,
    )

    def stop(signum: int, frame: FrameType | None) -> None:
        notifier._stop.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    notifier.wait()
    notifier.stop()
    return 0


def _address(config: Path, listen: tuple[str, int] | None) -> tuple[str, int] | None:
    """Where the running notifier of ``config`` is asked (``--listen``, else the config's);
    None when the config cannot be read."""
    if listen is not None:
        host, port = listen
    else:
        from vllm_ledger.notify.service import load_config

        try:
            _targets, _refusals, cfg = load_config(config)
        except LedgerError:
            return None
        host, port = cfg.listen_host, cfg.listen_port
    return local_host(host), port


def _status(config: Path, listen: tuple[str, int] | None, *, as_json: bool, tz: tzinfo) -> int:
    from vllm_ledger.formats.notifier_status import NotifierStatus, render_text, status_dict
    from vllm_ledger.notify.healthz import live_loops
    from vllm_ledger.notify.outbox import MAX_PENDING
    from vllm_ledger.notify.state_file import state_path
    from vllm_ledger.notify.state_read import (
        open_read_only,
        read_budget_levels,
        read_digests,
        read_failures,
        read_health,
        read_recent,
        read_summary,
    )

    path = state_path(config)
    if not path.is_file():
        raise ConfigError(
            f"no notifier state at {path}", hint="start `vllm-ledger notifier --config FILE` first"
        )
    address = _address(config, listen)
    live = None if address is None else live_loops(*address)
    unreachable = None
    if address is not None and live is None:
        unreachable = f"{address[0]}:{address[1]}"
    with open_read_only(path) as db:
        status = NotifierStatus(
            state_file=path,
            summary=read_summary(db),
            failures=read_failures(db, limit=20),
            recent=read_recent(db, limit=20),
            health=read_health(db),
            live=live,
            unreachable=unreachable,
            outbox_limit=MAX_PENDING,
            budgets=read_budget_levels(db),
            digests=read_digests(db),
        )
    if as_json:  # schema first; the keys sorted, as they always were
        doc = {"schema": STATUS_JSON_SCHEMA, **status_dict(status)}
        sys.stdout.write(json.dumps(doc, ensure_ascii=True, sort_keys=True) + "\n")
    else:
        sys.stdout.write(render_text(status, tz))
    return 1 if (status.failures or not status.loops_ok) and not as_json else 0


def _resend(config: Path, delivery_id: int, listen: tuple[str, int] | None) -> int:
    from vllm_ledger.formats.safe import printable
    from vllm_ledger.notify.resend import request_resend
    from vllm_ledger.notify.service import load_config

    with file_flag("path", "--config FILE"):
        _targets, _refusals, cfg = load_config(config)
    listen_host, listen_port = listen or (cfg.listen_host, cfg.listen_port)
    done = request_resend(cfg.command_secret, local_host(listen_host), listen_port, delivery_id)
    if not done.already:
        print(f"delivery #{delivery_id} queued again as #{done.copy_id}")
        return 0
    line = (
        f"delivery #{delivery_id} already queued again as #{done.copy_id} "
        f"(now {printable(done.state)}): nothing more queued"
    )
    if done.state in ("failed", "unknown"):  # the copy did not arrive, or may not have
        line += (
            f"; to send it once more: vllm-ledger notifier resend {done.copy_id} "
            f"--config {printable(config)}"
        )
    print(line)
    return 0
