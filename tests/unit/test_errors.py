"""The one exception tree: drawn in errors.py's docstring, and the drawing is true.

(That every exception of the package derives from LedgerError is checked by walking every
module, in tests/test_architecture.py.)
"""

from __future__ import annotations

import errno
import inspect
import re

import pytest

from vllm_ledger import errors
from vllm_ledger.errors import (
    AnswerTooLarge,
    BadArgument,
    BadDeclaration,
    BadResponse,
    BadValues,
    ConfigError,
    DuplicateKey,
    FieldError,
    KeyNamesError,
    LedgerError,
    LedgerUnavailable,
    MissingExtra,
    NotARegularFile,
    RedirectRefused,
    RemoteError,
    RemoteTimeout,
    StatusParseError,
    TooManySteps,
)

CLASSES = {
    name: cls
    for name, cls in vars(errors).items()
    if inspect.isclass(cls) and issubclass(cls, LedgerError)
}

# one instance of each, built as the package builds them
EXAMPLES: dict[type[LedgerError], LedgerError] = {
    LedgerError: LedgerError("something went wrong"),
    BadArgument: BadArgument("--at 'x' is not a time", hint="give seconds"),
    BadDeclaration: BadDeclaration("until 1 is not after from 2"),
    TooManySteps: TooManySteps(43200, 5000, window="30d", step="1m"),
    ConfigError: ConfigError("mode: 'x' is not one of docker, bare", key="mode"),
    DuplicateKey: DuplicateKey("model"),
    FieldError: FieldError("target", "missing", hint="give the SSH alias or host name"),
    KeyNamesError: KeyNamesError("keys.json is not JSON"),
    MissingExtra: MissingExtra("PyYAML", "observability"),
    LedgerUnavailable: LedgerUnavailable("no ledger under /srv", ("/srv",)),
    RemoteError: RemoteError("cannot read http://h/metrics", "http://h/metrics"),
    StatusParseError: StatusParseError("not JSON"),
    RemoteTimeout: RemoteTimeout("http://h/metrics", 10.0, hint="is vLLM running there?"),
    AnswerTooLarge: AnswerTooLarge("http://h/metrics", 32 << 20),
    RedirectRefused: RedirectRefused(
        "http://h/metrics", "http://x/metrics", "redirects to another host ('x'): not followed"
    ),
    BadResponse: BadResponse(
        "http://h/metrics", "status_line", "did not answer with an HTTP/1.x status line"
    ),
    BadValues: BadValues("hourly: a negative count (-1)"),
    NotARegularFile: NotARegularFile(errno.EINVAL, "not a regular file", "/srv/x.sqlite"),
}


def drawn_tree() -> dict[str, tuple[str | None, str]]:
    """Class name -> (parent drawn above it, its description with continuation lines)."""
    doc = errors.__doc__ or ""
    block = doc.split("\n\n")[1]  # the drawing: the paragraph after the title
    out: dict[str, tuple[str | None, str]] = {}
    stack: list[tuple[int, str]] = []  # (column of the name, name)
    last = ""
    for line in block.splitlines():
        body = line.lstrip(" │├└─")
        word = body.split(" ", 1)[0]
        if not re.fullmatch(r"[A-Z]\w*", word):
            name, (parent, desc) = last, out[last]
            out[name] = (parent, f"{desc} {body.strip()}")
            continue
        col = len(line) - len(body)
        while stack and stack[-1][0] >= col:
            stack.pop()
        out[word] = (stack[-1][1] if stack else None, body[len(word) :].strip())
        stack.append((col, word))
        last = word
    return out


def test_the_drawing_names_every_class_under_its_parent() -> None:
    tree = drawn_tree()
    assert set(tree) == set(CLASSES)
    for name, (parent, _desc) in tree.items():
        cls = CLASSES[name]
        in_tree = [b for b in cls.__bases__ if issubclass(b, LedgerError)]
        assert [b.__name__ for b in in_tree] == ([parent] if parent else []), name
        assert (cls is LedgerError) == (parent is None)


def test_the_drawing_says_which_builtin_each_is_too() -> None:
    for name, (_parent, desc) in drawn_tree().items():
        cls = CLASSES[name]
        assert ("ValueError" in desc) == issubclass(cls, ValueError), name
        assert ("OSError" in desc) == issubclass(cls, OSError), name


def test_each_class_has_a_one_line_docstring_and_carries_what_it_draws() -> None:
    assert set(EXAMPLES) == set(CLASSES.values())
    for name, (_parent, desc) in drawn_tree().items():
        cls = CLASSES[name]
        doc = cls.__dict__.get("__doc__") or ""
        assert doc and "\n" not in doc and len(doc) <= 100, name
        example = EXAMPLES[cls]
        for attr in re.findall(r"\.([a-z]+)\b", desc):
            assert hasattr(example, attr), f"{name} draws .{attr}"
        assert isinstance(example.hint, str) and isinstance(example.what, str)


@pytest.mark.parametrize(
    ("exc", "line", "what", "hint"),
    [
        (
            BadArgument("--at 'x' is not a time", hint="give seconds"),
            "--at 'x' is not a time: give seconds",
            "--at 'x' is not a time",
            "give seconds",
        ),
        (BadArgument("plain: as before"), "plain: as before", "plain: as before", ""),
        (
            MissingExtra("PyYAML", "observability"),
            "this command needs PyYAML: pip install 'vllm-ledger[observability]'",
            "this command needs PyYAML",
            "pip install 'vllm-ledger[observability]'",
        ),
        (DuplicateKey("model"), "duplicate key 'model'", "duplicate key 'model'", ""),
        (
            NotARegularFile(errno.EINVAL, "not a regular file", "/x"),
            "[Errno 22] not a regular file: '/x'",
            "[Errno 22] not a regular file: '/x'",
            "",
        ),
    ],
)
def test_one_line_is_what_then_what_to_do(
    exc: LedgerError, line: str, what: str, hint: str
) -> None:
    assert (str(exc), exc.what, exc.hint) == (line, what, hint)


def test_the_carried_values() -> None:
    field = FieldError("code_dir", "'/a/../b' is not normalised", hint="write it as '/b'")
    assert (field.field, field.key, field.message) == (
        "code_dir",
        "code_dir",
        "'/a/../b' is not normalised: write it as '/b'",
    )
    assert DuplicateKey("model").key == "model"
    assert MissingExtra("PyYAML", "observability").extra == "observability"
    assert LedgerUnavailable("no ledger", ("/a", "/b")).roots == ("/a", "/b")
    assert RemoteError("cannot read", "http://h/metrics", hint="is vLLM up?").target == (
        "http://h/metrics"
    )
    late = EXAMPLES[RemoteTimeout]
    assert (str(late), late.target, late.seconds) == (  # type: ignore[attr-defined]
        "http://h/metrics did not answer within 10 s: is vLLM running there?",
        "http://h/metrics",
        10.0,
    )
    big = EXAMPLES[AnswerTooLarge]
    assert (str(big), big.limit) == (  # type: ignore[attr-defined]
        "http://h/metrics answered more than 32 MiB",
        32 << 20,
    )
    assert str(AnswerTooLarge("u", 1000)) == "u answered more than 1,000 bytes"
    assert EXAMPLES[RedirectRefused].location == "http://x/metrics"  # type: ignore[attr-defined]
    assert EXAMPLES[BadResponse].problem == "status_line"  # type: ignore[attr-defined]
    os_error = NotARegularFile(errno.EINVAL, "not a regular file", "/x")
    assert (os_error.errno, os_error.filename) == (errno.EINVAL, "/x")
