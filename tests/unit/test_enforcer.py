"""The enforcer on a real root: who is over an enforced hard budget is published whole, the
next period nobody is, one enforcer per root, and a budgets file that cannot be used is one
line and exit 2."""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from vllm_ledger import enforcer
from vllm_ledger.format import overbudget
from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.plan.budgets import load_budgets
from vllm_ledger.write.recorder import Recorder
from vllm_ledger.write.tags import TagBook

SH = ZoneInfo("Asia/Shanghai")
DAY_AT = datetime(2026, 12, 2, 15, tzinfo=SH).timestamp()


def _root(tmp_path: Path) -> Path:
    """One writer that credited team-a 900 tokens and team-b 50 at 15:00 local."""
    root = tmp_path / "root"
    book = TagBook()
    book.consumer = True
    clock = {"now": DAY_AT}
    rec = Recorder(
        root,
        WriterIdentity("run-e", 0, 1, pid=1, instance=InstanceInfo(("tiny",), 8000, "h")),
        clock=lambda: clock["now"],
        book=book,
    )
    for x, key, prompt in (("a1", "team-a", 800), ("b1", "team-b", 40)):
        e = book.begin(x, judge_abort=True)
        assert e is not None
        book.named(e, key, "tiny", "", "")
        fin = ((prompt // 8, 0.5, f"chatcmpl-{x}", prompt, 0),)
        rec.submit((DAY_AT - 60.5, 0, prompt, prompt // 8, 0, fin, book.tick()))
    assert rec.pump(final=True)
    return root


def _budgets(tmp_path: Path) -> Path:
    p = tmp_path / "budgets.toml"
    p.write_text(
        'zone = "Asia/Shanghai"\nenforce = true\n'
        '[[budget]]\nkey = "team-a"\ntokens = 900\n'
        '[[budget]]\nkey = "team-b"\ntokens = 900\n'
        '[[budget]]\nkey = "team-a"\nname = "watch-only"\ntokens = 10\nenforce = false\n'
    )
    return p


def test_who_is_over_is_published_and_the_next_day_nobody_is(tmp_path: Path) -> None:
    root, config = _root(tmp_path), load_budgets(_budgets(tmp_path))
    states = enforcer.publish_once(root, config, lambda: DAY_AT)
    assert [(s.budget.name, s.used, s.level) for s in states] == [
        ("key-team-a-day", 900.0, "hard"),
        ("key-team-b-day", 45.0, "ok"),
        ("watch-only", 900.0, "hard"),
    ]
    written, _fresh, over = overbudget.parse(overbudget.path_in(root).read_bytes())
    midnight = datetime(2026, 12, 3, tzinfo=SH).timestamp()
    assert written == DAY_AT
    assert over == {("key", "team-a"): overbudget.Over("key", "team-a", midnight, "key-team-a-day")}
    enforcer.publish_once(root, config, lambda: midnight + 5)
    assert overbudget.parse(overbudget.path_in(root).read_bytes())[2] == {}


def test_one_enforcer_per_root_and_a_bad_file_is_exit_2(tmp_path: Path) -> None:
    root, path = _root(tmp_path), _budgets(tmp_path)
    stop = threading.Event()
    first = threading.Thread(
        target=enforcer.run, args=(root, path), kwargs={"interval_s": 0.05, "stop": stop}
    )
    first.start()
    try:
        while not overbudget.path_in(root).exists():
            stop.wait(0.01)
        assert enforcer.run(root, path, stop=threading.Event()) == 0  # the lock is held
    finally:
        stop.set()
        first.join(10)
    bad = tmp_path / "bad.toml"
    bad.write_text("[[budget]]\nkey = 'a'\n")
    assert enforcer.run(root, bad) == 2


def test_a_changed_budgets_file_is_read_again_and_a_broken_one_keeps_the_last(
    tmp_path: Path,
) -> None:
    root, path = _root(tmp_path), _budgets(tmp_path)
    stop = threading.Event()
    runner = threading.Thread(
        target=enforcer.run,
        args=(root, path),
        kwargs={"interval_s": 0.05, "stop": stop, "clock": lambda: DAY_AT},
    )

    def over() -> set[tuple[str, str]]:
        got = overbudget.path_in(root)
        return set(overbudget.parse(got.read_bytes())[2]) if got.exists() else set()

    runner.start()
    try:
        while over() != {("key", "team-a")}:
            stop.wait(0.01)
        path.write_text('enforce = true\n[[budget]]\nkey = "team-b"\ntokens = 10\n')
        while over() != {("key", "team-b")}:  # read again: team-b now over, team-a not
            stop.wait(0.01)
        path.write_text("[[budget]]\nkey = 'team-b'\n")  # broken: the last budgets stay
        written = overbudget.parse(overbudget.path_in(root).read_bytes())[0]
        for _ in range(20):
            stop.wait(0.05)
        assert over() == {("key", "team-b")}
        assert overbudget.parse(overbudget.path_in(root).read_bytes())[0] >= written
    finally:
        stop.set()
        runner.join(10)
