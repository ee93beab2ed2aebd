"""Credits summed between commits, and the bound on distinct names per file and hour."""

from __future__ import annotations

from vllm_ledger.write.credits import CreditSums, credit_ok, distinct_limits

HOUR = 1_800_000_000 - 1_800_000_000 % 3600


def test_credits_add_per_second_and_dims() -> None:
    sums = CreditSums({"key": 10, "user": 10, "tenant": 10})
    dims = ("k", "m", "u", "t", "")
    sums.add(HOUR + 5, [(dims, 10, 1, 4, 1, 0), (dims, 5, 2, 0, 1, 0)])
    sums.add(HOUR + 6, [(dims, 1, 1, 0, 1, 0)])
    assert sorted(sums.rows()) == [
        (HOUR + 5, dims, 15, 3, 4, 2, 0),
        (HOUR + 6, dims, 1, 1, 0, 1, 0),
    ]
    sums.clear()
    assert sums.rows() == []


def test_past_the_bound_a_name_folds_into_other_and_is_counted_once() -> None:
    sums = CreditSums({"key": 2, "user": 3, "tenant": 1000})
    for i in range(10):
        sums.add(HOUR + i, [((f"k{i % 4}", "m", f"u{i}", "", ""), 1, 1, 0, 1, 0)])
        sums.add(HOUR + i, [((f"k{i % 4}", "m", f"u{i}", "", ""), 1, 1, 0, 1, 0)])  # again
    users = {dims[2] for _s, dims, *_ in sums.rows()}
    keys = {dims[0] for _s, dims, *_ in sums.rows()}
    assert users == {"u0", "u1", "u2", "other"} and keys == {"k0", "k1", "other"}
    assert sums.folded_rows() == [(HOUR, "key", 2), (HOUR, "user", 7)]
    assert sum(r[2] for r in sums.rows()) == 20  # nothing lost by folding
    # The next hour names afresh; an empty user is never counted against the bound.
    sums.add(HOUR + 3600, [(("k9", "m", "", "", ""), 1, 0, 0, 1, 0)])
    assert (HOUR + 3600, ("k9", "m", "", "", ""), 1, 0, 0, 1, 0) in sums.rows()


def test_the_limits_come_from_the_environment_within_reason() -> None:
    assert distinct_limits({}) == {"key": 1000, "user": 1000, "tenant": 1000}
    env = {
        "VLLM_LEDGER_MAX_USERS": "50",
        "VLLM_LEDGER_MAX_KEYS": "0",
        "VLLM_LEDGER_MAX_TENANTS": "x",
    }
    assert distinct_limits(env) == {"key": 1000, "user": 50, "tenant": 1000}


def test_credit_ok_holds_the_bounds() -> None:
    dims = ("k", "m", "u", "t", "")
    assert credit_ok((dims, 1, 2, 1, 1, 0))
    for bad in (
        (dims, -1, 0, 0, 1, 0),
        (dims, 1, 0, 2, 1, 0),  # cached over prompt
        (dims, 10**9, 0, 0, 1, 0),
        (("k", "m", "u", "t"), 1, 0, 0, 1, 0),
        (("x" * 300, "m", "u", "t", ""), 1, 0, 0, 1, 0),
        (dims, True, 0, 0, 1, 0),
        "credit",
    ):
        assert not credit_ok(bad), bad


def test_label_sets_are_bounded_per_hour_the_user_folding_first() -> None:
    sums = CreditSums({"key": 1000, "user": 1000, "tenant": 1000}, max_sets=100)
    for i in range(300):  # 300 keys x users paired freely: 300 sets asked, 100 kept
        sums.add(HOUR + i, [((f"k{i % 30}", "m", f"u{i}", "", ""), 1, 1, 0, 1, 0)])
    sets = {dims for _s, dims, *_ in sums.rows()}
    assert len([d for d in sets if d[2] != "other"]) == 100  # the first 100, names whole
    # Past the bound the user is folded; the key stays seen (its sets up to twice the bound).
    assert {d[0] for d in sets if d[2] == "other"} == {f"k{i}" for i in range(30)}
    assert len(sets) == 130
    assert sum(r[2] for r in sums.rows()) == 300  # nothing lost by folding
    assert dict(((k, n) for _h, k, n in sums.folded_rows())) == {"user": 200}
