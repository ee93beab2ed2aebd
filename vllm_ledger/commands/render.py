"""vllm-ledger render: a host file becomes a reviewed vLLM launch script (never run here).

The flags and what they may be combined with are here; what each mode writes, and the line
saying what to do next, is ``commands/_render_write.py``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from vllm_ledger.commands._files import input_file, output_dir, output_file
from vllm_ledger.commands._ledger_flags import add_roots, roots_of
from vllm_ledger.commands._refusals import file_flag, with_flags
from vllm_ledger.commands._render_write import (
    DEFAULT_EXPORTER_LISTEN,
    FOLDER_MODES,
    USAGE,
    write_main,
    write_units,
)
from vllm_ledger.commands._values import listen, tz_name
from vllm_ledger.deploy.host import Host, load_host
from vllm_ledger.deploy.hostschema import MODES, schema_json
from vllm_ledger.deploy.tuning import (
    WORKLOADS,
    Calibration,
    Workload,
    calibration,
    explain_text,
    host_gpus,
    tuning_hints,
)
from vllm_ledger.deploy.vllmflags import known_hints
from vllm_ledger.errors import BadArgument, ConfigError

NAME = "render"
HELP = "a host file as a launch: bare, docker, systemd, compose, supervisor, kubernetes, image"
EPILOG = """examples:
  vllm-ledger render --host local/host.json --output local/run.sh --usage
  vllm-ledger render --host local/host.json --output local/run.sh --usage --tz Europe/Berlin
  vllm-ledger render --host local/host.json --output local/run.sh --mode bare
  vllm-ledger render --host local/host.json --output vllm.service --mode systemd --usage
  vllm-ledger render --host local/host.json --output compose.yaml --mode compose --usage
  vllm-ledger render --host local/host.json --output vllm.conf --mode supervisor --usage
  vllm-ledger render --host local/host.json --output k8s/ --mode kubernetes --usage
  vllm-ledger render --host local/host.json --output image/ --mode image
  vllm-ledger render --host local/host.json --units local/units \\
      --notifier-config /etc/vllm-ledger/notifier.json
  vllm-ledger render --host local/host.json --explain --workload batch --root /srv/artifacts/usage
  vllm-ledger render --print-schema > host.schema.json
What is written is never started: review it (git diff), then run or install it yourself.
exit status: 0 written (or printed), 2 a bad flag or host file (nothing written), 1 the system
refused a write (a full disk, a denied folder)
"""

RENDER_MODES = (*MODES, "systemd", "compose", "supervisor", *FOLDER_MODES)
CALIBRATION_WINDOW = "7d"


MAX_HOST_BYTES = 1024 * 1024


def configure(p: argparse.ArgumentParser) -> None:
    _add_launch_flags(p)
    _add_units_flags(p)
    _add_explain_flags(p)
    p.add_argument(
        "--print-schema", action="store_true", help="print the host file's JSON Schema and exit"
    )


def _add_launch_flags(p: argparse.ArgumentParser) -> None:
    """The host file and the launch rendered from it: where, which mode, ledger or not."""
    p.add_argument(
        "--host",
        type=input_file("--host", "HOST.json", max_bytes=MAX_HOST_BYTES, what="host file"),
        metavar="HOST.json",
        help="the host file (JSON)",
    )
    p.add_argument(
        "--output",
        type=_output_target,
        metavar="FILE",
        help="script to write, mode 0755, a regular file replaced whole ('-': stdout); "
        "kubernetes mode: a file, or a folder (existing, or ending in /) for one file per "
        "resource; image mode: a folder",
    )
    p.add_argument(
        "--usage",
        action="store_true",
        help="switch the usage ledger on (plugin folder, ledger dir, writer count) and whose "
        "tokens: vLLM gets --middleware vllm_ledger.middleware.LedgerMiddleware and the host "
        "file's attribution settings (docs/attribution.md); with the host file's budgets, "
        "that file, checked now (docs/budgets.md)",
    )
    p.add_argument(
        "--tz",
        type=tz_name(),
        metavar="ZONE",
        help="with --usage: record this zone in the ledger root (VLLM_LEDGER_TZ for the plugin, "
        "which writes ROOT/zone); readers then cut 'today' in it (default: record none, "
        "readers use Asia/Shanghai)",
    )
    p.add_argument(
        "--mode",
        choices=RENDER_MODES,
        help="docker (docker run of the vLLM image), bare (vllm serve), systemd (a service "
        "unit running bare mode's vllm serve) or compose (a compose.yaml service equivalent to "
        "docker mode), supervisor (a supervisord [program:NAME] section running bare mode's "
        "vllm serve), kubernetes (a StatefulSet, Service, ServiceMonitor, PrometheusRule and "
        "dashboard ConfigMap; docs/kubernetes.md), image (a Dockerfile adding this project's "
        "wheel to the host file's image); default: the host file's mode, else docker",
    )
    p.add_argument(
        "--autoscale",
        action="store_true",
        help="kubernetes mode: also a HorizontalPodAutoscaler (autoscaling/v2) on the requests "
        "waiting per pod, through prometheus-adapter, and the adapter's rule as a ConfigMap; "
        "each replica keeps its own ledger claim (docs/kubernetes.md, Autoscaling)",
    )


def _add_units_flags(p: argparse.ArgumentParser) -> None:
    """The ledger's own systemd units (exporter, check, notifier), beside the launch."""
    p.add_argument(
        "--units",
        type=output_dir("--units", "units/", ()),
        metavar="DIR",
        help="also write systemd units for the ledger into DIR (created if missing): the "
        "exporter's service, check's service and daily timer, and the notifier's with "
        "--notifier-config",
    )
    p.add_argument(
        "--exporter-listen",
        type=listen("--exporter-listen", DEFAULT_EXPORTER_LISTEN),
        metavar="HOST:PORT",
        help=f"with --units: where the exporter listens (default: {DEFAULT_EXPORTER_LISTEN})",
    )
    p.add_argument(
        "--notifier-config",
        type=Path,
        metavar="FILE",
        help="with --units: also write the notifier's unit for this config (an absolute path)",
    )


