"""Container image references (``vllm/vllm-openai:v0.32.0``): the grammar registries take. Pure.

The grammar is distribution/reference's, the package docker, containerd and Kubernetes parse
references with (https://github.com/distribution/reference/blob/main/regexp.go; the EBNF is in
reference.go)::

    reference       := name [ ":" tag ] [ "@" digest ]
    name            := [ domain "/" ] path-component [ "/" path-component ]*
    domain          := ( domain-name | "[" IPv6 "]" ) [ ":" port-number ]
    domain-name     := domain-component [ "." domain-component ]*
    domain-component:= /([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])/
    path-component  := /[a-z0-9]+/ [ separator /[a-z0-9]+/ ]*     ; separator: . _ __ -+
    tag             := /[\\w][\\w.-]{0,127}/
    digest          := algorithm ":" /[0-9a-fA-F]{32,}/            ; algorithm: sha256, ...

``REFERENCE_PATTERN`` is that grammar as one anchored pattern (ECMA-262 and Python alike: no
``\\w``, whose Python meaning is wider than Go's ASCII one; no POSIX classes), written into the
host file's schema. ``reference_problem`` is the one check a host file's ``image`` passes: the
grammar, then what the parsers refuse beyond it: a name over 255 characters (reference.go's
``RepositoryNameTotalLengthMax``; older releases counted the registry too, so it is counted
here), a digest other than sha256/sha384/sha512 in lowercase hex of their length
(opencontainers/go-digest, algorithm.go, which ``reference.Parse`` calls) and a bare 64-digit
hex name (an image ID: docker's ``ParseNormalizedNamed`` refuses it). Nothing else can pass, so
no line break, space or shell word reaches a Dockerfile's ``FROM`` or a ``docker run``.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_ALPHANUMERIC = "[a-z0-9]+"
_SEPARATOR = "(?:[._]|__|[-]+)"
_PATH_COMPONENT = f"{_ALPHANUMERIC}(?:{_SEPARATOR}{_ALPHANUMERIC})*"
_DOMAIN_COMPONENT = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN_NAME = f"{_DOMAIN_COMPONENT}(?:\\.{_DOMAIN_COMPONENT})*"
_IPV6 = "\\[(?:[a-fA-F0-9:]+)\\]"
_DOMAIN = f"(?:{_DOMAIN_NAME}|{_IPV6})(?::[0-9]+)?"
_NAME = f"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = "[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = "[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"

REFERENCE_PATTERN = f"^{_NAME}(?::{_TAG})?(?:@{_DIGEST})?$"
NAME_MAX_CHARS = 255  # reference.go: RepositoryNameTotalLengthMax
TAG_MAX_CHARS = 128
DIGEST_MAX_CHARS = len("sha512:") + 128
EXAMPLE = "vllm/vllm-openai:v0.32.0"
SHAPE = "[REGISTRY[:PORT]/]NAME[:TAG][@sha256:HEX]"

_REFERENCE = re.compile(REFERENCE_PATTERN)
_NAME_RE = re.compile(_NAME)
_TAG_RE = re.compile(_TAG)
_DIGEST_RE = re.compile(_DIGEST)
# go-digest's algorithms and the lowercase hex length of each
_KNOWN_DIGEST = re.compile("sha256:[a-f0-9]{64}|sha384:[a-f0-9]{96}|sha512:[a-f0-9]{128}")
_IMAGE_ID = re.compile("[a-f0-9]{64}")
_DIGEST_WORDS = "a digest is sha256: and 64 lowercase hex digits (or sha384: 96, sha512: 128)"


class Reference(NamedTuple):
    """A reference cut into its parts (``tag``/``digest``: None where absent)."""

    name: str
    tag: str | None
    digest: str | None

    @property
    def last_component(self) -> str:
        """The name's last path part: ``vllm-openai`` of ``vllm/vllm-openai``."""
        return self.name.rsplit("/", 1)[-1]


def split_reference(value: str) -> Reference:
    """``value`` cut where the grammar cuts it: the digest after ``@``, the tag after a ``:``
    that follows the last ``/`` (a ``:`` before it is the registry's port). No check."""
    rest, at, digest = value.partition("@")
    colon = rest.rfind(":")
    if colon > rest.rfind("/"):
        return Reference(rest[:colon], rest[colon + 1 :], digest if at else None)
    return Reference(rest, None, digest if at else None)


def reference_problem(value: str) -> str | None:
    """None if ``value`` is an image reference docker and the registries take, else what is
    wrong, worded to follow the value (``"x y" is not an image reference (...): give ...``)."""
    why = _length_problem(value)
    if why is None:
        why = _parser_problem(value) if _REFERENCE.fullmatch(value) else _grammar_problem(value)
    if why is None:
        return None
    return f"is not an image reference ({why}): give {SHAPE}, e.g. {EXAMPLE}"


def _length_problem(value: str) -> str | None:
    """A part over its length limit (checked first: the grammar then only sees short text)."""
    if any(c.isspace() for c in value):
        return "it holds a space or a line break"
    ref = split_reference(value)
    if len(ref.name) > NAME_MAX_CHARS:
        return f"the name is {len(ref.name)} characters; at most {NAME_MAX_CHARS}"
    if ref.tag is not None and len(ref.tag) > TAG_MAX_CHARS:
        return f"the tag is {len(ref.tag)} characters; at most {TAG_MAX_CHARS}"
    if ref.digest is not None and len(ref.digest) > DIGEST_MAX_CHARS:
        return _DIGEST_WORDS
    return None


def _grammar_problem(value: str) -> str:
    """Why ``value`` is outside the grammar, as the first part that breaks it."""
    ref = split_reference(value)
    if not _NAME_RE.fullmatch(ref.name):
        if _NAME_RE.fullmatch(ref.name.lower()):
            return "the repository name must be lowercase"
        return "the name is lowercase words joined by '.', '_', '__' or '-', in parts split by '/'"
    if ref.tag == "":
        return "an empty tag after ':'"
    if ref.tag is not None and not _TAG_RE.fullmatch(ref.tag):
        return "a tag is letters, digits, '_', '.' and '-', not first '.' or '-'"
    if ref.digest is not None and not _DIGEST_RE.fullmatch(ref.digest):
        return "a digest is ALGORITHM:HEX after '@'"
    return "it does not follow the grammar"  # e.g. a second '@'


def _parser_problem(value: str) -> str | None:
    """What docker refuses of a reference the grammar takes."""
    ref = split_reference(value)
    if ref.digest is not None and not _KNOWN_DIGEST.fullmatch(ref.digest):
        return _DIGEST_WORDS
    if _IMAGE_ID.fullmatch(value):
        return "64 hex digits name an image ID, not an image"
    return None


__all__ = [
    "EXAMPLE",
    "NAME_MAX_CHARS",
    "REFERENCE_PATTERN",
    "TAG_MAX_CHARS",
    "Reference",
    "reference_problem",
    "split_reference",
]
