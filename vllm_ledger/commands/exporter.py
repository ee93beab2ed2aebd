"""vllm-ledger exporter: serve the ledgers as Prometheus metrics, in a process of its own."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from vllm_ledger.bot.transport import status_argv
from vllm_ledger.commands._ledger_flags import add_roots, roots_of
from vllm_ledger.commands._refusals import typed
from vllm_ledger.commands._renamed import add_renamed
from vllm_ledger.commands._service_log import service_logging
from vllm_ledger.commands._values import listen, number, port, text
from vllm_ledger.commands._zones import add_tz, zone_of
from vllm_ledger.errors import BadArgument
from vllm_ledger.hostport import Address
from vllm_ledger.names import (
    DEFAULT_ATTRIBUTION_LABELS,
    DEFAULT_ATTRIBUTION_SERIES,
    LEDGER_GENERATION_TOKENS_TOTAL,
    OTHER_VALUE,
)
from vllm_ledger.observe.budgets import BudgetWatch
from vllm_ledger.observe.exporter import serve
from vllm_ledger.observe.status_route import STATUS_FLAG, StatusRoute, load_token
from vllm_ledger.observe.whose import AttributionConfig, parse_labels
from vllm_ledger.plan.budgets import load_budgets
from vllm_ledger.units import BUDGETS_ENV

NAME = "exporter"
HELP = "serve restart-proof token counters, windows, coverage and GPU readings on /metrics"
EPILOG = f"""example:
  vllm-ledger exporter --root /srv/artifacts/usage --listen 0.0.0.0:9464
  curl -s http://127.0.0.1:9464/metrics | grep '^{LEDGER_GENERATION_TOKENS_TOTAL}'
  vllm-ledger exporter --root /srv/artifacts/usage --attribution-labels key,adapter,user
  vllm-ledger exporter --root /srv/artifacts/usage --budgets /etc/vllm-ledger/budgets.toml
  vllm-ledger exporter --root /srv/artifacts/usage --listen 0.0.0.0:9464 \\
      --status-token-file /etc/vllm-ledger/status_token
  curl -s -H "Authorization: Bearer $(cat /etc/vllm-ledger/status_token)" \\
      http://127.0.0.1:9464/status
exit status: serves until stopped (130 after Ctrl-C; 0 if the server ever returns), 2 a bad
flag or an address it cannot listen on
"""

DEFAULT_LISTEN = "127.0.0.1:9464"


def _with_port(host: str) -> str:
    return f"{host}:{DEFAULT_LISTEN.rpartition(':')[2]}"


def _on_host(port_: int) -> str:
    return f"{DEFAULT_LISTEN.rpartition(':')[0]}:{port_}"


def configure(p: argparse.ArgumentParser) -> None:
    add_roots(p)
    p.add_argument(
        "--listen",
        type=listen("--listen", DEFAULT_LISTEN),
        metavar="HOST:PORT",
        help=f"address to listen on (default {DEFAULT_LISTEN}; 0.0.0.0:9464 for a remote "
        "Prometheus; port 0: any free port)",
    )
    add_renamed(
        p, "--host", "--listen", dest="host", type=text("--host", "0.0.0.0"), show=_with_port
    )
    add_renamed(
        p, "--port", "--listen", dest="port", type=port("--port", "9464", zero=True), show=_on_host
    )
    add_tz(p, "the 'today' window")
    p.add_argument("--no-gpu", action="store_true", help="do not read GPUs through NVML")
    p.add_argument(
        "--attribution-labels",
        type=typed("--attribution-labels", parse_labels),
        default=DEFAULT_ATTRIBUTION_LABELS,
        metavar="LABELS",
        help="the labels of the whose-tokens series, some of key,adapter,user,tenant (default "
        f"{','.join(DEFAULT_ATTRIBUTION_LABELS)}). user and tenant are off unless named: each end "
        "user is a series of its own, and a label with one value per user can make Prometheus "
        "hold millions of series (cardinality); report --by user reads them from the ledger "
        "(docs/observability.md#whose-tokens)",
    )
    p.add_argument(
        "--attribution-series",
        type=number("--attribution-series", 1, 100_000, "100", integer=True),
        default=DEFAULT_ATTRIBUTION_SERIES,
        metavar="N",
        help=f"the most label sets each whose-tokens counter serves, and values each window "
        f"serves per label (default {DEFAULT_ATTRIBUTION_SERIES}); the rest are served as "
        f"'{OTHER_VALUE}'",
    )
    p.add_argument(
        "--budgets",
        type=Path,
        metavar="FILE",
        help=f"serve each budget of this budgets file (used, limit, fraction in its period) and "
        f"whether hard budgets hold (default: ${BUDGETS_ENV}; docs/budgets.md); observability "
        "--budgets writes the rules on them",
    )
    p.add_argument(
        STATUS_FLAG,
        type=Path,
        metavar="FILE",
        help="serve the bot's status document (what `vllm-ledger status` prints) on GET "
        "/status to a request with 'Authorization: Bearer TOKEN', the token read from this "
        "file at start: the notifier's http transport (docs/bot-status.md); without it /status "
        "answers 404",
    )


def address_of(args: argparse.Namespace) -> Address:
    """Where to listen: ``--listen``, or the deprecated ``--host``/``--port`` over the default."""
    host, port_ = getattr(args, "host", None), getattr(args, "port", None)
    if args.listen is not None:
        if host is not None or port_ is not None:
            raise BadArgument("--listen and --host/--port: give --listen HOST:PORT alone")
        return args.listen
    default_host, default_port = listen()(DEFAULT_LISTEN)
    return (default_host if host is None else host, default_port if port_ is None else int(port_))


def budgets_of(args: argparse.Namespace, zone: str) -> BudgetWatch | None:
    """The budgets to serve: ``--budgets``, else the file the environment names; a file that
    cannot be used is refused in one line before anything is served."""
    path = args.budgets or os.environ.get(BUDGETS_ENV, "").strip() or None
    if path is None:
        return None
    return BudgetWatch.of(load_budgets(Path(path)), zone)


def status_of(args: argparse.Namespace, roots: list[Path]) -> StatusRoute | None:
    """The /status route: the status command over the exporter's roots, with its --tz and
    --budgets where given (else the command finds them as under the forced command: the
    environment, the root's zone file); None without a token file."""
    path = getattr(args, "status_token_file", None)
    if path is None:
        return None
    token = load_token(path)
    budgets = None if args.budgets is None else str(args.budgets)
    argv = status_argv(sys.executable, str(roots[0].resolve()), budgets)
    for root in roots[1:]:
        argv += ["--root", str(root.resolve())]
    return StatusRoute([*argv, *(("--tz", args.tz) if args.tz is not None else ())], token)


def run(args: argparse.Namespace) -> int:
    host, port_ = address_of(args)
    roots = roots_of(args)
    zone = zone_of(args, roots)  # once, at start: a zone file written later needs a restart
    budgets = budgets_of(args, zone.name)
    status = status_of(args, roots)
    service_logging()
    try:
        serve(
            roots,
            host=host,
            port=port_,
            tz=zone.name,
            tz_origin=zone.origin,
            gpu=not args.no_gpu,
            attribution=AttributionConfig(args.attribution_labels, int(args.attribution_series)),
            budgets=budgets,
            status=status,
        )
    except BadArgument as exc:
        if exc.argument != "address":
            raise
        raise BadArgument(f"{exc.what}; pick another --listen HOST:PORT") from None
    return 0
