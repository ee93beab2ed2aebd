"""The attribution middleware under the bench's clock (``bench/mwclock.py``: ``thread_time``
at every change of owner, the clock's own share per stretch taken off): its own code's CPU on
vLLM's loop, apart from the app it wraps and the server's ``receive`` and ``send``, its calls,
the tag book's counts (tagged, faults); and a control middleware of the same shape under the
same clock.
"""

from __future__ import annotations

import threading
from typing import Any

from vllm_ledger.write import middleware as middleware_module
from vllm_ledger.write.tags import BOOK

try:  # beside the probe's package in its folder (bench/profiling.py copies it there)
    import vllm_ledger_bench_mwclock as mwclock
except ImportError:  # run from the checkout
    from bench import mwclock

CLOCK = mwclock.MiddlewareClock()


def install() -> None:
    """Run every call of the attribution middleware under the clock: its own code's CPU
    (``thread_time`` at every change of owner), apart from the app it wraps and the server's
    ``receive``/``send``. vLLM builds the middleware at the first request, after this."""
    cls = middleware_module.LedgerMiddleware
    original = cls.__call__
    cls._mwclock_original = original  # type: ignore[attr-defined]

    def __call__(self: Any, scope: Any, receive: Any, send: Any) -> Any:
        if not getattr(self, "_mwclock_app", False):
            self.app = CLOCK.wrap_app(self.app)
            self._mwclock_app = True
        return CLOCK.wrap_call(self, scope, receive, send)

    cls.__call__ = __call__  # type: ignore[method-assign]
    # The clock's own share per stretch, measured on a thread of its own: this runs inside
    # vLLM's starting loop, where asyncio.run cannot.
    t = threading.Thread(target=CLOCK.calibrate, name="bench-probe-calibrate")
    t.start()
    t.join()


class NullMiddleware:
    """The control beside the ledger's middleware: one that only hands the request on through
    its own ``receive`` and ``send`` (the ledger's shape, none of its work), under the same
    clock as ``null``. What the clock finds in it is the clock's own error in this process
    plus a few frames of real code. ``--middleware
    vllm_ledger_bench_probe.middleware.NullMiddleware``."""

    def __init__(self, app: Any) -> None:
        self.app = CLOCK.wrap_app(app, owner="null")

    def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        return CLOCK.wrap_call(self, scope, receive, send, owner="null")

    async def _mwclock_original(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return

        async def receive_body() -> Any:
            return await receive()

        async def send_watched(message: Any) -> None:
            await send(message)

        await self.app(scope, receive_body, send_watched)


def figures() -> dict[str, Any]:
    return {
        "calls": CLOCK.requests,
        "own_cpu_s": CLOCK.own_s(),
        "null_cpu_s": CLOCK.own_s("null") if "null" in CLOCK.seconds else None,
        "charged_cpu_s": dict(CLOCK.seconds),
        "stretches": dict(CLOCK.stretches),
        "bias_us": CLOCK.bias_s * 1e6,
        "tagged": BOOK.begun_total,
        "faults": BOOK.faults_total,
        "book_full": BOOK.full_total,
    }
