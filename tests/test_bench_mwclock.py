"""The bench's middleware clock: each stretch of CPU charged to the middleware, the app it
wraps or the server, on a timer the test moves by hand (so every figure is exact)."""

from __future__ import annotations

import asyncio
from typing import Any

from bench.mwclock import MiddlewareClock


class Timer:
    """A thread-CPU clock that moves only when the code under test says it spent time."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def spend(self, seconds: float) -> None:
        self.now += seconds


def _server(timer: Timer, chunks: list[bytes]) -> tuple[Any, Any, list[Any]]:
    """The server's receive (3 s a call) and send (4 s a call), and what was sent."""
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        timer.spend(3)
        await asyncio.sleep(0)  # a real suspension: the loop runs in between
        body = chunks.pop(0)
        return {"type": "http.request", "body": body, "more_body": bool(chunks)}

    async def send(message: Any) -> None:
        timer.spend(4)
        sent.append(message)

    return receive, send, sent


class Tagging:
    """A middleware shaped like the ledger's: 10 s before the app, 1 s in each receive it
    hands the app, 2 s in each send, 20 s after the app."""

    def __init__(self, app: Any, timer: Timer) -> None:
        self.app, self.timer = app, timer

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.timer.spend(10)

        async def receive_body() -> Any:
            self.timer.spend(1)
            return await receive()

        async def send_watched(message: Any) -> None:
            self.timer.spend(2)
            await send(message)

        await self.app(scope, receive_body, send_watched)
        self.timer.spend(20)


def _app(timer: Timer, stream_from_task: bool = False) -> Any:
    """Reads the body (100 s of work a chunk), then answers with a start and two chunks; with
    ``stream_from_task`` the answer is sent from another task, as a streaming response is."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            timer.spend(100)
            if not message["more_body"]:
                break

        async def answer() -> None:
            for m in ("start", "one", "two"):
                timer.spend(50)
                await send({"type": m})

        if stream_from_task:
            await asyncio.get_running_loop().create_task(answer())
        else:
            await answer()

    return app


def _run(timer: Timer, stream_from_task: bool) -> tuple[MiddlewareClock, list[Any]]:
    clock = MiddlewareClock(timer)
    mw = Tagging(clock.wrap_app(_app(timer, stream_from_task)), timer)
    receive, send, sent = _server(timer, [b"a", b"b"])

    async def serve() -> None:  # as an ASGI server awaits the app
        await clock.wrap_call(mw, {"type": "http"}, receive, send)

    asyncio.run(serve())
    return clock, sent


def test_each_stretch_is_charged_to_whose_code_it_is() -> None:
    clock, sent = _run(Timer(), stream_from_task=False)
    assert [m["type"] for m in sent] == ["start", "one", "two"]
    # mw: 10 before, 1 per receive (2 chunks), 2 per send (3 messages), 20 after
    assert clock.seconds == {
        "mw": 10 + 2 * 1 + 3 * 2 + 20,
        "app": 2 * 100 + 3 * 50,
        "server": 2 * 3 + 3 * 4,
    }
    assert clock.requests == 1
    # the call: its first step and one after each of the 2 suspensions (inside receive);
    # each receive it hands the app: 2 steps; each send: 1
    assert clock.stretches["mw"] == 3 + 2 * 2 + 3
    assert clock.stretches["app"] == 3  # the app's coroutine, resumed after each receive
    assert clock.stretches["server"] == 2 + 2 + 3  # each receive twice (suspends once), sends


def test_a_response_sent_from_another_task_is_charged_the_same() -> None:
    clock, sent = _run(Timer(), stream_from_task=True)
    assert [m["type"] for m in sent] == ["start", "one", "two"]
    assert clock.seconds["mw"] == 10 + 2 + 6 + 20
    assert clock.seconds["server"] == 2 * 3 + 3 * 4
    # the answering task's own code belongs to no one: it runs outside every wrapped call
    assert clock.seconds["app"] == 2 * 100


def test_the_clocks_share_per_stretch_is_taken_off() -> None:
    clock, _sent = _run(Timer(), stream_from_task=False)
    clock.bias_s = 0.5
    assert clock.own_s() == 38 - 0.5 * clock.stretches["mw"]
    clock.bias_s = 1000.0
    assert clock.own_s() == 0.0  # never below nothing


def test_calibration_on_a_timer_that_never_moves_is_zero() -> None:
    clock = MiddlewareClock(Timer())
    assert clock.calibrate(rounds=40) == 0.0
    assert clock.bias_s == 0.0


class Passing:
    """A middleware that only hands the request on through its own receive and send: 5 s
    before the app, half a second in each receive and send."""

    def __init__(self, app: Any, timer: Timer) -> None:
        self.app, self.timer = app, timer

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.timer.spend(5)

        async def r() -> Any:
            self.timer.spend(0.5)
            return await receive()

        async def s(message: Any) -> None:
            self.timer.spend(0.5)
            await send(message)

        await self.app(scope, r, s)


def test_two_middlewares_on_one_clock_are_charged_apart() -> None:
    """The control the probe runs beside the ledger's middleware: each keeps its own figure,
    the inner one's server being the outer one's receive and send."""
    timer = Timer()
    clock = MiddlewareClock(timer)
    inner = Tagging(clock.wrap_app(_app(timer)), timer)

    def inner_call(scope: Any, receive: Any, send: Any) -> Any:
        return clock.wrap_call(inner, scope, receive, send)

    outer = Passing(clock.wrap_app(inner_call, owner="null"), timer)
    receive, send, sent = _server(timer, [b"a", b"b"])

    async def serve() -> None:
        await clock.wrap_call(outer, {"type": "http"}, receive, send, owner="null")

    asyncio.run(serve())
    assert len(sent) == 3
    assert clock.seconds == {
        "mw": 38,
        "null": 5 + 2 * 0.5 + 3 * 0.5,
        "app": 2 * 100 + 3 * 50,
        "server": 2 * 3 + 3 * 4,
    }
    assert clock.requests == 1  # calls of "mw" only
