"""The README and docs/contributing.md say what the Makefile and the last measured run say.

- ``make test`` and ``make unit``: every duration ("about N minutes", "under N minutes"), test
  count ("N tests") and core count ("on N cores") the two pages give is the one in
  ``docs/test-timings.json``, the record of the last measured run; the Makefile's default
  ``TEST_WORKERS`` is ``make test``'s core count (a worker a core) and ``UNIT_WORKERS`` the
  workers ``make unit`` was measured with.
- Every ``make X`` the two pages name is a target of the Makefile, and the commands a row of
  contributing.md's table shows for a target (``pytest ...``, ``mypy ...``, ``ruff ...``) are that
  target's recipe; every ``mypy ...`` either page shows is ``make typecheck``'s.
- contributing.md's set-up names every Debian package ``scripts/setup.sh`` installs.
- No user doc (README.md, docs/*.md) prints a scratch folder of a local run (``/tmp/...``,
  ``pytest-of-...``, a home or work folder, ``bench/out``), except the few lines in ``ALLOWED``
  where the path is what the product itself writes or refuses.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import REPO

README = REPO / "README.md"
CONTRIBUTING = REPO / "docs" / "contributing.md"
PAGES = (README, CONTRIBUTING)
TIMINGS = json.loads((REPO / "docs" / "test-timings.json").read_text())
MAKEFILE = (REPO / "Makefile").read_text()

# What each figure looks like in prose, and the key it has in docs/test-timings.json.
FIGURES = {
    "minutes": re.compile(r"\b(?:about|under) (\d+) minutes?\b"),
    "tests": re.compile(r"\b(\d[\d,]*)\s+tests\b"),
    "cores": re.compile(r"\bon (\d+) cores\b"),
}
# What each page must state, so that deleting a figure fails here too.
REQUIRED = {
    README: {("test", "minutes"), ("test", "tests"), ("test", "cores")},
    CONTRIBUTING: {
        ("test", "minutes"),
        ("test", "tests"),
        ("unit", "minutes"),
        ("unit", "cores"),
    },
}

SCRATCH = re.compile(r"/tmp/|pytest-of-|/work/|/home/|\bbench/out\b")
# (page, the exact text on its line, why that path belongs there)
ALLOWED = (
    ("bot-status.md", "'-oProxyCommand=touch /tmp/x'", "a hostile target, shown refused"),
    ("kubernetes.md", "/tmp/vllm-ledger/", "the Dockerfile deploy/image.py writes, as written"),
    ("launch.md", "`/home/USER`", "the unit's home, as deploy/units.py takes it"),
    ("contributing.md", "`bench/out/`", "the benchmark's own folder, where the bench is run"),
    ("performance.md", "`bench/out/`", "the benchmark's own folder, where the bench is run"),
    ("performance.md", "`bench/out/w8-d30`", "the benchmark's own ledgers, named by the bench"),
)


def statements(text: str) -> list[str]:
    """``text`` cut into paragraphs and table rows: a figure belongs to its own statement."""
    parts: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        rows = [line for line in block.splitlines() if line.startswith("|")]
        parts.extend(rows if rows else [block])
    return parts


def claims(page: Path) -> list[tuple[str, str, int]]:
    """(target, figure, value) for each figure after a `make test` or `make unit`: the target
    is the nearest one before the figure in its statement."""
    found = []
    for statement in statements(page.read_text()):
        targets = [(m.end(), m.group(1)) for m in re.finditer(r"`make (test|unit)\b", statement)]
        for figure, pattern in FIGURES.items():
            for m in pattern.finditer(statement):
                before = [name for end, name in targets if end <= m.start()]
                if before:
                    found.append((before[-1], figure, int(m.group(1).replace(",", ""))))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_durations_and_counts_are_the_last_measured_runs(page: Path) -> None:
    got = claims(page)
    wrong = [c for c in got if TIMINGS[f"make {c[0]}"][c[1]] != c[2]]
    assert not wrong, f"{page.name} says {wrong}; docs/test-timings.json: {TIMINGS}"
    missing = REQUIRED[page] - {(target, figure) for target, figure, _ in got}
    assert not missing, f"{page.name} no longer states {sorted(missing)}"


def test_the_makefile_runs_the_recorded_number_of_workers() -> None:
    for target, variable in (("make test", "TEST_WORKERS"), ("make unit", "UNIT_WORKERS")):
        default = re.search(rf"^{variable} \?= (\d+)$", MAKEFILE, flags=re.M)
        assert default, f"the Makefile sets no default {variable}"
        assert TIMINGS[target]["workers"] == int(default.group(1)), target
    assert TIMINGS["make test"]["workers"] == TIMINGS["make test"]["cores"]


def recipes() -> dict[str, list[str]]:
    """Each Makefile target's commands, ``$(PY) -m`` dropped (the pages name the tool)."""
    found: dict[str, list[str]] = {}
    for m in re.finditer(r"^([\w-]+):[^\n=]*\n((?:\t[^\n]*\n?)*)", MAKEFILE, flags=re.M):
        lines = [line.strip().removeprefix("$(PY) -m ") for line in m.group(2).splitlines()]
        found[m.group(1)] = lines
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_make_target_named_exists(page: Path) -> None:
    text = page.read_text()
    named = set(re.findall(r"`make ([\w-]+)", text)) | set(
        re.findall(r"^make ([\w-]+)", text, flags=re.M)
    )
    assert named, page
    assert named <= set(recipes()), f"{page.name} names {sorted(named - set(recipes()))}"


