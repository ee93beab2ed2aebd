"""The one exception tree of vllm-ledger.

    LedgerError                 base: every error this package raises on purpose (.what, .hint)
    ├── BadArgument             a flag, file or value the user gave is wrong (.argument, .value,
    │   │                       .example)
    │   ├── BadDeclaration      a declared stop that is not a sane one; also a ValueError
    │   └── TooManySteps        a timeline's window cut into more steps than it draws (.steps,
    │                           .limit)
    ├── ConfigError             a config file is malformed (.key names the offending entry)
    │   ├── DuplicateKey        a JSON object repeats a key (.key); also a ValueError
    │   ├── FieldError          one field of one config entry is refused (.field); a ValueError
    │   └── KeyNamesError       the key names file cannot be used; a ValueError
    ├── MissingExtra            an optional dependency is not installed (.extra names it)
    ├── LedgerUnavailable       no ledger could be read under the given roots (.roots)
    ├── RemoteError             a remote answer could not be fetched or parsed (.target)
    │   ├── StatusParseError    remote bytes are not a status document we can trust; a ValueError
    │   ├── RemoteTimeout       the request did not end within its total deadline (.seconds)
    │   ├── AnswerTooLarge      the answer's body is over the bytes the caller reads (.limit)
    │   ├── RedirectRefused     a redirect to another host, or one too many (.location)
    │   └── BadResponse         not an HTTP answer this client can read (.problem)
    ├── BadValues               a value read from a ledger is of the wrong type or range
    │                           (a ValueError)
    └── NotARegularFile         a FIFO, socket, device or directory where a ledger file should be;
                                an OSError (raised by the store before anything is opened)

Every error reads as one line, ``str(exc)``: what went wrong, then what to do. The two parts
are also apart, ``.what`` and ``.hint`` (``""`` where there is nothing to do, or where the
raiser wrote both into one message); ``raise BadArgument("--at 'x' is not a time",
hint="give seconds, e.g. --at 1796000000")`` prints ``--at 'x' is not a time: give seconds,
e.g. --at 1796000000``.

Below the commands a ``BadArgument`` names no flag: it carries ``.argument`` (the parameter,
``"step"``; its message starts with that name), ``.value`` (what was given) and ``.example`` (a
good value, printed after the hint as ``e.g. 1h``). A command words it for the command line
(``commands/_refusals.py``, ``flagged``): ``step '1y' is not a duration: ..., e.g. 1h`` becomes
``--step '1y' is not a duration: ..., e.g. --step 1h``.

The read side turns BadValues and NotARegularFile into a file's status (``bad_values``,
``unreadable``), never into an exit; the others reach the CLI as one line and exit 2. Nothing
in this tree is ever raised inside vLLM: the plugin counts faults instead.
"""

from __future__ import annotations

from typing import Literal


class LedgerError(Exception):
    """Base of every error vllm-ledger raises on purpose; ``.hint`` says what to do."""

    def __init__(self, *args: object, hint: str = "") -> None:
        super().__init__(*args)
        self.hint = hint

    @property
    def what(self) -> str:
        """What went wrong, without the hint."""
        return super().__str__()

    def __str__(self) -> str:
        return f"{self.what}: {self.hint}" if self.hint else self.what


class BadArgument(LedgerError):
    """A flag, file or value given by the user is wrong; ``.argument`` names which, if known."""

    def __init__(
        self,
        *args: object,
        hint: str = "",
        argument: str = "",
        value: object = None,
        example: str = "",
    ) -> None:
        super().__init__(*args, hint=hint)
        self.argument = argument
        self.value = value
        self.example = example

    def __str__(self) -> str:
        if not self.example:
            return super().__str__()
        hint = f"{self.hint}, e.g. {self.example}" if self.hint else f"e.g. {self.example}"
        return f"{self.what}: {hint}"


