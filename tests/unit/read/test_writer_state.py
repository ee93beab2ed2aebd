"""A writer's state and whether it has finished, judged against the reader's clock."""

from __future__ import annotations

from vllm_ledger.names import HEARTBEAT_STALE_AFTER_S
from vllm_ledger.read.writer_state import FINISHED_AFTER_S, finished, writer_state

AT = 1_800_000_000.0


def test_a_clean_close_is_closed_whatever_its_last_proof() -> None:
    for latest in (True, False):
        assert (
            writer_state(clean_close_ts=AT - 1e6, last_proof_ts=None, at_ts=AT, latest_run=latest)
            == "closed"
        )


def test_a_proof_within_the_stale_bound_is_alive() -> None:
    at_bound = AT - HEARTBEAT_STALE_AFTER_S
    assert (
        writer_state(clean_close_ts=None, last_proof_ts=at_bound, at_ts=AT, latest_run=False)
        == "alive"
    )
    assert writer_state(clean_close_ts=None, last_proof_ts=AT, at_ts=AT, latest_run=True) == "alive"


def test_a_silent_writer_is_stale_in_the_newest_run_and_crashed_in_an_older_one() -> None:
    late = AT - HEARTBEAT_STALE_AFTER_S - 0.001
    for proof in (late, None):
        assert (
            writer_state(clean_close_ts=None, last_proof_ts=proof, at_ts=AT, latest_run=True)
            == "stale"
        )
        assert (
            writer_state(clean_close_ts=None, last_proof_ts=proof, at_ts=AT, latest_run=False)
            == "crashed"
        )


def test_finished_after_a_clean_close_or_an_hour_of_silence() -> None:
    assert FINISHED_AFTER_S == 3600.0
    assert finished(clean_close_ts=AT, last_proof_ts=AT, at_ts=AT)
    assert finished(clean_close_ts=None, last_proof_ts=None, at_ts=AT)
    assert not finished(clean_close_ts=None, last_proof_ts=AT - 3600, at_ts=AT)
    assert finished(clean_close_ts=None, last_proof_ts=AT - 3600.5, at_ts=AT)
