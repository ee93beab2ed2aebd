"""Nothing matched: an empty root, a mistyped root (the ledger root's parent), an unmatched
``--model`` or ``--instance``, a period outside every run. Each of report, timeline, export,
cost and status says so on its first line (stderr where stdout is JSON or CSV; status: its
document), lists the models and instances the roots hold, and exits 3 (docs/cli.md).

Rows run the real command line in-process (``vllm_ledger.cli.main``) over ledgers written by
the real Recorder."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.ledgers import ev, write_ledger
from vllm_ledger.cli import main
from vllm_ledger.commands.report import EXIT_NOTHING_MATCHED

PRICES = (
    "--power-watts=400",
    "--electricity-price=1",
    "--hardware-price=20000",
    "--lifetime-years=3",
    "--ops-per-hour=0.1",
    "--cloud-input-price=1",
    "--cloud-output-price=2",
)
NONE_KNOWN = "known models: none; known instances: none"
KNOWN = "known models: tiny; known instances: testhost:8000"


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("nothing")
    (base / "empty").mkdir()
    root = base / "srv" / "usage"
    now = time.time()
    write_ledger(
        root,
        "20261124T020000Z-testhost-1",
        start_ts=now - 1200,
        end_ts=now - 600,
        events=[ev(now - 900, prompt=100, gen=10)],
    )
    (base / "srv" / "notes.txt").write_text("not a ledger\n")
    return {"empty": str(base / "empty"), "parent": str(base / "srv"), "root": str(root)}


# (id, argv, where the lines are: "out" | "err" | "status", reason words, known line)
ROWS: list[tuple[str, tuple[str, ...], str, str, str]] = []
for _cmd, _extra, _where in (
    ("report", (), "out"),
    ("report", ("--json",), "err"),
    ("report", ("--csv",), "err"),
    ("timeline", (), "out"),
    ("timeline", ("--json",), "err"),
    ("export", ("--since", "1700000000"), "err"),
    ("cost", PRICES, "out"),
    ("cost", (*PRICES, "--json"), "err"),
    ("status", ("--no-health",), "status"),
):
    for _place, _says in (("empty", "no ledger file under"), ("parent", "no ledger file under")):
        ROWS.append(
            (
                f"{_cmd} {' '.join(_extra[-1:])} {_place}",
                (_cmd, "--root", "{" + _place + "}", *_extra),
                _where,
                _says,
                NONE_KNOWN,
            )
        )
for _cmd, _extra, _where in (
    ("report", (), "out"),
    ("report", ("--json",), "err"),
    ("timeline", (), "out"),
    ("timeline", ("--csv",), "err"),
    ("status", ("--no-health",), "status"),
):
    for _flag, _value, _says in (
        ("--model", "nope", "is of model nope"),
        ("--instance", "vm:1", "is of instance vm:1"),
        ("--instance", "9999", "is of instance 9999"),
    ):
        ROWS.append(
            (
                f"{_cmd} {' '.join(_extra)} {_flag} {_value}",
                (_cmd, "--root", "{root}", _flag, _value, *_extra),
                _where,
                _says,
                KNOWN,
            )
        )
ROWS += [
    (
        "report --since outside every run",
        ("report", "--root", "{root}", "--since", "1700000000", "--until", "1700003600"),
        "out",
        "recorded from",
        KNOWN,
    ),
    (
        "export --since outside every run",
        ("export", "--root", "{root}", "--since", "1700000000", "--until", "1700003600"),
        "err",
        "recorded from",
        KNOWN,
    ),
]


@pytest.mark.parametrize(
    ("argv", "where", "says", "known"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_nothing_matched_is_said_first_and_exits_3(
    argv: tuple[str, ...],
    where: str,
    says: str,
    known: str,
    places: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = [a.format(**places) if a.startswith("{") else a for a in argv]
    code = main(args)
    out, err = capsys.readouterr()
    assert code == EXIT_NOTHING_MATCHED == 3, (out, err)
    assert "Traceback" not in out + err
    if where == "status":
        doc = json.loads(out)
        nm = doc["nothing_matched"]
        reason = "no_ledger" if "no ledger" in says else "no_match"
        assert nm["reason"] == reason
        assert (nm["models"], nm["instances"]) == (
            ([], []) if known == NONE_KNOWN else (["tiny"], ["testhost:8000"])
        )
        return
    lines = (out if where == "out" else err).splitlines()
    assert lines[0].startswith("nothing matched: "), lines[:3]
    assert says in lines[0], lines[0]
    assert lines[1] == known
    assert all(line.isprintable() for line in lines[:2])
    if where == "err" and argv[0] == "report" and "--json" in argv:
        assert json.loads(out)["nothing_matched"]["reason"] in ("no_ledger", "no_match")
    if argv[0] == "export":
        assert out == ""  # nothing is written


def test_a_matching_filter_exits_0_and_names_itself(
    places: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--root", places["root"], "--model", "tiny"]) == 0
    out, _err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].startswith("vLLM token ledger as of ")
    assert lines[1] == "(only model tiny)"


def test_a_name_from_disk_is_listed_terminal_safe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = time.time()
    write_ledger(
        tmp_path, "20261124T020000Z-x-1", start_ts=now - 600, end_ts=now - 300, model="m\x1b[2J"
    )
    assert main(["report", "--root", str(tmp_path), "--model", "nope"]) == 3
    out, _err = capsys.readouterr()
    assert out.splitlines()[1] == "known models: m\\x1b[2J; known instances: testhost:8000"