class ConfigError(LedgerError):
    """A config file or entry is malformed; ``.key`` names the entry ("" for the whole file)."""

    def __init__(self, message: str, key: str = "", *, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.key = key


class MissingExtra(LedgerError):
    """An optional dependency is not installed; ``.extra`` names the extra that brings it."""

    def __init__(self, module: str, extra: str) -> None:
        super().__init__(f"this command needs {module}", hint=f"pip install 'vllm-ledger[{extra}]'")
        self.module = module
        self.extra = extra


class LedgerUnavailable(LedgerError):
    """No ledger could be read under the given roots (``.roots``)."""

    def __init__(self, message: str, roots: tuple[str, ...] = (), *, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.roots = roots


class RemoteError(LedgerError):
    """A remote answer could not be fetched or parsed; ``.target`` names where from."""

    def __init__(self, message: str, target: str = "", *, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.target = target


class DuplicateKey(ConfigError, ValueError):
    """A JSON object repeats a key: refused, since which value wins is a guess."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r}", key)


class FieldError(ConfigError, ValueError):
    """One field of one config entry is refused; ``.field`` names it, ``.message`` says why."""

    def __init__(self, field: str, message: str, *, hint: str = "") -> None:
        super().__init__(message, field, hint=hint)
        self.field = field
        self.message = str(self)


class StatusParseError(RemoteError, ValueError):
    """Remote bytes are not a status document this version can trust."""


class RemoteTimeout(RemoteError):
    """The request (connect, send, headers, body) did not end within ``.seconds``."""

    def __init__(self, target: str, seconds: float, *, hint: str = "") -> None:
        super().__init__(f"{target} did not answer within {seconds:g} s", target, hint=hint)
        self.seconds = seconds


class AnswerTooLarge(RemoteError):
    """The answer's body is longer than ``.limit`` bytes, the most the caller reads."""

    def __init__(self, target: str, limit: int, *, hint: str = "") -> None:
        super().__init__(f"{target} answered more than {_size(limit)}", target, hint=hint)
        self.limit = limit


class RedirectRefused(RemoteError):
    """A redirect not followed: to another scheme, host or port, or past the limit."""

    def __init__(self, target: str, location: str, why: str, *, hint: str = "") -> None:
        super().__init__(f"{target} {why}", target, hint=hint)
        self.location = location


BadResponseProblem = Literal[
    "no_answer", "status_line", "headers", "too_many_headers", "framing", "truncated"
]


class BadResponse(RemoteError):
    """Bytes that are not an HTTP/1.x answer this client reads; ``.problem`` says which part."""

    def __init__(
        self, target: str, problem: BadResponseProblem, why: str, *, hint: str = ""
    ) -> None:
        super().__init__(f"{target} {why}", target, hint=hint)
        self.problem = problem


def _size(n: int) -> str:
    """``16777216`` -> ``16 MiB``, ``65536`` -> ``64 KiB``, ``1000`` -> ``1,000 bytes``."""
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n:,} bytes"


class KeyNamesError(ConfigError, ValueError):
    """The key names file cannot be used (the message says why, in one line)."""


class BadValues(LedgerError, ValueError):
    """A value read from a ledger is of the wrong type or outside its physical range."""


class NotARegularFile(LedgerError, OSError):
    """A FIFO, socket, device or directory where a ledger's file should be (never opened)."""


class BadDeclaration(BadArgument, ValueError):
    """A declared stop that is not a sane one (a line of the file, or the command's flags)."""


class TooManySteps(BadArgument):
    """A window at a step makes more than ``.limit`` steps (or, with ``.by``, row steps)."""

    def __init__(
        self,
        steps: int,
        limit: int,
        *,
        window: str = "",
        step: str = "",
        at_least: bool = False,
        by: str | None = None,
        rows: int = 0,
    ) -> None:
        if by is None:
            count = f"at least {steps}" if at_least else f"{steps}"
            what = f"step {step} cuts the window {window} into {count} steps"
            hint = f"use a larger step (at most {limit} steps)"
        else:
            what = f"by {by} makes {rows} rows of {steps} steps"
            hint = (
                "use a larger step, a shorter window, an instance or a model "
                f"(at most {limit} in all)"
            )
        super().__init__(what, hint=hint, argument="step" if by is None else "by", value=step)
        self.window = window
        self.step = step
        self.steps = steps
        self.limit = limit
        self.at_least = at_least
        self.by = by
        self.rows = rows
