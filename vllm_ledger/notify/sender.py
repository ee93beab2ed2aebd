"""The sender's step: settle what was sent, then post the oldest pending delivery once and
record ``sent``, ``failed`` (no request reached the webhook, or it said no) or ``unknown`` (the
request was written whole and no answer came: it may have arrived). Nothing is ever retried."""

from __future__ import annotations

import threading
from collections.abc import Callable

from vllm_ledger.http import client
from vllm_ledger.notify import platforms
from vllm_ledger.notify.config import NotifierConfig
from vllm_ledger.notify.outbox import Delivery
from vllm_ledger.notify.store import Store

# a failed send whose request was written whole: the webhook may have taken it
_MAYBE_ARRIVED = ("timeout", "connection")


class Sender:
    """Posts the store's deliveries to the configured platform; ``wake`` is set when one is
    queued, so an idle step returns at once."""

    def __init__(
        self,
        cfg: NotifierConfig,
        store: Store,
        *,
        clock: Callable[[], float],
        wake: threading.Event,
    ) -> None:
        self.cfg = cfg
        self.store = store
        self.clock = clock
        self.wake = wake
        self._unsettled: tuple[int, str, str | None, int | None] | None = None
        self.outbox = (0, 0)  # (pending, dropped ever), as the last step read them

    def deliver(self, d: Delivery) -> tuple[str, str | None, int | None]:
        """Post ``d`` once: (``sent``, ``failed`` or ``unknown``, the reason, the HTTP status).
        ``unknown``: the request was written whole and no answer came (it may have arrived)."""
        with client.track_sent() as sent:
            try:
                out = platforms.send(
                    self.cfg.platform,
                    self.cfg.webhook_url,
                    d.text,
                    secret=self.cfg.webhook_secret,
                    timeout_s=self.cfg.deliver_timeout_s,
                    clock=self.clock,
                )
            except Exception:  # a fault of ours: recorded, not retried
                out = platforms.Outcome(False, "connection")
        if out.ok:
            return "sent", out.reason, out.http_status
        if sent.value and out.reason in _MAYBE_ARRIVED:
            return "unknown", out.reason, out.http_status
        return "failed", out.reason, out.http_status

    def step(self) -> float:
        """Settle what was sent (until that is stored, nothing else is sent), then send the
        oldest pending delivery; the seconds to wait before the next step."""
        if self._unsettled is not None:
            self.store.settle(*self._unsettled)
            self._unsettled = None
        self.outbox = self.store.outbox()
        d = self.store.next_pending()
        if d is None:
            self.wake.wait(0.5)
            self.wake.clear()
            return 0.0
        self._unsettled = (d.id, *self.deliver(d))
        self.store.settle(*self._unsettled)
        self._unsettled = None
        return 0.0


__all__ = ["Sender"]
