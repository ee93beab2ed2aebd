"""vllm-ledger poll: fetch every instance's status (over SSH, here, or from an exporter's
/status) and print the bot's reply."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

from vllm_ledger.bot.health import Health, probe_all
from vllm_ledger.bot.message import InstanceView, render_message, shown_health
from vllm_ledger.bot.message_words import LANGS
from vllm_ledger.bot.poll import DEFAULT_DEADLINE_S, DEFAULT_INTERVAL_S, CacheEntry, Fetcher, Poller
from vllm_ledger.bot.ssh_command import DEFAULT_CONNECT_TIMEOUT_S
from vllm_ledger.bot.transport import token_problems
from vllm_ledger.bot.validate import MAX_CONFIG_BYTES, Refusal, Target, load_usage
from vllm_ledger.commands._files import input_file
from vllm_ledger.commands._refusals import file_flag
from vllm_ledger.commands._renamed import add_renamed_duration
from vllm_ledger.commands._values import duration
from vllm_ledger.errors import ConfigError
from vllm_ledger.formats.status import doc_dict
from vllm_ledger.names import POLL_STALE_AFTER_S
from vllm_ledger.units import format_duration

NAME = "poll"
HELP = "ask every configured host for its status (ssh, local or http) and print the bot's reply"
EPILOG = """example:
  vllm-ledger poll --config /etc/notify/private.json --once
  vllm-ledger poll --config /etc/notify/private.json --once --json --lang en

The config's "usage" object maps node ports to {"target", "code_dir", "data_dir"} (over
SSH), {"transport": "local", "data_dir"} (the status command run here) or
{"transport": "http", "url", "token_file"} (an exporter's /status); any mix. See
docs/bot-status.md.
exit status: 0 printed, 1 printed but an entry was refused (each named on stderr), 2 a bad
flag or a config with no usable usage entry, 130 stopped with Ctrl-C (without --once)
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        required=True,
        type=input_file("--config", "/etc/notify/private.json", max_bytes=MAX_CONFIG_BYTES),
        metavar="FILE",
        help='the notification config (JSON with a "usage" object)',
    )
    p.add_argument(
        "--once",
        action="store_true",
        help="poll once and exit (default: poll every --interval until Ctrl-C)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of the message")
    p.add_argument("--lang", choices=LANGS, default="zh", help="message language (default zh)")
    interval = duration("--interval", 1, 86400, "30s")
    p.add_argument(
        "--interval",
        type=interval,
        default=DEFAULT_INTERVAL_S,
        metavar="DURATION",
        help=f"time between polls (default {format_duration(DEFAULT_INTERVAL_S)})",
    )
    add_renamed_duration(p, "--interval-s", "--interval", dest="interval", like=interval)
    deadline = duration("--deadline", 0, 3600, "20s", lo_open=True)
    p.add_argument(
        "--deadline",
        type=deadline,
        default=DEFAULT_DEADLINE_S,
        metavar="DURATION",
        help=f"hard limit per host and poll (default {format_duration(DEFAULT_DEADLINE_S)})",
    )
    add_renamed_duration(p, "--deadline-s", "--deadline", dest="deadline", like=deadline)
    connect = duration("--connect-timeout", 1, 600, "5s", integer=True)
    p.add_argument(
        "--connect-timeout",
        type=connect,
        default=DEFAULT_CONNECT_TIMEOUT_S,
        metavar="DURATION",
        help="ssh ConnectTimeout, whole seconds "
        f"(default {format_duration(DEFAULT_CONNECT_TIMEOUT_S)})",
    )
    add_renamed_duration(
        p, "--connect-timeout-s", "--connect-timeout", dest="connect_timeout", like=connect
    )
    p.add_argument(
        "--ssh-config",
        type=input_file("--ssh-config", "~/.ssh/bot_config", max_bytes=MAX_CONFIG_BYTES),
        metavar="FILE",
        help="an ssh client config for the targets (ssh -F FILE)",
    )
    p.add_argument(
        "--no-health",
        action="store_true",
        help="skip the HTTP /health probe of entries that name a host",
    )


def _result_dict(
    t: Target, health: Health, entry: CacheEntry | None, now_monotonic: float
) -> dict[str, Any]:
    latest = entry.latest if entry else None
    ok = entry.last_ok if entry else None
    health = shown_health(health, entry, t.port)  # the text reply's rule
    age = entry.age_s(now_monotonic) if entry else None
    return {
        "port": t.port,
        "health": health.state,
        "http_status": health.http_status,
        "state": latest.state if latest else "pending",
        "age_seconds": None if age is None else round(age, 3),
        "stale": entry.stale(now_monotonic) if entry else True,
        "round_trip_seconds": round(ok.round_trip_s, 3) if ok else None,
        "clock_offset_seconds": (
            round(ok.clock_offset_s, 3) if ok and ok.clock_offset_s is not None else None
        ),
        "clock_hint": bool(ok and ok.clock_hint),
        "status": doc_dict(ok.status) if ok and ok.status else None,
    }


def render_once(
    targets: Sequence[Target],
    refusals: Sequence[Refusal],
    poller: Poller,
    health: dict[int, Health],
    *,
    as_json: bool,
    lang: str,
    now_monotonic: float,
) -> str:
    cache = poller.cache()
    if as_json:
        doc = {
            "stale_after_seconds": POLL_STALE_AFTER_S,
            "instances": [
                _result_dict(t, health[t.port], cache.get(t.port), now_monotonic) for t in targets
            ],
            "refused": [{"key": r.key, "field": r.field, "message": r.message} for r in refusals],
        }
        return json.dumps(doc, ensure_ascii=False, allow_nan=False) + "\n"
    views = [InstanceView(t.port, t.host, health[t.port], cache.get(t.port)) for t in targets]
    return render_message(views, now_monotonic=now_monotonic, lang=lang)


def run(args: argparse.Namespace) -> int:
    with file_flag("path", "--config FILE"):
        targets, refusals = load_usage(args.config)
    for r in refusals:
        print(f"vllm-ledger: refused: {r}", file=sys.stderr)
    for line in token_problems(targets):  # polled all the same: the file may appear
        print(f"vllm-ledger: warning: {line}", file=sys.stderr)
    if not targets:
        raise ConfigError(
            f"no usable usage entry in {args.config}: fix the entries above", key="usage"
        )
    options: list[str] = []
    if args.ssh_config is not None:
        options = ["-F", str(args.ssh_config.resolve())]
    fetch = Fetcher(
        ssh_options=options, deadline_s=args.deadline, connect_timeout_s=args.connect_timeout
    )
    poller = Poller(targets, fetch, interval_s=args.interval)

    def health_now() -> dict[int, Health]:
        if args.no_health:
            return {t.port: Health(t.port, "unknown") for t in targets}
        return probe_all(targets)

    def emit() -> None:
        out = render_once(
            targets,
            refusals,
            poller,
            health_now(),
            as_json=args.json,
            lang=args.lang,
            now_monotonic=time.monotonic(),
        )
        sys.stdout.write(out)
        sys.stdout.flush()

    if args.once:
        poller.poll_once()
        emit()
        return 1 if refusals else 0
    poller.start()
    try:
        while True:
            rounds = poller.rounds_total
            # Print after each completed round; the poller thread never waits for us.
            while poller.rounds_total == rounds:
                time.sleep(0.2)
            emit()
            sys.stdout.write("\n")  # a blank line between rounds
    finally:
        poller.stop(timeout_s=1.0)
