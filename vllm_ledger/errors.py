"""The one exception tree of vllm-ledger.

    LedgerError                 base: every error this package raises on purpose
    ├── BadArgument             a flag, file or value the user gave is wrong (.hint says what to do)
    ├── ConfigError             a config file is malformed (.key names the offending entry)
    ├── MissingExtra            an optional dependency is not installed (.extra names it)
    ├── LedgerUnavailable       no ledger could be read under the given roots (.roots)
    └── RemoteError             a remote status could not be fetched or parsed (.target)

Nothing in this tree is ever raised inside vLLM: the plugin counts faults instead.
"""

from __future__ import annotations


class LedgerError(Exception):
    """Base of every error vllm-ledger raises on purpose."""


class BadArgument(LedgerError):
    """A flag, file or value given by the user is wrong."""


class ConfigError(LedgerError):
    """A config file or entry is malformed."""

    def __init__(self, message: str, key: str = "") -> None:
        super().__init__(message)
        self.key = key


class MissingExtra(LedgerError):
    """An optional dependency is not installed."""

    def __init__(self, module: str, extra: str) -> None:
        super().__init__(f"this command needs {module}: pip install 'vllm-ledger[{extra}]'")
        self.extra = extra


class LedgerUnavailable(LedgerError):
    """No ledger could be read under the given roots."""

    def __init__(self, message: str, roots: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.roots = roots


class RemoteError(LedgerError):
    """A remote status could not be fetched or parsed."""

    def __init__(self, message: str, target: str = "") -> None:
        super().__init__(message)
        self.target = target
