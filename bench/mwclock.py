"""The time an ASGI middleware spends in its own code, not in the app it wraps nor in the server.

A middleware's coroutine runs in steps (from one suspension to the next), and the app it wraps
runs inside those steps (``await self.app(...)``), as do the server's ``receive`` and ``send``
that the app reaches through the middleware. ``MiddlewareClock.wrap_call`` runs the middleware's
coroutine under a clock that charges each synchronous stretch to whoever's code it is:

* ``mw``: the middleware's coroutine, and the ``receive``/``send`` callables it hands the app;
* ``app``: the app it wraps (``clock.wrap_app``);
* ``server``: the ``receive``/``send`` the ASGI server handed the middleware.

Each step is timed with ``perf_counter`` at every change of owner (a stack on the event loop's
thread), so the ``mw`` total is the wall time of the middleware's own stretches: CPU time on a
thread that is not preempted or kept waiting for the GIL, an upper bound otherwise. The clock's
own cost is charged partly to ``mw``; ``calibrate()`` measures that share per ``mw`` stretch
with a middleware that does nothing, to be taken off (``own_s``).

Used by the bench's probe inside a serving vLLM (``bench/probe/``) and, in-process, beside a
plain A/B of the same middleware (``bench/mwcost.py``), which checks it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
App = Callable[..., Awaitable[None]]
OWNERS = ("mw", "app", "server")  # a middleware's own name may stand for "mw" (``owner=``)


class MiddlewareClock:
    """Seconds charged per owner, on one thread (the event loop's)."""

    def __init__(self, timer: Callable[[], float] = time.thread_time) -> None:
        self.timer = timer
        self.seconds: dict[str, float] = dict.fromkeys(OWNERS, 0.0)
        self.stretches: dict[str, int] = dict.fromkeys(OWNERS, 0)
        self.requests = 0
        self.bias_s = 0.0  # what the clock adds to one mw stretch (``calibrate``)
        self._stack: list[str] = []
        self._last = 0.0

    # ---- charging ------------------------------------------------------------------------

    def _enter(self, owner: str) -> None:
        now = self.timer()
        stack = self._stack
        if stack:
            self.seconds[stack[-1]] += now - self._last
        stack.append(owner)
        self.stretches[owner] += 1
        self._last = now

    def _leave(self) -> None:
        now = self.timer()
        self.seconds[self._stack.pop()] += now - self._last
        self._last = now

    def own_s(self, owner: str = "mw") -> float:
        """A middleware's own seconds, less the clock's share of them."""
        return max(0.0, self.seconds[owner] - self.stretches[owner] * self.bias_s)

    # ---- wrapping -------------------------------------------------------------------------

    def owned(self, owner: str, awaitable: Awaitable[Any]) -> Awaitable[Any]:
        return _Owned(self, owner, awaitable)

    def wrap_call(
        self, middleware: Any, scope: Scope, receive: Any, send: Any, owner: str = "mw"
    ) -> Awaitable[None]:
        """``middleware(scope, receive, send)`` with its stretches charged to ``owner``."""
        if owner == "mw":
            self.requests += 1
        self._own(owner)
        call = type(middleware).__dict__.get("_mwclock_original") or type(middleware).__call__
        receive, send = self._callable("server", receive), self._callable("server", send)
        return self.owned(owner, call(middleware, scope, receive, send))

    def wrap_app(self, app: App, owner: str = "mw") -> App:
        """The app a middleware wraps: its stretches charged to ``app``; the ``receive`` and
        ``send`` the middleware hands it charged to ``owner``, unless they are the server's
        (or another clocked middleware's) passed through."""
        clock = self
        self._own(owner)

        def wrapped(scope: Scope, receive: Any, send: Any) -> Awaitable[None]:
            return clock.owned(
                "app", app(scope, clock._callable(owner, receive), clock._callable(owner, send))
            )

        return wrapped

    def _own(self, owner: str) -> None:
        self.seconds.setdefault(owner, 0.0)
        self.stretches.setdefault(owner, 0)

    def _callable(self, owner: str, fn: Any) -> Any:
        if isinstance(fn, _OwnedCallable):
            return fn  # the server's, passed through by the middleware untouched
        return _OwnedCallable(self, owner, fn)

    def calibrate(self, rounds: int = 2000) -> float:
        """The clock's share per ``mw`` stretch: a middleware that only passes the request on
        (an ``await`` of the app: its own code is next to nothing), timed the same way around
        a trivial app that reads one chunk and sends two messages; the median over batches."""
        trial = MiddlewareClock(self.timer)

        class Nothing:
            def __init__(self, app: App) -> None:
                self.app = trial.wrap_app(app)

            async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
                await self.app(scope, receive, send)

        mw = Nothing(_echo_app)
        per: list[float] = []

        async def run() -> None:
            for _ in range(20):
                before_s, before_n = trial.seconds["mw"], trial.stretches["mw"]
                for _ in range(rounds // 20):
                    await trial.wrap_call(mw, {"type": "http"}, _one_chunk, _discard)
                n = trial.stretches["mw"] - before_n
                per.append((trial.seconds["mw"] - before_s) / max(1, n))

        asyncio.run(run())
        per.sort()
        self.bias_s = per[len(per) // 2]
        return self.bias_s


class _OwnedCallable:
    __slots__ = ("clock", "fn", "owner")

    def __init__(self, clock: MiddlewareClock, owner: str, fn: Any) -> None:
        self.clock, self.owner, self.fn = clock, owner, fn

    def __call__(self, *args: Any) -> Awaitable[Any]:
        return _Owned(self.clock, self.owner, self.fn(*args))


class _Owned:
    """An awaitable whose every step is charged to ``owner``."""

    __slots__ = ("aw", "clock", "owner")

    def __init__(self, clock: MiddlewareClock, owner: str, aw: Awaitable[Any]) -> None:
        self.clock, self.owner, self.aw = clock, owner, aw

    def __await__(self) -> Generator[Any, Any, Any]:
        it = self.aw.__await__()
        enter, leave, owner = self.clock._enter, self.clock._leave, self.owner
        value: Any = None
        error: BaseException | None = None
        while True:
            enter(owner)
            try:
                out = it.send(value) if error is None else it.throw(error)
            except StopIteration as stop:
                leave()
                return stop.value
            except BaseException:
                leave()
                raise
            leave()
            try:
                value, error = (yield out), None
            except BaseException as exc:
                value, error = None, exc


async def _one_chunk() -> Message:
    return {"type": "http.request", "body": b"{}", "more_body": False}


async def _discard(message: Message) -> None:
    return None


async def _echo_app(scope: Scope, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})