def test_each_rows_commands_are_its_targets_recipe() -> None:
    rows = [r for r in CONTRIBUTING.read_text().splitlines() if r.startswith("| `make ")]
    assert len(rows) >= 6, rows
    for row in rows:
        named, what = row.split("|")[1], row.split("|")[2]
        commands = [c for t in re.findall(r"`make ([\w-]+)`", named) for c in recipes()[t]]
        shown = re.findall(r"`((?:pytest|mypy|ruff) [^`]*)`", what)
        assert all(s in commands for s in shown), f"{row}\nthe Makefile runs {commands}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_mypy_as_the_pages_show_it_is_make_typecheck(page: Path) -> None:
    typecheck = [c for c in recipes()["typecheck"] if c.startswith("mypy")]
    assert len(typecheck) == 1, recipes()["typecheck"]
    shown = re.findall(r"`(mypy[^`]*)`", page.read_text())
    assert all(s == typecheck[0] for s in shown), f"{page.name} shows {shown}"


def test_the_set_up_names_every_package_setup_installs() -> None:
    script = (REPO / "scripts" / "setup.sh").read_text()
    packages = {p for group in re.findall(r"need_apt\+=\(([^)]*)\)", script) for p in group.split()}
    assert {"prometheus", "supervisor", "prometheus-node-exporter"} <= packages, packages
    text = CONTRIBUTING.read_text()
    set_up = text[text.index("## Set-up") : text.index("| command |")]
    missing = sorted(p for p in packages if f"`{p}`" not in set_up)
    assert not missing, f"contributing.md's set-up does not name {missing}"


def scratch_lines(page: Path) -> list[str]:
    """The lines of ``page`` that name a scratch path, once the allowed text is taken out."""
    allowed = [text for name, text, _why in ALLOWED if name == page.name]
    found = []
    for number, line in enumerate(page.read_text().splitlines(), start=1):
        for text in allowed:
            line = line.replace(text, "")
        if SCRATCH.search(line):
            found.append(f"{page.name}:{number}: {line.strip()[:160]}")
    return found


def test_no_scratch_path_in_the_user_docs() -> None:
    pages = [README, *sorted((REPO / "docs").glob("*.md"))]
    found = [line for page in pages for line in scratch_lines(page)]
    assert not found, "a local run's folder printed (use /srv/artifacts/usage and the like):\n" + (
        "\n".join(found)
    )


def test_the_scratch_check_can_fail(tmp_path: Path) -> None:
    page = tmp_path / "timeline-and-html.md"
    page.write_text("$ vllm-ledger report --root /tmp/pytest-of-root/pytest-3/ledger\nfine\n")
    assert scratch_lines(page) == [
        "timeline-and-html.md:1: $ vllm-ledger report --root /tmp/pytest-of-root/pytest-3/ledger"
    ]
