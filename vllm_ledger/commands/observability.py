"""vllm-ledger observability: write a ready Prometheus + Alertmanager + Grafana + DCGM stack."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path

from vllm_ledger.commands._files import add_output_folder, output_dir, output_folder, say_wrote
from vllm_ledger.commands._thresholds import add_threshold_flags, duration_flag, thresholds_of
from vllm_ledger.commands._values import number, url
from vllm_ledger.errors import BadArgument
from vllm_ledger.formats.safe import printable
from vllm_ledger.observe.alert_rule import Thresholds
from vllm_ledger.observe.alerts import ALERT_SETS, DEFAULT_RUNBOOK, MINIMAL
from vllm_ledger.observe.budget_alerts import DEFAULT_BUDGETS_RUNBOOK
from vllm_ledger.observe.dashboard import DEFAULT_MAX_MODEL_LEN
from vllm_ledger.observe.stack import (
    ALERTMANAGER_SERVICE_TARGET,
    CADVISOR_SERVICE_TARGET,
    DCGM_SERVICE_TARGET,
    DEFAULT_EXPORTER_TARGET,
    DEFAULT_NODE_TARGET,
    DEFAULT_TOKEN_FILE,
    DEFAULT_VLLM_TARGET,
    GRAFANA_PORT,
    PLACEHOLDER_WEBHOOK,
    PROMETHEUS_LABEL,
    TOKEN_IN_CONTAINER,
    StackSpec,
)
from vllm_ledger.observe.stack_write import documents, write_stack
from vllm_ledger.observe.targets import check_named_target, check_target, is_loopback
from vllm_ledger.outfile import check_target as check_output
from vllm_ledger.plan.budgets import load_budgets

NAME = "observability"
HELP = "write prometheus.yml, alert rules, alertmanager.yml, a Grafana dashboard and compose.yaml"
EPILOG = f"""example:
  vllm-ledger observability --output ./monitoring --vllm 192.168.1.10:8000=gpu1:8000 \\
      --exporter 192.168.1.10:9464=gpu1:9464 --webhook-url http://192.168.1.5:9095/alertmanager
  cd monitoring && docker compose up -d   # Grafana on http://HOST:{GRAFANA_PORT}
  vllm-ledger observability --output ./monitoring --budgets /etc/vllm-ledger/budgets.toml

Targets are scraped from inside the Prometheus container: 127.0.0.1 there is the container
itself, so give the host's address or {DEFAULT_VLLM_TARGET.split(":")[0]}:PORT. ADDRESS=NAME
names a target: for a vLLM, give the name `vllm-ledger report --by instance` prints, so the
dashboard's $instance picks vLLM's series and the ledger's with one value.

Each alert links to its section of the runbook: publish docs/runbook.md where the people who
get the alert can open it (your Git host shows the file; or a wiki page with its headings) and
pass that page, e.g. --runbook-url https://git.example.com/ops/vllm-ledger/blob/main/docs/runbook.md
With --budgets FILE, budgets.yml holds one rule per budget and level (BudgetSoft, BudgetHard)
on the gauges `vllm-ledger exporter --budgets FILE` serves, and BudgetEnforcerFailingOpen when
hard budgets stop being enforced (docs/budgets.md).
exit status: 0 written, 1 the system refused a write (a full disk, a denied folder), 2 a bad
flag, target or output folder
"""


RUNBOOK_EXAMPLE = "https://git.example.com/ops/vllm-ledger/blob/main/docs/runbook.md"


def _runbook_flag(flag: str) -> Callable[[str], str]:
    """A published page's http(s) URL; each alert's anchor is added after a '#'."""
    page = url(flag, RUNBOOK_EXAMPLE)

    def parse(value: str) -> str:
        given = page(value)
        if "#" in given:
            raise BadArgument(
                f"{flag} {value[:80]!r} has a '#': each alert adds its own anchor; give the "
                f"page alone, e.g. {flag} {RUNBOOK_EXAMPLE}"
            )
        return given

    return parse


_runbook = _runbook_flag("--runbook-url")


def _token_file(value: str) -> str:
    """A file path (made absolute here) that compose's volume syntax can carry: no ':' or ','."""
    if not value or any(c in value for c in ":,\n") or len(value) > 4096:
        raise BadArgument(
            f"--alertmanager-token-file {value[:80]!r} is not a file path without ':' or ',': "
            "give e.g. --alertmanager-token-file /etc/notify/alertmanager_token"
        )
    return os.path.abspath(os.path.expanduser(value))


