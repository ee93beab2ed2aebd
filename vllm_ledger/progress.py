"""Progress lines on stderr for commands that can take more than two seconds, and the stderr of
what they import (vLLM's own start-up lines) kept apart from them.

A progress line is ``COMMAND: what it is doing``, on stderr, flushed, never on stdout: the
table or ``--json`` document on stdout stays whole for a pipe. ``quiet_stderr`` points file
descriptor 2 at a temporary file while vLLM is imported and driven (its lines are written by
C code and by handlers bound to the stream, so ``sys.stderr`` alone cannot catch them);
progress lines still reach the terminal through a copy of the original descriptor, and the
captured lines are counted and kept for the caller to summarize. Descriptor 1 is captured
too (older vLLMs print their warnings on stdout): the caller prints its table after.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

MAX_KEPT_LINES = 200  # of what was captured, the last ones kept
SLOW_AFTER_S = 2.0  # a step that has run this long gets a progress line
STILL_EVERY_S = 10.0  # and another this often while it runs on


def say(command: str, text: str) -> None:
    """One progress line on stderr: ``COMMAND: TEXT``."""
    print(f"{command}: {text}", file=sys.stderr, flush=True)


@dataclass
class QuietStderr:
    """While inside ``quiet_stderr``: ``say`` reaches the real stderr; after it, ``lines``
    holds what others wrote on stderr meanwhile (at most ``MAX_KEPT_LINES``, the last) and
    ``count`` how many lines that was."""

    command: str
    _fd: int | None = None
    lines: list[str] = field(default_factory=list)
    count: int = 0

    def say(self, text: str) -> None:
        line = f"{self.command}: {text}\n".encode("utf-8", "replace")
        if self._fd is None:
            say(self.command, text)
            return
        with contextlib.suppress(OSError):
            os.write(self._fd, line)


@contextlib.contextmanager
def quiet_stderr(command: str) -> Iterator[QuietStderr]:
    """Descriptors 2 and 1 into a temporary file for the block (older vLLMs print their
    warnings on stdout: nothing of this command's is printed there meanwhile); where a stream
    has no descriptor (an embedding that replaced ``sys.stderr``), nothing is captured and
    ``say`` prints as usual."""
    quiet = QuietStderr(command)
    try:
        _flush()
        saved = {fd: os.dup(fd) for fd in (2, 1)}
    except (OSError, ValueError, AttributeError):
        yield quiet
        return
    with tempfile.TemporaryFile() as sink:
        for fd in saved:
            os.dup2(sink.fileno(), fd)
        quiet._fd = saved[2]
        try:
            yield quiet
        finally:
            _flush()
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
            quiet._fd = None
            sink.seek(0)
            text = sink.read().decode("utf-8", "replace")
            every = [ln for ln in text.splitlines() if ln.strip()]
            quiet.count = len(every)
            quiet.lines = every[-MAX_KEPT_LINES:]


def _flush() -> None:
    for stream in (sys.stderr, sys.stdout):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()


@contextlib.contextmanager
def when_slow(
    command: str,
    doing: str,
    *,
    after_s: float = SLOW_AFTER_S,
    every_s: float = STILL_EVERY_S,
    emit: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """A progress line (``COMMAND: DOING``) only if the block runs past ``after_s``, then
    ``COMMAND: DOING (still, N s)`` every ``every_s``: a quick pass prints nothing. ``emit``
    writes a line's text (default: ``say``; ``QuietStderr.say`` inside ``quiet_stderr``)."""
    done = threading.Event()
    start_monotonic = time.monotonic()
    out = emit if emit is not None else (lambda text: say(command, text))

    def watch() -> None:
        if done.wait(after_s):
            return
        out(doing)
        while not done.wait(every_s):
            out(f"{doing} (still, {time.monotonic() - start_monotonic:.0f} s)")

    watcher = threading.Thread(target=watch, name=f"{command}-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


__all__ = ["MAX_KEPT_LINES", "QuietStderr", "quiet_stderr", "say", "when_slow"]
