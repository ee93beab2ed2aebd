"""vllm-ledger render: a host file becomes a reviewed vLLM launch script (never run here)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from vllm_ledger.commands._files import input_file, output_dir, output_file, say_wrote
from vllm_ledger.commands._ledger_flags import add_roots, roots_of
from vllm_ledger.commands._refusals import file_flag, with_flags
from vllm_ledger.commands._values import listen, tz_name
from vllm_ledger.deploy.compose import compose_file
from vllm_ledger.deploy.host import MODES, Host, load_host, schema_json
from vllm_ledger.deploy.image import build_command, image_files
from vllm_ledger.deploy.kubernetes import manifest_files, manifests_yaml
from vllm_ledger.deploy.launch import render_script
from vllm_ledger.deploy.supervisor import conf_name, program_section
from vllm_ledger.deploy.tuning import (
    WORKLOADS,
    Calibration,
    Workload,
    calibration,
    explain_text,
    host_gpus,
    tuning_hints,
)
from vllm_ledger.deploy.units import (
    SYSUSERS_FILE,
    ledger_units,
    sysusers_text,
    unit_name,
    vllm_unit,
)
from vllm_ledger.deploy.vllmflags import check_host, known_hints
from vllm_ledger.errors import BadArgument, ConfigError
from vllm_ledger.formats.safe import printable
from vllm_ledger.observe.stack import EXPORTER_LISTEN, EXPORTER_PORT
from vllm_ledger.outfile import write_file

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

FOLDER_MODES = ("kubernetes", "image")  # --output may be a folder (kubernetes: or a file)
RENDER_MODES = (*MODES, "systemd", "compose", "supervisor", *FOLDER_MODES)
DEFAULT_EXPORTER_LISTEN = EXPORTER_LISTEN  # where observability's Prometheus scrapes it
CALIBRATION_WINDOW = "7d"


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
    p.add_argument(
        "--print-schema", action="store_true", help="print the host file's JSON Schema and exit"
    )


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
        _write_main(args, host, mode)
    if args.units is not None:
        _write_units(args, host)
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


def _check_flags(args: argparse.Namespace, host: Host, mode: str) -> None:
    """The argv written, parsed by the installed vLLM's own parser (deploy/vllmflags.py)."""
    try:
        line = check_host(host, mode, usage=args.usage)
    except ConfigError as exc:
        raise ConfigError(f"host file {args.host}: {exc.what}", exc.key, hint=exc.hint) from exc
    if line:
        print(f"render: {line}", file=sys.stderr)


USAGE = {"usage": "--usage"}  # a refusal names the renderers' parameter; here it is a flag


def _load(path: Path) -> Host:
    """The host file, or one line naming this command's flags."""
    with file_flag("path", "--host HOST.json"):
        try:
            return load_host(path)
        except ConfigError as exc:
            raise ConfigError(with_flags(exc.what, USAGE), exc.key, hint=exc.hint) from exc


_RENDERERS: dict[str, Callable[..., str]] = {
    "docker": render_script,
    "bare": render_script,
    "systemd": lambda host, *, mode, usage, tz: vllm_unit(host, usage=usage, tz=tz),
    "compose": lambda host, *, mode, usage, tz: compose_file(host, usage=usage, tz=tz),
    "supervisor": lambda host, *, mode, usage, tz: program_section(host, usage=usage, tz=tz),
}


def _write_main(args: argparse.Namespace, host: Host, mode: str) -> None:
    if mode in FOLDER_MODES:
        _check_flags(args, host, mode)
        _write_folder_mode(args, host, mode)
        return
    try:
        text = _RENDERERS[mode](host, mode=mode, usage=args.usage, tz=args.tz)
    except ConfigError as exc:
        raise ConfigError(f"host file {args.host}: {with_flags(str(exc), USAGE)}", exc.key) from exc
    _check_flags(args, host, mode)  # after the renderer's own checks: it takes seconds
    if args.output == "-":
        sys.stdout.write(text)
        return
    out = args.output
    executable = mode in MODES
    write_file(
        out,
        text.encode("utf-8"),
        flag="--output",
        example="--output run.sh" if executable else f"--output {_example(mode, host)}",
        mode=0o755 if executable else 0o644,
    )
    ledger = "on" if args.usage else "off"
    if args.tz is not None:
        ledger += f", zone {args.tz}"
    shown = printable(os.path.abspath(out))
    then = {
        "systemd": f"install it: cp {shown} /etc/systemd/system/{unit_name(host)} && "
        f"systemctl daemon-reload && systemctl enable --now {unit_name(host)}",
        "compose": f"start it: docker compose -f {shown} up -d",
        "supervisor": f"install it: cp {shown} /etc/supervisor/conf.d/{conf_name(host)} && "
        "supervisorctl reread && supervisorctl update",
    }.get(mode, f"start it: bash {shown}")
    if mode == "systemd":
        _write_sysusers(out, host)
    say_wrote(out, f" ({mode} mode, ledger {ledger}); review it, then {then}")