def configure(p: argparse.ArgumentParser) -> None:
    d = Thresholds()
    add_output_folder(
        p,
        lambda flag: output_dir(flag, "./monitoring", ()),
        metavar="OUT_DIR",
        help="folder to write the stack to (each file a regular file, replaced whole)",
    )
    _add_targets(p, d)
    _add_alerting(p)
    _add_budgets(p)
    _add_remote_write(p)
    p.add_argument(
        "--max-model-len",
        type=number("--max-model-len", 1, 1e8, "32768", unit="tokens", integer=True),
        default=DEFAULT_MAX_MODEL_LEN,
        metavar="TOKENS",
        help="the vLLM's --max-model-len, drawn against the mean tokens per request (default "
        f"{DEFAULT_MAX_MODEL_LEN}; the dashboard's max_model_len box changes it later)",
    )
    p.add_argument(
        "--scrape-interval",
        type=duration_flag("--scrape-interval", 1, 3600, "15s"),
        default="15s",
        metavar="DURATION",
        help="Prometheus scrape and rule interval (default 15s)",
    )
    add_threshold_flags(p, d)


def _add_targets(p: argparse.ArgumentParser, d: Thresholds) -> None:
    """What Prometheus scrapes: vLLM, DCGM, the node exporter, cAdvisor, the ledger exporter."""
    p.add_argument(
        "--vllm",
        action="append",
        metavar="HOST:PORT[=NAME]",
        help="a vLLM server to scrape, NAME its instance label (the ledger's HOST:PORT, as "
        f"`report --by instance` prints it; repeatable; default {DEFAULT_VLLM_TARGET})",
    )
    p.add_argument(
        "--dcgm",
        metavar="HOST:PORT[=NAME]",
        help="an already running DCGM exporter (default: run one in the compose file, "
        f"scraped at {DCGM_SERVICE_TARGET})",
    )
    p.add_argument(
        "--no-dcgm",
        action="store_true",
        help="no DCGM at all (no GPU, or the exporter's NVML gauges are enough)",
    )
    p.add_argument(
        "--node-exporter",
        metavar="HOST:PORT[=NAME]",
        help="an already running node exporter, e.g. Debian's prometheus-node-exporter on "
        f"the host (default: run one in the compose file, scraped at {DEFAULT_NODE_TARGET})",
    )
    p.add_argument(
        "--cadvisor",
        metavar="HOST:PORT[=NAME]",
        help="an already running cAdvisor (default: run one in the compose file, scraped at "
        f"{CADVISOR_SERVICE_TARGET})",
    )
    p.add_argument(
        "--ledger-mountpoint",
        type=_mountpoint,
        default=d.ledger_mountpoint,
        metavar="PATH",
        help="the mount point of the file system holding the ledger root, as the node exporter "
        f"reports it (`df ROOT` shows it; default {d.ledger_mountpoint}): LedgerDiskNearFull "
        "and the dashboard's disk panel watch it",
    )
    p.add_argument(
        "--exporter",
        metavar="HOST:PORT[=NAME]",
        default=DEFAULT_EXPORTER_TARGET,
        help=f"the `vllm-ledger exporter` (default {DEFAULT_EXPORTER_TARGET})",
    )


