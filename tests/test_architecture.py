"""The layout shows the architecture, read from the imports (function-level ones included).

Layers, bottom to top (docs/architecture.md draws them): a module may import its own layer or
a lower one, never a higher one, and the import graph has no circle.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "vllm_ledger"

LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "vllm_ledger",
        "vllm_ledger.bounds",
        "vllm_ledger.errors",
        "vllm_ledger.figures",
        "vllm_ledger.hostport",
        "vllm_ledger.http",
        "vllm_ledger.names",
        "vllm_ledger.outfile",
        "vllm_ledger.promtext",
        "vllm_ledger.strictjson",
        "vllm_ledger.timespec",
        "vllm_ledger.units",
    ),
    ("vllm_ledger.format",),
    ("vllm_ledger.write",),
    ("vllm_ledger.read",),
    (
        "vllm_ledger.background",
        "vllm_ledger.maintenance",
        "vllm_ledger.enforcer",
        "vllm_ledger.doctor",
        "vllm_ledger.plugin",
        "vllm_ledger.middleware",
        "vllm_ledger.formats",
        "vllm_ledger.observe",
        "vllm_ledger.plan",
        "vllm_ledger.bot",
        "vllm_ledger.deploy",
        "vllm_ledger.notify",
    ),
    ("vllm_ledger.commands",),
    ("vllm_ledger.cli", "vllm_ledger.__main__"),
)


# What runs inside vLLM: the on-disk format and the write side (standard library only).
WRITE_SIDE = (1, 2)


def test_the_read_side_never_reaches_into_the_write_side() -> None:
    """The read side reads through the on-disk format below both (``vllm_ledger.format``)."""
    reach = [
        f"{m} imports {d}"
        for m, deps in sorted(GRAPH.items())
        if m.startswith("vllm_ledger.read")
        for d in sorted(deps)
        if d.startswith("vllm_ledger.write")
    ]
    assert reach == []


def _modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


@functools.cache
def tree_of(module: str) -> ast.Module:
    """``module``'s syntax tree, parsed once for every test here that reads it."""
    return ast.parse(MODULES[module].read_text())


def layer_of(module: str) -> int:
    best = (-1, -1)  # (prefix length, layer)
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best[0]:
                best = (len(p), i)
    assert best[1] >= 0, f"{module} is in no layer: add it to LAYERS and docs/architecture.md"
    return best[1]


