"""The sender's step over a store on a fake clock, the platform's send stood in for: a delivery
posted once and settled by its outcome, a request written whole with no answer ``unknown``, a
fault of ours ``failed``, and an idle step waiting for its wake-up."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vllm_ledger.http import client
from vllm_ledger.notify import platforms
from vllm_ledger.notify.config import notifier_config
from vllm_ledger.notify.platforms import Outcome
from vllm_ledger.notify.sender import Sender
from vllm_ledger.notify.store import Store


@pytest.fixture
def sender(tmp_path: Path) -> Iterator[Sender]:
    cfg = notifier_config(
        {"notifier": {"lang": "en"}}, tmp_path / "private.json", {"VLLM_LEDGER_COMMAND_SECRET": "c"}
    )
    store = Store(tmp_path / "state.sqlite", clock=lambda: 1_764_400_000.0)
    yield Sender(cfg, store, clock=lambda: 1_764_400_000.0, wake=threading.Event())
    store.close()


def _send_as(monkeypatch: pytest.MonkeyPatch, outcome: Outcome | None, *, wrote: bool) -> None:
    """``platforms.send`` answers ``outcome`` (None: raises), the request written whole or not."""

    @contextlib.contextmanager
    def track_sent() -> Iterator[client.Sent]:
        yield client.Sent(value=wrote)

    def send(*_args: Any, **_kw: Any) -> Outcome:
        if outcome is None:
            raise RuntimeError("a fault of ours")
        return outcome

    monkeypatch.setattr(client, "track_sent", track_sent)
    monkeypatch.setattr(platforms, "send", send)


@pytest.mark.parametrize(
    ("outcome", "wrote", "want"),
    [
        (Outcome(True, None, 200), True, ("sent", None, 200)),
        (Outcome(False, "http_status", 500), True, ("failed", "http_status", 500)),
        (Outcome(False, "timeout"), True, ("unknown", "timeout", None)),
        (Outcome(False, "timeout"), False, ("failed", "timeout", None)),
        (None, False, ("failed", "connection", None)),
    ],
)
def test_a_delivery_is_posted_once_and_settled_by_its_outcome(
    sender: Sender,
    monkeypatch: pytest.MonkeyPatch,
    outcome: Outcome | None,
    wrote: bool,
    want: tuple[str, str | None, int | None],
) -> None:
    _send_as(monkeypatch, outcome, wrote=wrote)
    d = sender.store.queue("reply", "hello")
    assert sender.step() == 0.0
    got = sender.store._db.execute(
        "SELECT state, reason, http_status FROM outbox WHERE id = ?", (d,)
    ).fetchone()
    assert got == want
    assert sender.outbox == (1, 0)  # as read before the send


def test_an_idle_step_waits_for_its_wake_up_and_clears_it(sender: Sender) -> None:
    sender.wake.set()
    assert sender.step() == 0.0
    assert not sender.wake.is_set()
