"""The ``notifier resend ID`` side of ``POST /resend``: one request id per delivery, so a retry
is answered, never queued twice.

The request id is derived from the delivery alone (``request_id``): running the same command
again, after a crash of the notifier between its commit and its answer or after an answer lost
on the way, sends the same id, and the notifier answers with the copy it already queued
(``already``) instead of queueing another. One delivery is resent once this way; to send the
text once more, resend the copy (its id is in the answer). ``@bot resend ID`` in the chat is a
request of its own, keyed by its chat message id.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from vllm_ledger.errors import BadArgument, LedgerError, RemoteError
from vllm_ledger.http import client
from vllm_ledger.http.urls import url_host
from vllm_ledger.notify.outbox import Resent
from vllm_ledger.notify.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign

DEADLINE_S = 10.0
MAX_ANSWER_BYTES = 64 * 1024


class NotifierUnreachable(RemoteError):
    """The running notifier did not answer ``/resend`` (``.target``: the address asked)."""

    def __init__(self, where: str) -> None:
        super().__init__(
            f"the notifier at {where} did not answer",
            where,
            hint="start it (`vllm-ledger notifier --config FILE`) and run the same command "
            "again: one delivery is resent once however often it is asked "
            '(docs/notifier.md, "Resending")',
        )


def request_id(delivery_id: int) -> str:
    """The one request id of resending ``delivery_id`` from the command line."""
    return f"cli-resend-{delivery_id}"


def body(delivery_id: int) -> bytes:
    return json.dumps({"request_id": request_id(delivery_id), "delivery_id": delivery_id}).encode()


def request_resend(
    secret: bytes,
    host: str,
    port: int,
    delivery_id: int,
    *,
    clock: Callable[[], float] = time.time,
) -> Resent:
    """Ask the notifier at ``host:port`` to resend ``delivery_id``, signed with ``secret``.
    ``NotifierUnreachable`` when it does not answer, ``BadArgument`` when it keeps no such
    delivery, ``LedgerError`` for any other refusal."""
    where = url_host(host)
    data = body(delivery_id)
    ts = str(int(clock()))
    try:
        answer = client.post(
            f"http://{where}:{port}/resend",
            data,
            deadline_s=DEADLINE_S,
            headers={
                "Content-Type": "application/json; charset=utf-8",
                TIMESTAMP_HEADER: ts,
                SIGNATURE_HEADER: sign(secret, ts, data),
            },
            max_bytes=MAX_ANSWER_BYTES,
        )
    except RemoteError as exc:
        raise NotifierUnreachable(f"{where}:{port}") from exc
    if answer.status == 404:
        raise BadArgument(
            f"no delivery #{delivery_id} in the notifier's outbox: see `notifier status`"
        )
    if answer.status != 200:
        raise LedgerError(f"the notifier refused the resend ({answer.status_text})")
    try:
        doc = json.loads(answer.body)
        done = Resent(
            int(doc["delivery_id"]),
            int(doc["resend_of"]),
            str(doc["state"]),
            doc["status"] == "already_queued",
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise LedgerError("the notifier's answer was not understood") from exc
    if done.resend_of != delivery_id:
        raise LedgerError("the notifier's answer names another delivery")
    return done


__all__ = ["NotifierUnreachable", "body", "request_id", "request_resend"]
