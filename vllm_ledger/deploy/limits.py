"""The size limits of what reads the rendered files: the kernel's paths, systemd's units. Pure.

Paths (Linux ``<linux/limits.h>``, and systemd's ``path_is_valid()`` in src/basic/path-util.c):
a path is at most ``PATH_MAX`` 4096 bytes counting its NUL, so 4095 bytes of text, and each part
between slashes at most ``NAME_MAX`` 255 bytes, in UTF-8 bytes, never characters. systemd only
warns about a longer path in ``ReadWritePaths=`` or ``AssertPathExists=`` and drops the setting,
so a sandbox would silently lack it; the kernel refuses such a path with ENAMETOOLONG.

Units (systemd's src/shared/conf-parser.c): a line, or lines joined by a trailing backslash, is
read with ``LONG_LINE_MAX`` 1 MiB counting its newline; a longer one makes the whole unit fail
to load. A unit's name is at most 255 characters (``UNIT_NAME_MAX`` 256 with the NUL,
src/basic/unit-name.h).

Programs (Linux ``MAX_ARG_STRLEN``, 32 pages): one argument, or one ``NAME=VALUE`` of the
environment, is at most 131072 bytes counting its NUL; ``execve`` refuses a longer one with
E2BIG, in every mode (the script's ``exec``, ``docker run``, systemd, supervisord, the
container runtime).

``systemd-analyze verify`` (systemd 252) and the kernel agree with each figure to the byte:
tests/test_render_limits.py renders the longest accepted value and the first refused one.
"""

from __future__ import annotations

from vllm_ledger.errors import ConfigError

PATH_MAX_BYTES = 4095  # PATH_MAX 4096, less the NUL
NAME_MAX_BYTES = 255  # one path component
UNIT_LINE_MAX_BYTES = 1024 * 1024 - 1  # LONG_LINE_MAX 1 MiB, less the newline
UNIT_NAME_MAX_CHARS = 255  # UNIT_NAME_MAX 256, less the NUL
ARG_MAX_BYTES = 32 * 4096 - 1  # MAX_ARG_STRLEN, less the NUL
LONGEST_UNIT_SUFFIX = "-ledger-exporter.service"  # the longest unit name render gives NAME
# The host-file keys whose values a unit directive's line carries, for a refusal to name.
_DIRECTIVE_KEYS = {
    "ExecStart": "model, served_model_name or extra_args",
    "ExecStartPre": "artifacts_dir or ledger_code_dir",
    "Environment": "extra_env",
}


def path_problem(path: str, max_bytes: int = PATH_MAX_BYTES) -> str | None:
    """None if ``path`` fits the kernel's limits (and ``max_bytes``, for a folder that must
    leave room below it), else what is too long, worded to follow the value."""
    size = len(path.encode("utf-8"))
    if size > max_bytes:
        room = "" if max_bytes == PATH_MAX_BYTES else ", leaving room for what goes below it"
        return (
            f"is {size} bytes long; at most {max_bytes} (PATH_MAX {PATH_MAX_BYTES + 1} with "
            f"its NUL{room})"
        )
    for part in path.split("/"):
        part_size = len(part.encode("utf-8"))
        if part_size > NAME_MAX_BYTES:
            return (
                f"has a {part_size}-byte name between slashes; at most {NAME_MAX_BYTES} (NAME_MAX)"
            )
    return None


def arg_problem(word: str, room: int = 0) -> str | None:
    """None if ``word`` fits one argument or environment entry of a program (``room``: bytes the
    renderers may add to it), else what is too long, worded to follow the key."""
    size = len(word.encode("utf-8"))
    if size + room <= ARG_MAX_BYTES:
        return None
    more = f" with the {room} bytes put in front of it" if room else ""
    return (
        f"is {size} bytes{more}; a program's argument or environment entry is at most "
        f"{ARG_MAX_BYTES} (MAX_ARG_STRLEN)"
    )


def logical_lines(text: str) -> list[str]:
    """The lines of a unit as systemd reads them: a line ending in a backslash is joined to the
    next (the backslash becomes a space); comments are kept, they count too."""
    out: list[str] = []
    pending = ""
    for line in text.split("\n"):
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
    if pending:
        out.append(pending)
    return out


def long_unit_line(text: str) -> tuple[str, int] | None:
    """The first line of unit ``text`` over systemd's line limit, as (its directive, its size in
    bytes), or None when every line fits."""
    for line in logical_lines(text):
        size = len(line.encode("utf-8"))
        if size > UNIT_LINE_MAX_BYTES:
            return line.split("=", 1)[0].strip(), size
    return None


def check_unit_name(name: str) -> None:
    """Every unit render names after ``name`` (the host file's container_name, else
    vllm-PORT) fits systemd's unit name limit, else ConfigError naming container_name."""
    longest = len(name) + len(LONGEST_UNIT_SUFFIX)
    if longest > UNIT_NAME_MAX_CHARS:
        most = UNIT_NAME_MAX_CHARS - len(LONGEST_UNIT_SUFFIX)
        raise ConfigError(
            f"container_name: {len(name)} characters make a unit name of {longest} "
            f"(NAME{LONGEST_UNIT_SUFFIX}); systemd takes at most {UNIT_NAME_MAX_CHARS}: give a "
            f"container_name of at most {most} characters",
            key="container_name",
        )


def check_unit_lines(text: str) -> str:
    """Unit ``text`` if every line fits systemd's line limit, else ConfigError naming the
    host-file keys the long line carries."""
    long = long_unit_line(text)
    if long is None:
        return text
    directive, size = long
    keys = _DIRECTIVE_KEYS.get(directive, "the host file's values")
    raise ConfigError(
        f"{keys}: the unit's {directive}= line would be {size} bytes; systemd reads at most "
        f"{UNIT_LINE_MAX_BYTES} (LONG_LINE_MAX): shorten them",
        key=keys.split(",")[0].split(" ")[0],
    )


__all__ = [
    "ARG_MAX_BYTES",
    "NAME_MAX_BYTES",
    "PATH_MAX_BYTES",
    "UNIT_LINE_MAX_BYTES",
    "UNIT_NAME_MAX_CHARS",
    "arg_problem",
    "check_unit_lines",
    "check_unit_name",
    "logical_lines",
    "long_unit_line",
    "path_problem",
]
