"""deploy/imageref.py: the image-reference grammar, its parts, and how each refusal reads."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vllm_ledger.deploy.imageref import (
    REFERENCE_PATTERN,
    Reference,
    reference_problem,
    split_reference,
)

SHA = "sha256:" + "0123456789abcdef" * 4
GIVE = "give [REGISTRY[:PORT]/]NAME[:TAG][@sha256:HEX], e.g. vllm/vllm-openai:v0.32.0"

VALID = [
    "vllm/vllm-openai:v0.32.0",
    "registry.example:5000/ml/vllm-openai:v0.32.0",  # a registry with a port
    f"vllm/vllm-openai@{SHA}",  # a digest
    f"registry.example:5000/vllm/vllm-openai:v0.32.0@{SHA}",  # a tag and a digest
    "localhost/vllm-openai",  # localhost as the registry
    "localhost:5000/vllm:nightly",
    "ubuntu",  # a library name, no namespace, no tag
    "vllm-openai:latest",
    "[::1]:5000/vllm/vllm-openai:v1",  # an IPv6 registry
    "Registry.Example/vllm:v1",  # a registry host may have capitals
    "a__b.c---d/e_f:TAG_.-1",
    "x:" + "t" * 128,  # the longest tag
    "x@sha512:" + "ab" * 64,
    "n" * 255,  # the longest name
]


@pytest.mark.parametrize("value", VALID)
def test_valid_references_are_accepted(value: str) -> None:
    assert reference_problem(value) is None
    assert re.fullmatch(REFERENCE_PATTERN, value)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("vllm/VLLM-openai:v0.32.0", "the repository name must be lowercase"),
        ("VLLM", "the repository name must be lowercase"),
        ("vllm/vllm openai:v0.32.0", "it holds a space or a line break"),
        ("vllm/vllm-openai:v0.32.0\nRUN touch /pwned", "it holds a space or a line break"),
        ("vllm/vllm-openai:v0.32.0\t", "it holds a space or a line break"),
        ("vllm/vllm-openai:", "an empty tag after ':'"),
        ("vllm/vllm-openai:" + "t" * 129, "the tag is 129 characters; at most 128"),
        ("vllm/vllm-openai:-x", "a tag is letters, digits, '_', '.' and '-', not first '.' or '-'"),
        (
            "vllm/vllm-openai:v1.é",
            "a tag is letters, digits, '_', '.' and '-', not first '.' or '-'",
        ),
        ("n" * 256, "the name is 256 characters; at most 255"),
        (
            "-x",
            "the name is lowercase words joined by '.', '_', '__' or '-', in parts split by '/'",
        ),
        (
            "vllm//x",
            "the name is lowercase words joined by '.', '_', '__' or '-', in parts split by '/'",
        ),
        (
            "vllm/x-",
            "the name is lowercase words joined by '.', '_', '__' or '-', in parts split by '/'",
        ),
        ("vllm/x@", "a digest is ALGORITHM:HEX after '@'"),
        ("vllm/x@sha256:abc", "a digest is ALGORITHM:HEX after '@'"),
        ("vllm/x@a@b", "a digest is ALGORITHM:HEX after '@'"),
        (
            "vllm/x@md5:" + "a" * 32,
            "a digest is sha256: and 64 lowercase hex digits (or sha384: 96, sha512: 128)",
        ),
        (
            "vllm/x@sha256:" + "A" * 64,
            "a digest is sha256: and 64 lowercase hex digits (or sha384: 96, sha512: 128)",
        ),
        (
            "vllm/x@sha256:" + "a" * 63,
            "a digest is sha256: and 64 lowercase hex digits (or sha384: 96, sha512: 128)",
        ),
        ("a" * 64, "64 hex digits name an image ID, not an image"),
    ],
)
def test_invalid_references_are_refused_saying_why(value: str, why: str) -> None:
    assert reference_problem(value) == f"is not an image reference ({why}): {GIVE}"


def test_split_reference() -> None:
    assert split_reference("vllm/vllm-openai:v1") == Reference("vllm/vllm-openai", "v1", None)
    assert split_reference("host:5000/x") == Reference("host:5000/x", None, None)
    assert split_reference(f"host:5000/x:t@{SHA}") == Reference("host:5000/x", "t", SHA)
    assert split_reference("x@") == Reference("x", None, "")
    assert split_reference("x:") == Reference("x", "", None)
    assert split_reference("h:1/a/b:t").last_component == "b"


def test_a_long_value_is_refused_at_once() -> None:
    """A part over its length is refused before the grammar runs over the whole value."""
    assert "the name is 1000001 characters" in str(reference_problem("a-" * 500_000 + "!"))


@given(st.text(max_size=40))
def test_an_accepted_value_is_one_word_the_pattern_matches(value: str) -> None:
    """Whatever the text, an accepted one is a single word of the grammar's alphabet: nothing a
    Dockerfile or a shell would read as more than the image."""
    if reference_problem(value) is None:
        assert re.fullmatch(REFERENCE_PATTERN, value)
        assert re.fullmatch(r"[A-Za-z0-9._:/@\[\]-]+", value)
        ref = split_reference(value)
        rejoined = ref.name + (f":{ref.tag}" if ref.tag is not None else "")
        assert rejoined + (f"@{ref.digest}" if ref.digest is not None else "") == value


_WORD = st.from_regex(r"[a-z0-9]{1,6}", fullmatch=True)
_SEP = st.sampled_from([".", "_", "__", "-", "---"])
_COMPONENT = st.builds(
    lambda first, rest: first + "".join(sep + word for sep, word in rest),
    _WORD,
    st.lists(st.tuples(_SEP, _WORD), max_size=3),
)
_DOMAIN = st.one_of(
    st.just(""),
    st.from_regex(
        r"[A-Za-z0-9]([A-Za-z0-9-]{0,8}[A-Za-z0-9])?(\.[a-z0-9]{1,5}){0,2}", fullmatch=True
    ),
    st.just("[::1]"),
).flatmap(lambda d: st.sampled_from([d, f"{d}:5000"]) if d else st.just(""))


@st.composite
def _references(draw: st.DrawFn) -> str:
    """References built part by part from the grammar in deploy/imageref.py's docstring."""
    domain = draw(_DOMAIN)
    path = "/".join(draw(st.lists(_COMPONENT, min_size=1, max_size=3)))
    value = f"{domain}/{path}" if domain else path
    if draw(st.booleans()):
        value += ":" + draw(st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}", fullmatch=True))
    if draw(st.booleans()):
        value += "@" + draw(st.sampled_from(["sha256:" + "a1" * 32, "sha512:" + "f0" * 64]))
    return value


@given(_references())
def test_every_reference_of_the_grammar_is_accepted(value: str) -> None:
    assert re.fullmatch(REFERENCE_PATTERN, value)
    if re.fullmatch("[a-f0-9]{64}", value) is None:
        assert reference_problem(value) is None, value
