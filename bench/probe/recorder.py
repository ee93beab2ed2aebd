"""The probe on the ledger's ``Recorder``: its thread's GIL slices opened and closed, its
wake-up wait (or the older shape's queue) and ``time.sleep`` marked as GIL releases, its own
paths (flush, take-in, file check, compaction) timed, and the calls into SQLite and the file
system marked as GIL releases.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

from vllm_ledger.format import connect, smallfiles, writes
from vllm_ledger.write import recorder as recorder_module
from vllm_ledger.write.recorder import Recorder

from . import slices
from .stats import STATS
from .timers import timed, wrap


def install() -> None:
    """Wrap the Recorder's start and thread, its own paths and the calls it may let the GIL
    go in; ``STATS["shape"]["recorder"]`` says which shape of recorder it met."""
    orig_start, orig_run = Recorder.start, Recorder._run

    def start(self: Recorder) -> None:
        if hasattr(self, "buffer"):
            STATS["shape"]["recorder"] = "buffer, own cadence"
            if hasattr(self, "wake"):
                self.wake = slices.TimedWaker(self.wake)
        else:
            STATS["shape"]["recorder"] = "queue, woken per put"
            q: queue.SimpleQueue[Any] = slices.CountingQueue()
            old = self.queue  # type: ignore[attr-defined]
            while True:
                try:
                    q.put(old.get_nowait())
                except queue.Empty:
                    break
            self.queue = q  # type: ignore[attr-defined]
        orig_start(self)

    def run(self: Recorder) -> None:
        STATS["recorder_tid"] = threading.get_native_id()
        slices.on_this_thread()
        slices.open_slice()
        try:
            orig_run(self)
        finally:
            slices.close_slice()

    Recorder.start = start  # type: ignore[method-assign]
    Recorder._run = run  # type: ignore[method-assign]
    for method, name, label in (
        ("_flush", "flush", "flush"),
        ("_take_in", "take_in", "take in"),
        ("_check_file", "check_file", "file check"),
        ("compact", "compact", "compaction"),
    ):
        wrap(Recorder, method, lambda fn, n=name, lb=label: timed(n, fn, lb))
    recorder_module.time = slices.TimeModule()  # type: ignore[attr-defined,assignment]
    for module, fn in (
        (writes, "commit_batch"),
        (smallfiles, "write_sequence_marker"),
        (connect, "open_for_write"),
        (connect, "file_damage"),
        (connect, "quick_check"),
        (connect, "close_without_checkpoint"),
    ):
        wrap(module, fn, slices.releases_gil)
    compaction = getattr(recorder_module, "compaction", None)
    if compaction is not None:
        wrap(compaction, "compact_connection", slices.releases_gil)