def _add_alerting(p: argparse.ArgumentParser) -> None:
    """Where alerts go (Alertmanager, the notifier's webhook and its token), which, and their
    runbook."""
    p.add_argument(
        "--alertmanager",
        metavar="HOST:PORT",
        help="an already running Alertmanager (default: run one in the compose file, "
        f"at {ALERTMANAGER_SERVICE_TARGET})",
    )
    p.add_argument(
        "--webhook-url",
        type=url("--webhook-url", "http://192.168.1.5:9095/alertmanager"),
        default=PLACEHOLDER_WEBHOOK,
        metavar="URL",
        help="where Alertmanager posts alerts: the notifier's webhook (default: the notifier's "
        f"/alertmanager on the Docker host, {PLACEHOLDER_WEBHOOK})",
    )
    p.add_argument(
        "--alertmanager-token-file",
        type=_token_file,
        metavar="FILE",
        help="the bearer token Alertmanager sends to the webhook: the same token as the "
        "notifier's alertmanager_token_file (default OUT_DIR/"
        f"{DEFAULT_TOKEN_FILE}; a new random token is written there when the file does not "
        f"exist, an existing one is kept; the compose file mounts it at {TOKEN_IN_CONTAINER})",
    )
    p.add_argument(
        "--alerts",
        choices=ALERT_SETS,
        default="minimal",
        help=f"minimal (the default): the three to start with ({', '.join(MINIMAL)}); "
        "--alerts full: every rule, at three levels (info: early signs, warning, critical; "
        "docs/observability.md says what each means)",
    )
    p.add_argument(
        "--runbook-url",
        type=_runbook,
        metavar="URL",
        help="the http(s) address of the published runbook: each alert's runbook_url is URL"
        "#alertname. Publish docs/runbook.md where your team can open it (your Git host's page "
        "of the file, or a wiki page with the same headings), then pass its URL, e.g. "
        f"{RUNBOOK_EXAMPLE} (default {DEFAULT_RUNBOOK}#alertname, a path in this project that "
        "a chat cannot open; docs/observability.md)",
    )


def _add_budgets(p: argparse.ArgumentParser) -> None:
    """The budgets' rules (budgets.yml) and their runbook."""
    p.add_argument(
        "--budgets",
        type=Path,
        metavar="FILE",
        help="the budgets file: write budgets.yml, a rule per budget and level (soft: warning, "
        "hard: critical) and one when enforcement fails open; give the exporter the same "
        "file (exporter --budgets FILE; docs/budgets.md)",
    )
    p.add_argument(
        "--budgets-runbook-url",
        type=_runbook_flag("--budgets-runbook-url"),
        metavar="URL",
        help="with --budgets: the http(s) address of the published docs/budgets.md, each "
        f"budget alert's runbook_url is URL#alertname (default {DEFAULT_BUDGETS_RUNBOOK}"
        "#alertname)",
    )


def _add_remote_write(p: argparse.ArgumentParser) -> None:
    """Where Prometheus also sends every series, and the name it sends them under."""
    p.add_argument(
        "--remote-write",
        type=url("--remote-write", "http://192.168.1.5:8428/api/v1/write"),
        metavar="URL",
        help="also send every series to this remote-write store (VictoriaMetrics: "
        "http://HOST:8428/api/v1/write; Mimir, Thanos receive, another Prometheus), labelled "
        f"{PROMETHEUS_LABEL}=NAME (--prometheus-name)",
    )
    p.add_argument(
        "--prometheus-name",
        type=_label_value,
        metavar="NAME",
        help="this Prometheus's external label, on every series it sends away and every alert "
        f"(default: this host's name; {PROMETHEUS_LABEL}=NAME)",
    )


def _label_value(value: str) -> str:
    """A label value that reads back as given: printable, no quote or backslash, at most 253."""
    if not value or len(value) > 253 or any(c in '"\\' or not c.isprintable() for c in value):
        raise BadArgument(
            f"--prometheus-name {value[:80]!r} is not a plain name: give e.g. "
            "--prometheus-name monitor1"
        )
    return value


def _mountpoint(value: str) -> str:
    """An absolute path without control characters, as a mount point is written."""
    if not value.startswith("/") or any(ord(c) < 32 or c == "\x7f" for c in value):
        raise BadArgument(
            f"--ledger-mountpoint {value[:80]!r} is not an absolute path: give the mount point "
            "holding the ledger root, e.g. --ledger-mountpoint /srv"
        )
    return value


