"""A measuring wrapper of the ledger plugin, for the bench's profiling step only.

``logger.ProbedLedgerStatLogger`` is the real ``vllm_ledger.plugin:LedgerStatLogger`` with
timers around the recorder thread's own code paths, so the cost of the ledger inside a serving
API process can be read without a sampling profiler. It measures either shape of the recorder:

* wakeups: the recorder's own ``wakeups_total`` / ``wakeups_by_reason`` where it has a
  ``buffer`` (a deque that ``submit()`` appends to without waking anyone); for the older
  shape (a ``SimpleQueue`` whose blocking ``get`` returns once per wakeup) a ``SimpleQueue``
  subclass swapped in before the thread starts counts the returns (``recorder.py``);
* GIL slices of the recorder thread (``slices.py``);
* flushes (``Recorder._flush``), take-ins (``_take_in``), file checks (``_check_file``) and
  compactions (``compact``): count, wall seconds and the recorder thread's CPU seconds
  (``timers.py``);
* the rank-0 maintenance pass (``maintenance.py``);
* ``record()`` of the plugin and of vLLM's ``PrometheusStatLogger`` on the same iterations:
  calls and wall seconds, and a histogram of calls for the medians (``timers.py``);
* the attribution middleware under the bench's clock, beside a control (``middleware.py``);
* CPU seconds of the whole process, its main thread (vLLM's asyncio loop) and the recorder
  thread, read from ``/proc/self/task`` (``logger.py``).

The figures (``stats.py``) are written as JSON to ``$BENCH_PROBE_OUT`` every second (replaced
atomically) and at exit. The package is copied beside a bundle as ``vllm_ledger_bench_probe``
and registered by a ``dist-info`` folder that ``bench/profiling.py`` writes; its modules import
one another relatively, so they run the same from the checkout and from that copy, standard
library, the ledger and vLLM only. It is never part of a bundle.
"""
