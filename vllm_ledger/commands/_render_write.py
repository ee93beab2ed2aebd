"""What ``vllm-ledger render`` writes, and the line saying what to do with it: the main file
of a mode (a launch script, systemd unit, compose file or supervisor section), the folder modes'
files (kubernetes manifests, the derived image's build folder), and the ledger's systemd units
(``--units``). Every refusal of the host file names it and words ``usage`` as ``--usage``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from vllm_ledger.commands._files import say_wrote
from vllm_ledger.commands._refusals import with_flags
from vllm_ledger.deploy.compose import compose_file
from vllm_ledger.deploy.host import Host
from vllm_ledger.deploy.hostschema import MODES
from vllm_ledger.deploy.image import build_command, image_files
from vllm_ledger.deploy.kubernetes import manifest_files, manifests_yaml
from vllm_ledger.deploy.launch import render_script
from vllm_ledger.deploy.ledger_units import ledger_units
from vllm_ledger.deploy.supervisor import conf_name, program_section
from vllm_ledger.deploy.units import SYSUSERS_FILE, sysusers_text, unit_name, vllm_unit
from vllm_ledger.deploy.vllmflags import check_host
from vllm_ledger.errors import BadArgument, ConfigError
from vllm_ledger.formats.safe import printable
from vllm_ledger.http.urls import url_host
from vllm_ledger.observe.stack import EXPORTER_LISTEN, EXPORTER_PORT
from vllm_ledger.outfile import write_file

FOLDER_MODES = ("kubernetes", "image")  # --output may be a folder (kubernetes: or a file)
DEFAULT_EXPORTER_LISTEN = EXPORTER_LISTEN  # where observability's Prometheus scrapes it


USAGE = {"usage": "--usage"}  # a refusal names the renderers' parameter; here it is a flag


def _check_flags(args: argparse.Namespace, host: Host, mode: str) -> None:
    """The argv written, parsed by the installed vLLM's own parser (deploy/vllmflags.py)."""
    try:
        line = check_host(host, mode, usage=args.usage)
    except ConfigError as exc:
        raise ConfigError(f"host file {args.host}: {exc.what}", exc.key, hint=exc.hint) from exc
    if line:
        print(f"render: {line}", file=sys.stderr)


_RENDERERS: dict[str, Callable[..., str]] = {
    "docker": render_script,
    "bare": render_script,
    "systemd": lambda host, *, mode, usage, tz: vllm_unit(host, usage=usage, tz=tz),
    "compose": lambda host, *, mode, usage, tz: compose_file(host, usage=usage, tz=tz),
    "supervisor": lambda host, *, mode, usage, tz: program_section(host, usage=usage, tz=tz),
}


def write_main(args: argparse.Namespace, host: Host, mode: str) -> None:
    """The ``--output`` of ``mode``: a file (or stdout), or a folder for FOLDER_MODES."""
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


def write_units(args: argparse.Namespace, host: Host) -> None:
    """The ledger's systemd units into ``--units DIR`` (created if missing)."""
    folder: Path = args.units
    listen_at = args.exporter_listen or (DEFAULT_EXPORTER_LISTEN.rpartition(":")[0], EXPORTER_PORT)
    try:
        units = ledger_units(
            host,
            listen=f"{url_host(listen_at[0])}:{listen_at[1]}",
            notifier_config=args.notifier_config,
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
