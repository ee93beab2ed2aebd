"""What the checks share: their names, the row each gives, the plugin's log lines collected
instead of printed, and the newest run of a report."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from vllm_ledger.read.report import WriterStatus

# "flags" (doctor/flags.py) runs only for doctor --rendered FILE, "stack" (doctor/stack.py) only
# for doctor --stack URL, so neither is in CHECKS.
CheckName = Literal[
    "interface", "agreement", "writers", "storage", "attribution", "budgets", "flags", "stack"
]
CHECKS: tuple[CheckName, ...] = (
    "interface",
    "agreement",
    "writers",
    "storage",
    "attribution",
    "budgets",
)


@dataclass(frozen=True)
class Row:
    """One check: what was checked (or found), whether it passed, how to fix a failure.
    ``warn``: it did not fail, but is not as it should be (a limit of this vLLM, or nothing to
    tell by yet); the table says ``warn`` and shows the fix, and the exit status stays 0."""

    check: CheckName
    passed: bool
    checked: str
    fix: str = ""
    warn: bool = False

    @property
    def result(self) -> Literal["pass", "warn", "FAIL"]:
        if not self.passed:
            return "FAIL"
        return "warn" if self.warn else "pass"


class CollectedLog(logging.Handler):
    """Warnings and errors of the ``vllm.ledger`` logger, kept as lines."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextlib.contextmanager
def quiet_ledger_log() -> Iterator[CollectedLog]:
    """The plugin's and the recorder's log lines while a check drives them, collected
    instead of printed."""
    log = logging.getLogger("vllm.ledger")
    handler = CollectedLog()
    saved = log.propagate
    log.addHandler(handler)
    log.propagate = False
    try:
        yield handler
    finally:
        log.removeHandler(handler)
        log.propagate = saved


def newest_run(writers: Iterable[WriterStatus]) -> str | None:
    """The run whose first writer started last (a report's ``writers``). Pure."""
    starts: dict[str, float] = {}
    for w in writers:
        if w.first_ts is not None:
            starts[w.run_id] = min(starts.get(w.run_id, w.first_ts), w.first_ts)
    return max(starts, key=lambda r: starts[r]) if starts else None