def spec_of(args: argparse.Namespace) -> StackSpec:
    if args.no_dcgm and args.dcgm:
        raise BadArgument("--dcgm and --no-dcgm contradict each other: give one")
    vllm = tuple(check_named_target(t) for t in (args.vllm or [DEFAULT_VLLM_TARGET]))
    dcgm = None if args.no_dcgm else check_named_target(args.dcgm or DCGM_SERVICE_TARGET)
    am = check_target(args.alertmanager or ALERTMANAGER_SERVICE_TARGET)
    node = check_named_target(args.node_exporter or DEFAULT_NODE_TARGET)
    cadvisor = check_named_target(args.cadvisor or CADVISOR_SERVICE_TARGET)
    if args.budgets_runbook_url is not None and args.budgets is None:
        raise BadArgument("--budgets-runbook-url links the budget alerts: give --budgets FILE")
    return StackSpec(
        budgets=load_budgets(args.budgets) if args.budgets is not None else None,
        budgets_runbook=args.budgets_runbook_url or DEFAULT_BUDGETS_RUNBOOK,
        vllm_targets=vllm,
        exporter_target=check_named_target(args.exporter),
        dcgm_target=dcgm,
        dcgm_service=dcgm == (DCGM_SERVICE_TARGET, None),
        node_target=node,
        node_service=args.node_exporter is None,
        cadvisor_target=cadvisor,
        cadvisor_service=args.cadvisor is None,
        alertmanager_target=am,
        alertmanager_service=args.alertmanager is None,
        webhook_url=args.webhook_url,
        token_file=args.alertmanager_token_file or DEFAULT_TOKEN_FILE,
        scrape_interval=args.scrape_interval,
        alerts=args.alerts,
        runbook=args.runbook_url or DEFAULT_RUNBOOK,
        prometheus_name=args.prometheus_name or _label_value(socket.gethostname()),
        remote_write_url=args.remote_write,
        max_model_len=int(args.max_model_len),
        thresholds=thresholds_of(args),
    )


TOKEN_FLAG = "--alertmanager-token-file FILE"


def run(args: argparse.Namespace) -> int:
    spec = spec_of(args)
    out_dir = output_folder(args, "OUT_DIR")
    for rel in documents(spec):  # each file only ever a regular one (a FIFO would hang us)
        if (out_dir / rel).parent.is_dir():
            check_output(out_dir / rel, flag="--output", example="--output ./monitoring")
    try:
        written = write_stack(out_dir, spec)
    except BadArgument as exc:
        if exc.argument != "token_file":
            raise
        # "another token file" -> "--alertmanager-token-file FILE", as the command line says it
        hint = exc.hint.replace("another token file", TOKEN_FLAG).replace(
            "a token file", TOKEN_FLAG
        )
        raise BadArgument(exc.what, hint=hint, argument=exc.argument, value=exc.value) from None
    for path in written.files:
        say_wrote(path)
    if written.token_created:
        path = written.token_file
        shown = printable(os.path.abspath(path))
        reader = f"; the container reads it as nobody: sudo chown 65534 {shown}"
        say_wrote(
            path,
            f" (a new Alertmanager token, mode 0600{reader if spec.alertmanager_service else ''})"
            ": give the notifier the same token as its alertmanager_token_file "
            "(docs/observability.md)",
        )
    if args.runbook_url is None:
        print(
            f"note: each alert's runbook_url is {DEFAULT_RUNBOOK}#alertname, a path a chat "
            "cannot open: publish docs/runbook.md (your Git host or wiki) and pass its address "
            "as --runbook-url URL (docs/runbook.md)",
            file=sys.stderr,
        )
    targets = [a for a, _n in spec.vllm_targets] + [spec.exporter_target[0]]
    if spec.dcgm_target:
        targets.append(spec.dcgm_target[0])
    if not spec.node_service and spec.node_target:
        targets.append(spec.node_target[0])
    if not spec.alertmanager_service:
        targets.append(spec.alertmanager_target)
    for t in targets:
        if is_loopback(t):
            print(
                f"note: {t} is loopback: from inside the Prometheus container that is the "
                "container itself; fine for a Prometheus on the host",
                file=sys.stderr,
            )
    if spec.webhook_url == PLACEHOLDER_WEBHOOK:
        print(
            f"note: alerts go to the placeholder {PLACEHOLDER_WEBHOOK}: give your notifier's "
            "--webhook-url",
            file=sys.stderr,
        )
    return 0
