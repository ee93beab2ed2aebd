"""Files and folders a command reads or writes: their flags, the checks their paths pass at
parse time, and the ``wrote PATH`` line printed for each file written."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from vllm_ledger.errors import BadArgument
from vllm_ledger.formats.safe import printable
from vllm_ledger.outfile import check_target, kind_of

# ---- output folders ------------------------------------------------------------------------------


def add_output_folder(
    p: argparse.ArgumentParser,
    make: Callable[[str], Callable[[str], Path]],
    *,
    help: str,  # argparse's own name
    metavar: str = "DIR",
) -> None:
    """``--output DIR``, and the positional folder older versions took (still accepted)."""
    p.add_argument(
        "folder",
        nargs="?",
        type=make(metavar),
        metavar=metavar,
        help=f"the same as --output {metavar}",
    )
    p.add_argument("--output", type=make("--output"), metavar=metavar, help=help)


def output_folder(args: argparse.Namespace, metavar: str = "DIR") -> Path:
    """The folder ``add_output_folder``'s flags name (given once, either way)."""
    given = [f for f in (args.output, args.folder) if f is not None]
    if not given:
        raise BadArgument(f"no folder given: pass --output {metavar}")
    if len(given) == 2 and given[0] != given[1]:
        raise BadArgument(
            f"two folders given ({given[1]} and --output {given[0]}): give one, --output {metavar}"
        )
    return Path(given[0])


# ---- files read and written ----------------------------------------------------------------------


def input_file(
    flag: str, example: str, *, max_bytes: int, what: str = "", hint: str = ""
) -> Callable[[str], Path]:
    """A file to read: it exists, is a regular file (never a FIFO or device, which would
    block or never end), is readable and at most ``max_bytes`` long. Nothing is opened."""
    what = what or flag
    hint = hint or f"pass {flag} {example}"

    def parse(value: str) -> Path:
        path = Path(value)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise BadArgument(f"{what} {path} not found: {hint}") from None
        except (OSError, ValueError) as exc:
            why = getattr(exc, "strerror", None) or "not a path"
            raise BadArgument(f"{what} {path} cannot be read ({why}): {hint}") from None
        if not stat.S_ISREG(st.st_mode):
            raise BadArgument(f"{what} {path} is {kind_of(st.st_mode)}, not a regular file: {hint}")
        if st.st_size > max_bytes:
            raise BadArgument(
                f"{what} {path} is larger than {max_bytes // 1024} KiB (the wrong file?): {hint}"
            )
        if not os.access(path, os.R_OK):
            raise BadArgument(f"{what} {path} is not readable: {hint}")
        return path

    return parse


def output_file(flag: str, example: str, *, stdout: bool = False) -> Callable[[str], str]:
    """A file to write: nothing yet, or a regular file, in an existing folder (``-``: stdout
    with ``stdout``). The write itself goes through ``outfile.write_file``."""

    def parse(value: str) -> str:
        if stdout and value == "-":
            return value
        check_target(value, flag=flag, example=f"{flag} {example}")
        return value

    return parse


def output_dir(flag: str, example: str, names: tuple[str, ...]) -> Callable[[str], Path]:
    """A folder to write ``names`` into: nothing yet or a directory, and each of ``names`` in
    it nothing yet or a regular file."""

    def parse(value: str) -> Path:
        path = Path(value)
        if not value:
            raise BadArgument(f"{flag} '' is not a folder name: give one, e.g. {flag} {example}")
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return path  # created when written
        except (OSError, ValueError) as exc:
            why = getattr(exc, "strerror", None) or "not a path"
            raise BadArgument(
                f"{flag} {path}: {why}: give a folder, e.g. {flag} {example}"
            ) from None
        if not stat.S_ISDIR(st.st_mode):
            raise BadArgument(
                f"{flag} {path} is {'a file' if stat.S_ISREG(st.st_mode) else kind_of(st.st_mode)},"
                f" not a folder: give a folder, e.g. {flag} {example}"
            )
        for name in names:
            check_target(path / name, flag=flag, example=f"{flag} {example}")
        return path

    return parse


def wrote_line(path: str | os.PathLike[str], more: str = "") -> str:
    """``wrote /abs/path`` (``more`` after it, e.g. `` (systemd mode)``): the line every command
    prints on stderr for each file it wrote, the path absolute and terminal-safe."""
    return f"wrote {printable(os.path.abspath(path))}{more}"


def say_wrote(path: str | os.PathLike[str], more: str = "") -> None:
    """Print ``wrote_line(path, more)`` on stderr (stdout stays for what the command prints)."""
    print(wrote_line(path, more), file=sys.stderr)