def _add_explain_flags(p: argparse.ArgumentParser) -> None:
    """The tuning hints printed instead of writing anything, and the ledger they read."""
    p.add_argument(
        "--explain",
        action="store_true",
        help="print tuning hints for the host file's GPUs (docs/launch.md#tuning-hints-explain) "
        "and, with --root, the ledger's mean request against max_model_len; writes nothing",
    )
    p.add_argument(
        "--workload",
        choices=WORKLOADS,
        help="with --explain: interactive (default) or batch",
    )
    add_roots(p)


def run(args: argparse.Namespace) -> int:
    if args.print_schema:
        sys.stdout.write(schema_json())
        return 0
    _check_combination(args)
    host = _load(args.host)
    if args.explain:
        return _explain(args, host)
    mode = args.mode or host.mode
    if args.output is not None:
        write_main(args, host, mode)
    if args.units is not None:
        write_units(args, host)
    return 0


def _check_combination(args: argparse.Namespace) -> None:
    if args.host is None:
        raise BadArgument("render needs --host HOST.json and --output FILE (or --print-schema)")
    if args.explain:
        if args.output is not None or args.units is not None:
            raise BadArgument("--explain only prints: leave out --output and --units")
    elif args.output is None and args.units is None:
        raise BadArgument("render needs --output FILE, --units DIR or --explain")
    if args.workload is not None and not args.explain:
        raise BadArgument("--workload chooses --explain's hints: it needs --explain")
    if args.root is not None and not args.explain:
        raise BadArgument("--root feeds --explain's calibration: it needs --explain")
    if args.units is None:
        for flag, value in (
            ("--exporter-listen", args.exporter_listen),
            ("--notifier-config", args.notifier_config),
        ):
            if value is not None:
                raise BadArgument(f"{flag} is for the ledger's units: it needs --units DIR")
    if args.notifier_config is not None and not args.notifier_config.is_absolute():
        raise BadArgument(
            f"--notifier-config {args.notifier_config}: give an absolute path (the unit runs "
            "from /), e.g. --notifier-config /etc/vllm-ledger/notifier.json"
        )
    if args.tz is not None and not args.usage:
        raise BadArgument("--tz records the ledger's zone: it needs --usage")
    if args.autoscale and args.mode != "kubernetes":
        raise BadArgument("--autoscale scales a StatefulSet: it needs --mode kubernetes")
    if args.output is None and (args.usage or args.mode is not None):
        raise BadArgument("--usage and --mode shape the --output file: give --output FILE")
    if args.output not in (None, "-") and args.mode not in FOLDER_MODES:
        output_file("--output", "run.sh")(args.output)  # only FOLDER_MODES take a folder


def _load(path: Path) -> Host:
    """The host file, or one line naming this command's flags."""
    with file_flag("path", "--host HOST.json"):
        try:
            return load_host(path)
        except ConfigError as exc:
            raise ConfigError(with_flags(exc.what, USAGE), exc.key, hint=exc.hint) from exc


def _output_target(value: str) -> str:
    """--output: a file as before, or a folder (existing, or ending in /) for FOLDER_MODES."""
    if value.endswith("/") or os.path.isdir(value):
        return value  # a folder: only FOLDER_MODES take one (write_file refuses it otherwise)
    return output_file("--output", "run.sh", stdout=True)(value)


def _explain(args: argparse.Namespace, host: Host) -> int:
    from vllm_ledger.observe.gpu import GpuReader

    notes: list[str] = []
    reader = GpuReader(say=notes.append)
    try:
        readings = reader.read() if host.gpus != () else []
    finally:
        reader.close()
    gpus, source = host_gpus(host.gpus, readings, host.gpu_name, host.gpu_memory_gb)
    workload: Workload = args.workload or "interactive"
    hints, notes = known_hints(tuning_hints(gpus, workload, cpu=host.gpus == ()), host.model)
    calib = _calibration(args, host) if args.root is not None else None
    sys.stdout.write(explain_text(hints, workload, source, calib, notes))
    return 0


def _calibration(args: argparse.Namespace, host: Host) -> Calibration:
    from vllm_ledger.read.report import build_report

    report = build_report(roots_of(args))
    w = report.window(CALIBRATION_WINDOW)
    return calibration(w.name, w.requests, w.input_tokens, w.output_tokens, host.max_model_len)