def _write_sysusers(out: str, host: Host) -> None:
    """The dedicated account's sysusers.d file, beside the unit (none for a named user)."""
    text = sysusers_text(host)
    if text is not None:
        path = Path(os.path.dirname(out) or ".", SYSUSERS_FILE)
        write_file(path, text.encode("utf-8"), flag="--output", example=f"--output {out}")
        say_wrote(path)


def _output_target(value: str) -> str:
    """--output: a file as before, or a folder (existing, or ending in /) for FOLDER_MODES."""
    if value.endswith("/") or os.path.isdir(value):
        return value  # a folder: only FOLDER_MODES take one (write_file refuses it otherwise)
    return output_file("--output", "run.sh", stdout=True)(value)


def _write_folder_mode(args: argparse.Namespace, host: Host, mode: str) -> None:
    """kubernetes: one multi-document file, or one file per resource in a folder; image: the
    build folder of the derived image."""
    out: str = args.output
    folder = out.endswith("/") or os.path.isdir(out)
    if mode == "image" and (args.usage or args.tz is not None):
        raise BadArgument("--mode image writes a Dockerfile: --usage and --tz shape the manifests")
    if mode == "image" and not folder:
        shown = "image" if out == "-" else out
        raise BadArgument(f"--mode image writes a folder: give --output {shown}/")
    text = ""
    try:
        if mode == "image":
            files = image_files(host)
        elif folder:
            files = manifest_files(host, usage=args.usage, tz=args.tz, autoscale=args.autoscale)
        else:
            text = manifests_yaml(host, usage=args.usage, tz=args.tz, autoscale=args.autoscale)
    except ConfigError as exc:
        raise ConfigError(f"host file {args.host}: {with_flags(str(exc), USAGE)}", exc.key) from exc
    if not folder and out == "-":
        sys.stdout.write(text)
        return
    example = "--output image/" if mode == "image" else "--output k8s/"
    if not folder:
        files, out = [(os.path.basename(out), text)], os.path.dirname(out) or "."
    elif not os.path.isdir(out):
        try:
            os.mkdir(out)
        except OSError as exc:
            raise BadArgument(f"--output {out}: cannot create it: {exc.strerror}") from None
    written = [
        write_file(Path(out, name), body.encode("utf-8"), flag="--output", example=example)
        for name, body in files
    ]
    for path in written[:-1]:
        say_wrote(path)
    shown = printable(os.path.abspath(out if folder else written[-1]))
    if mode == "image":
        more = f" (image mode); build it: {printable(build_command(host, shown))}"
    else:
        ledger = ("on" if args.usage else "off") + (f", zone {args.tz}" if args.tz else "")
        more = f" (kubernetes mode, ledger {ledger}); review it, then: kubectl apply -f {shown}"
    say_wrote(written[-1], more)


def _example(mode: str, host: Host) -> str:
    if mode == "supervisor":
        return conf_name(host)
    return unit_name(host) if mode == "systemd" else "compose.yaml"


def _write_units(args: argparse.Namespace, host: Host) -> None:
    folder: Path = args.units
    listen_at = args.exporter_listen or (DEFAULT_EXPORTER_LISTEN.rpartition(":")[0], EXPORTER_PORT)
    address = f"[{listen_at[0]}]" if ":" in listen_at[0] else listen_at[0]
    try:
        units = ledger_units(
            host, listen=f"{address}:{listen_at[1]}", notifier_config=args.notifier_config
        )
    except ConfigError as exc:
        raise ConfigError(f"host file {args.host}: {with_flags(str(exc), USAGE)}", exc.key) from exc
    if not folder.is_dir():
        try:
            folder.mkdir()
        except OSError as exc:
            raise BadArgument(f"--units {folder}: cannot create it: {exc.strerror}") from None
    for unit in units:
        write_file(
            folder / unit.name,
            unit.text.encode("utf-8"),
            flag="--units",
            example="--units units/",
        )
    for unit in units:
        say_wrote(folder / unit.name)
    timers = " ".join(u.name for u in units if u.name.endswith(".timer"))
    services = " ".join(u.name for u in units if "exporter" in u.name or "notifier" in u.name)
    print(
        f"review them, then install: cp {printable(os.path.abspath(folder))}/* "
        "/etc/systemd/system/ && systemctl daemon-reload && "
        f"systemctl enable --now {services} {timers}",
        file=sys.stderr,
    )


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