def imports_of(module: str) -> set[str]:
    """Project modules ``module`` imports, at the top or inside a function."""
    tree = tree_of(module)
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("vllm_ledger"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not node.module.startswith("vllm_ledger"):
                continue
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                out.add(sub if sub in MODULES else node.module)
    out.discard(module)
    return {m for m in out if m in MODULES}


GRAPH = {m: imports_of(m) for m in MODULES}


def test_every_module_has_a_layer() -> None:
    for m in MODULES:
        layer_of(m)


def test_no_module_imports_from_a_layer_above() -> None:
    upward = [
        f"{m} (layer {layer_of(m)}) imports {d} (layer {layer_of(d)})"
        for m, deps in sorted(GRAPH.items())
        for d in sorted(deps)
        if layer_of(d) > layer_of(m) and d != "vllm_ledger"
    ]
    assert upward == []


# Floors inside the layer of consumers (docs/architecture.md draws them), bottom to top: the
# models over the read side, the renderers over them, the consumers that render, the notifier
# over the bot, and the deployment files that name them all.
FLOORS: tuple[tuple[str, ...], ...] = (
    (
        "vllm_ledger.plan",
        "vllm_ledger.background",
        "vllm_ledger.maintenance",
        "vllm_ledger.enforcer",
    ),
    ("vllm_ledger.formats", "vllm_ledger.plugin", "vllm_ledger.middleware"),
    ("vllm_ledger.observe", "vllm_ledger.bot", "vllm_ledger.doctor"),
    ("vllm_ledger.notify",),
    ("vllm_ledger.deploy",),
)


def floor_of(module: str) -> int | None:
    for i, prefixes in enumerate(FLOORS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    return None


def test_every_module_of_the_consumers_layer_has_a_floor() -> None:
    consumers = layer_of("vllm_ledger.formats")
    assert [m for m in MODULES if layer_of(m) == consumers and floor_of(m) is None] == []


def test_no_consumer_imports_from_a_floor_above() -> None:
    upward = [
        f"{m} (floor {floor_of(m)}) imports {d} (floor {floor_of(d)})"
        for m, deps in sorted(GRAPH.items())
        if floor_of(m) is not None
        for d in sorted(deps)
        if (floor_of(d) or 0) > (floor_of(m) or 0)
    ]
    assert upward == []


def test_the_import_graph_has_no_circle() -> None:
    state: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(GRAPH[m]):
            if d == "vllm_ledger":  # the package's lazy __init__ imports nothing eagerly
                continue
            if state.get(d) == 1:
                circles.append([*stack[stack.index(d) :], d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(GRAPH):
        if m not in state:
            visit(m)
    assert circles == []


def test_the_write_side_imports_nothing_from_the_read_side() -> None:
    for m, deps in GRAPH.items():
        if layer_of(m) in WRITE_SIDE:
            assert {d for d in deps if layer_of(d) > max(WRITE_SIDE)} == set(), m


def test_the_write_side_uses_only_the_standard_library() -> None:
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    for m in MODULES:
        if layer_of(m) not in WRITE_SIDE:
            continue
        for node in ast.walk(tree_of(m)):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if m == "vllm_ledger.write.plugin" and top == "vllm":
                    continue  # the adapter: the one module that touches vLLM
                assert top in stdlib or top == "vllm_ledger", f"{m} imports {name}"


RUN_A_RECORDER = r"""
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import vllm_ledger.plugin  # the entry point vLLM loads
import vllm_ledger.middleware  # the attribution middleware vLLM loads beside it
from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.write.recorder import Recorder
t = [1_800_000_000.0]
rec = Recorder(Path(sys.argv[2]), WriterIdentity("run-a", 0, 1, pid=1,
               instance=InstanceInfo(("m",), 8000, "h", "0.32.0")), clock=lambda: t[0])
rec.pump()
rec.submit((t[0], 0, 5, 1, 0, ()))
t[0] += 2
rec.pump(final=True)
def read_side():
    return sorted(m for m in sys.modules if m.startswith("vllm_ledger.read"))
before = read_side()
from vllm_ledger import background  # what rank 0 imports to start its pass (in a child)
rank0 = read_side()
from vllm_ledger import maintenance  # what the child imports
child = read_side()
print(json.dumps({"recorder": before, "rank0": rank0, "child": child}))
"""


def test_the_plugin_the_middleware_and_a_recorder_import_no_read_side_module(
    tmp_path: Path,
) -> None:
    pytest.importorskip("vllm")
    out = subprocess.run(
        [sys.executable, "-c", RUN_A_RECORDER, str(PKG.parent), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["recorder"] == []
    # Rank 0 only spawns the maintenance pass: no read-side module inside vLLM at all.
    assert got["rank0"] == []
    # The pass itself, in its own process (docs/architecture.md names it), needs these and
    # no more: no coverage, report, timeline or LedgerSet (a run's own coverage, pure, is what
    # the summary records of a finished run).
    assert got["child"] == [
        "vllm_ledger.read",
        "vllm_ledger.read.discovery",
        "vllm_ledger.read.intervals",
        "vllm_ledger.read.open_ledger",
        "vllm_ledger.read.run_coverage",
        "vllm_ledger.read.snapshot",
        "vllm_ledger.read.summary",
        "vllm_ledger.read.summary_entry",
        "vllm_ledger.read.summary_run",
        "vllm_ledger.read.values",
        "vllm_ledger.read.windows",
        "vllm_ledger.read.writer_state",
    ]


def test_every_exception_of_the_package_is_in_the_one_tree() -> None:
    import importlib
    import inspect

    from vllm_ledger.errors import LedgerError

    outside = []
    for name in sorted(MODULES):
        if name.endswith("__main__"):
            continue
        mod = importlib.import_module(name)
        for obj_name, obj in vars(mod).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == name
                and not issubclass(obj, LedgerError)
            ):
                outside.append(f"{name}.{obj_name}")
    assert outside == []


def test_the_http_package_imports_only_the_standard_library_and_errors() -> None:
    """``vllm_ledger.http`` (the one client, the one server) sits on the ground floor."""
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    found = []
    for m in MODULES:
        if m != "vllm_ledger.http" and not m.startswith("vllm_ledger.http."):
            continue
        for node in ast.walk(tree_of(m)):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                ours = name == "vllm_ledger.errors" or name.startswith("vllm_ledger.http")
                if name.split(".")[0] not in stdlib and not ours:
                    found.append(f"{m} imports {name}")
    assert found == []


UNIT = PKG.parent / "tests" / "unit"


def _unit_names(path: Path) -> list[str]:
    """The modules (package-relative, ``read.summary``) a unit file's name may name, the longest
    first: ``tests/unit/read/test_summary_run.py`` names ``read.summary_run`` or, with an
    aspect, ``read.summary``."""
    rel = path.relative_to(UNIT)
    package = ".".join(rel.parent.parts)
    words = rel.stem.removeprefix("test_").split("_")
    return [
        ".".join(p for p in (package, "_".join(words[:i])) if p) for i in range(len(words), 0, -1)
    ]


def test_unit_tests_are_laid_out_like_the_package() -> None:
    """``tests/unit/<package>/test_<module>[_<aspect>].py`` tests ``vllm_ledger/<package>/
    <module>.py`` (or a package's ``__init__``): a unit module names the module it covers."""
    modules = {".".join(m.split(".")[1:]) for m in MODULES}
    stray = [
        str(path.relative_to(UNIT))
        for path in sorted(UNIT.rglob("test_*.py"))
        if not set(_unit_names(path)) & modules
    ]
    assert stray == []


# Modules with no unit file of their own, each with its reason (a shim, say). None now.
NO_UNIT_FILE: dict[str, str] = {
    # Both subclass vLLM's AggregateStatLoggerBase: importing either imports vLLM (about 10 s of
    # CPU a process), which the fast unit lane does not pay. Their tests: tests/test_plugin.py,
    # tests/test_plugin_entry.py, tests/test_plugin_shapes.py.
    "plugin": "imports vLLM",
    "write.plugin": "imports vLLM",
}


def test_every_module_has_its_unit_test_file() -> None:
    """Each ``vllm_ledger/<package>/<module>.py`` has ``tests/unit/<package>/test_<module>.py``
    (or ``test_<module>_<aspect>.py``): a unit file covers the longest module its name names,
    so ``test_summary_entry.py`` is ``read/summary_entry.py``'s and not ``read/summary.py``'s;
    a private module keeps its underscore (``commands/_times.py``: ``test__times.py``). A
    package's ``__init__`` and ``__main__`` are not held to it. ``NO_UNIT_FILE`` names the
    modules let off, each with its reason, and only modules that still lack one."""
    modules = {
        ".".join(m.split(".")[1:]): path
        for m, path in MODULES.items()
        if path.stem not in ("__init__", "__main__")
    }
    covered = {
        next(name for name in _unit_names(path) if name in modules)
        for path in UNIT.rglob("test_*.py")
        if set(_unit_names(path)) & set(modules)
    }
    missing = sorted(
        str(path.relative_to(PKG.parent))
        for name, path in modules.items()
        if name not in covered and name not in NO_UNIT_FILE
    )
    assert missing == [], "give each its tests/unit file (or a reason in NO_UNIT_FILE)"
    assert sorted(NO_UNIT_FILE) == sorted(set(NO_UNIT_FILE) & set(modules) - covered)


# ---- one home each: the aligner, the CSV writer, the HTTP client, the write transaction ----


def _where(module: str) -> str:
    return str(MODULES[module].relative_to(PKG.parent))


# A width in a format spec (``{x:<12}``, ``{x:>{w}}``); a zero-filled number (``{n:02d}``,
# ``{n:016x}``) is a number's digits, not a column, and is not one.
_WIDTH_SPEC = re.compile(r"^(?:.?[<>^=])?[+\- ]?z?#?(?P<zero>0)?(?:[1-9]|\{)")
# ``"%-12s" % x``, ``"%8d" % n``: a width in printf style (``%%`` and ``%08d`` are not one).
_PRINTF_WIDTH = re.compile(r"(?<!%)%(?:\([^)]*\))?[-+ #]*[1-9]\d*[sdifeEgGxXr]")
# ``"{:<12}".format(x)``, ``"{0:>8}"``: a width in a replacement field of ``str.format``.
_FORMAT_FIELD_WIDTH = re.compile(r"(?<!\{)\{[^{}:]*:(?:.?[<>^=])?[+\- ]?z?#?[1-9]")

# Fixed widths outside the aligner, each with its reason.
WIDTHS_ALLOWED = {
    # The aligner itself.
    "vllm_ledger.formats.table",
    # A progress bar's label (``concurrency  8``), kept three wide so the bar does not jump;
    # no table, and plan/ sits below formats/ (it may not import the aligner).
    "vllm_ledger.plan.ramp_load",
    # The .seq marker's record, padded to a fixed length on disk so its writer can write each
    # commit's record over the last in place; a file format, not a column.
    "vllm_ledger.format.smallfiles",
}


def _fixed_widths(module: str) -> list[str]:
    found = []
    for node in ast.walk(tree_of(module)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("ljust", "rjust", "center")
        ):
            found.append(f"{_where(module)}:{node.lineno}: .{node.func.attr}()")
        elif isinstance(node, ast.FormattedValue) and isinstance(node.format_spec, ast.JoinedStr):
            spec = "".join(
                str(v.value) if isinstance(v, ast.Constant) else "{"
                for v in node.format_spec.values
            )
            m = _WIDTH_SPEC.match(spec)
            if m and not m["zero"]:
                found.append(f"{_where(module)}:{node.lineno}: {{…:{spec}}}")
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
            and _PRINTF_WIDTH.search(node.left.value)
        ):
            found.append(f"{_where(module)}:{node.lineno}: {node.left.value!r} % …")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"
            and isinstance(node.func.value, ast.Constant)
            and isinstance(node.func.value.value, str)
            and _FORMAT_FIELD_WIDTH.search(node.func.value.value)
        ):
            found.append(f"{_where(module)}:{node.lineno}: {node.func.value.value!r}.format(…)")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "format"
            and len(node.args) == 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and (m := _WIDTH_SPEC.match(node.args[1].value))
            and not m["zero"]
        ):
            found.append(f"{_where(module)}:{node.lineno}: format(…, {node.args[1].value!r})")
    return found


def test_columns_are_lined_up_by_the_one_aligner() -> None:
    """Terminal tables line up through ``formats/table.py`` (``aligned``, or ``pad`` for a fixed
    width): display widths, so a CJK name takes its two columns. No hand-made widths."""
    found = [f for m in sorted(MODULES) if m not in WIDTHS_ALLOWED for f in _fixed_widths(m)]
    assert found == []


def _imported_names(module: str) -> set[str]:
    """Every module name ``module`` imports (any package), at the top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(tree_of(module)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def _importers(wanted: tuple[str, ...]) -> set[str]:
    return {
        m
        for m in MODULES
        if any(n == w or n.startswith(w + ".") for n in _imported_names(m) for w in wanted)
    }


def test_csv_is_written_by_the_one_writer() -> None:
    """``formats/csvout.py`` is the one CSV dialect: formula-safe cells, one line ending."""
    assert _importers(("csv",)) == {"vllm_ledger.formats.csvout"}


HTTP_LIBRARIES = (
    "http.client",
    "http.server",
    "urllib.request",
    "httpx",
    "requests",
    "aiohttp",
    "urllib3",
)
HTTP_ALLOWED = {
    # The load ramp's completions: TTFT is the first chunk's time, so each answer is read as
    # it streams, which the one client (an answer whole, within a deadline) does not do.
    "vllm_ledger.plan.ramp_load",
}


def test_http_goes_through_the_one_client_and_server() -> None:
    """``vllm_ledger.http`` holds the one client (deadline, byte cap, redirects) and server."""
    outside = {
        m
        for m in _importers(HTTP_LIBRARIES)
        if m != "vllm_ledger.http" and not m.startswith("vllm_ledger.http.")
    }
    assert outside == HTTP_ALLOWED


# A file written whole (a temporary file, then a rename over the name) has two homes: what a
# user names on the command line (``outfile.py``: its target checked, before and after) and
# the small files beside the ledgers (``format/smallfiles.write_whole``: the summary, the
# markers, the over-budget list). The bundle swaps a whole folder in (``deploy/bundle.py``).
RENAME_ALLOWED = {
    "vllm_ledger.outfile": {"os.replace", "tempfile.mkstemp"},
    "vllm_ledger.format.smallfiles": {"os.replace"},
    "vllm_ledger.deploy.bundle": {"os.replace"},
}
_RENAMES = {"os.replace", "os.rename", "tempfile.mkstemp", "tempfile.NamedTemporaryFile"}


def test_a_file_is_written_whole_in_one_place() -> None:
    """No module writes its own temporary file and renames it: it calls one of the two homes."""
    found: dict[str, set[str]] = {}
    for m in MODULES:
        for node in ast.walk(tree_of(m)):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and f"{node.value.id}.{node.attr}" in _RENAMES
            ):
                found.setdefault(m, set()).add(f"{node.value.id}.{node.attr}")
    assert found == RENAME_ALLOWED


# SQL that opens a transaction: ``BEGIN``, ``BEGIN IMMEDIATE``, ``BEGIN EXCLUSIVE``, ...
_BEGIN = re.compile(r"^\s*BEGIN\b", re.IGNORECASE)
# Where one is opened: ``format/schema.transaction`` is the one write transaction (BEGIN
# IMMEDIATE, COMMIT, ROLLBACK on error), which format/writes.py, the migrations beside it and
# notify/store.py call; ``format/connect.py`` opens a reader's snapshot (a deferred BEGIN that
# writes nothing, held until the reader closes).


def test_write_transactions_go_through_the_one_transaction() -> None:
    """A write transaction is ``format/schema.transaction``; SQL that opens one is nowhere else."""
    found: dict[str, set[str]] = {}
    for m in MODULES:
        for node in ast.walk(tree_of(m)):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and _BEGIN.match(node.value)
            ):
                found.setdefault(m, set()).add(" ".join(node.value.split()).upper())
    assert found == {
        "vllm_ledger.format.schema": {"BEGIN IMMEDIATE"},
        "vllm_ledger.format.connect": {"BEGIN"},
    }


# The served names as one label: ``format/identity.model_label`` (``",".join(names) or "?"``).
MODEL_LABEL_ALLOWED = {"vllm_ledger.format.identity"}


def _spells_the_model_label(node: ast.AST) -> bool:
    if not (isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or)):
        return False
    first, *rest = node.values
    return (
        isinstance(first, ast.Call)
        and isinstance(first.func, ast.Attribute)
        and first.func.attr == "join"
        and isinstance(first.func.value, ast.Constant)
        and first.func.value.value == ","
        and any(isinstance(v, ast.Constant) and v.value == "?" for v in rest)
    )


# An IPv6 address in brackets: ``http/urls.url_host`` (``f"[{h}]" if ":" in h else h``).
def _brackets_an_address(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.IfExp)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Constant)
        and node.test.left.value == ":"
        and isinstance(node.test.ops[0], ast.In)
        and isinstance(node.body, ast.JoinedStr)
        and isinstance(node.body.values[0], ast.Constant)
        and str(node.body.values[0].value).startswith("[")
    )


def test_the_model_label_and_the_url_host_are_spelled_once() -> None:
    label, brackets = set(), set()
    for m in MODULES:
        for node in ast.walk(tree_of(m)):
            if _spells_the_model_label(node):
                label.add(m)
            if _brackets_an_address(node):
                brackets.add(m)
    assert label == MODEL_LABEL_ALLOWED
    assert brackets == {"vllm_ledger.http.urls"}


# The length of a minute, an hour, a day or a week as a named constant: ``units.py`` only.
_CLOCK_CONSTANT = re.compile(r"(SECONDS_PER_[A-Z]+|MINUTE|HOUR|DAY|WEEK)S?(_S)?")
_CLOCK_SIZES = {60, 3600, 86400, 604800}


def test_the_length_of_an_hour_and_a_day_is_named_once() -> None:
    found = set()
    for m in MODULES:
        for node in tree_of(m).body:
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
                continue
            target = node.targets[0]
            if not isinstance(target, ast.Name) or not _CLOCK_CONSTANT.fullmatch(target.id):
                continue
            if isinstance(node.value, ast.Constant) and node.value.value in _CLOCK_SIZES:
                found.add(f"{m}.{target.id}")
    assert found == {
        "vllm_ledger.units.SECONDS_PER_MINUTE",
        "vllm_ledger.units.SECONDS_PER_HOUR",
        "vllm_ledger.units.SECONDS_PER_DAY",
    }


# What imports vLLM (about 10 s of CPU a process): not in the fast unit lane, at any depth.
_IMPORTS_VLLM = ("vllm", "vllm_ledger.plugin", "vllm_ledger.write.plugin")


def _names_in_import(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    return []


def test_the_unit_lane_never_imports_vllm() -> None:
    found = [
        f"{path.relative_to(UNIT)}: {name}"
        for path in sorted(UNIT.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        for name in _names_in_import(node)
        if any(name == v or name.startswith(v + ".") for v in _IMPORTS_VLLM)
    ]
    assert found == []
