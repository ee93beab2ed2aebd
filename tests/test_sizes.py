"""Small rooms: every module at most MAX_MODULE_LINES lines and every function at most
MAX_FUNCTION_LINES, split by concept (docs/contributing.md, "Small rooms").

No module or function is over the limits today, and the exceptions below are empty. Where
one must be (a generated table, say), it is listed with the size it may not grow past and a
comment saying why, and leaves the list when it is split: a ratchet, not a licence.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREES = ("vllm_ledger", "bench", "devtools", "scripts")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80

# path -> the most lines it may have until it is split
MODULE_EXCEPTIONS: dict[str, int] = {}

# path::function -> the most lines it may have until it is split
FUNCTION_EXCEPTIONS: dict[str, int] = {}


def _modules() -> list[Path]:
    return sorted(p for tree in TREES for p in (ROOT / tree).rglob("*.py"))


def _sizes() -> tuple[dict[str, int], dict[str, int]]:
    modules: dict[str, int] = {}
    functions: dict[str, int] = {}
    for path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text()
        modules[rel] = len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno is not None
                name = f"{rel}::{node.name}"
                lines = node.end_lineno - node.lineno + 1
                functions[name] = max(lines, functions.get(name, 0))
    return modules, functions


def _over(sizes: dict[str, int], limit: int, exceptions: dict[str, int]) -> list[str]:
    return [
        f"{name}: {n} lines (limit {exceptions.get(name, limit)})"
        for name, n in sorted(sizes.items())
        if n > exceptions.get(name, limit)
    ]


def test_every_module_and_function_within_its_limit() -> None:
    modules, functions = _sizes()
    over = [
        *_over(modules, MAX_MODULE_LINES, MODULE_EXCEPTIONS),
        *_over(functions, MAX_FUNCTION_LINES, FUNCTION_EXCEPTIONS),
    ]
    assert not over, "split by concept (docs/contributing.md, 'Small rooms'):\n" + "\n".join(over)


def test_no_exception_outlives_its_reason() -> None:
    """An exception whose module or function is gone or back under the limit leaves the list,
    so the list stays the true list of what is still to split."""
    modules, functions = _sizes()
    stale = [
        *(m for m in MODULE_EXCEPTIONS if modules.get(m, 0) <= MAX_MODULE_LINES),
        *(f for f in FUNCTION_EXCEPTIONS if functions.get(f, 0) <= MAX_FUNCTION_LINES),
    ]
    assert not stale, "remove from the exceptions: " + ", ".join(stale)
