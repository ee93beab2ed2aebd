"""A small YAML writer for the kubernetes manifests' values (dicts, lists, strings, numbers,
booleans), so no PyYAML is needed to render: keys are fixed words or quoted, every string a JSON
string (JSON's double-quoted strings are YAML's), a many-line text a literal block. Pure.
"""

from __future__ import annotations

import json
import re
from typing import Any

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
_YAML_WORDS = {"y", "n", "yes", "no", "true", "false", "on", "off", "null"}


def _quote(text: str) -> str:
    """A YAML double-quoted string: JSON's, with what YAML may not hold raw escaped too."""
    return "".join(
        c
        if c.isprintable() or c in "\t"
        else (f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}")
        for c in json.dumps(text, ensure_ascii=False)
    )


def _key(key: str) -> str:
    if _PLAIN_KEY.fullmatch(key) and key.lower() not in _YAML_WORDS:
        return key
    return _quote(key)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return _quote(value)
    raise TypeError(f"no YAML for {type(value).__name__}")


def _block(value: Any) -> bool:
    """A string written as a literal block: many lines, one final newline, nothing a block
    would change (tabs, trailing blanks, a leading space, unprintable characters)."""
    if not isinstance(value, str) or "\n" not in value.rstrip("\n"):
        return False
    if not value.endswith("\n") or value.endswith("\n\n") or value.startswith(" "):
        return False
    return all(line == line.rstrip() and line.isprintable() for line in value.split("\n"))


def to_yaml(value: Any, indent: int = 0) -> list[str]:
    """``value`` (dicts, lists, strings, numbers, booleans) as YAML lines."""
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return [pad + "{}"]
        out: list[str] = []
        for k, v in value.items():
            out += _entry(pad + _key(k) + ":", v, indent)
        return out
    if isinstance(value, list):
        if not value:
            return [pad + "[]"]
        out = []
        for item in value:
            if isinstance(item, (dict, list)) and item:
                lines = to_yaml(item, indent + 2)
                out += [pad + "- " + lines[0][indent + 2 :], *lines[1:]]
            else:
                out += _entry(pad + "-", item, indent)
        return out
    return [pad + _scalar(value)]


def _entry(head: str, v: Any, indent: int) -> list[str]:
    if isinstance(v, dict) and v:
        return [head, *to_yaml(v, indent + 2)]
    if isinstance(v, list) and v:
        return [head, *to_yaml(v, indent)]
    if _block(v):
        body = " " * (indent + 2)
        return [head + " |", *[(body + line).rstrip() for line in v.rstrip("\n").split("\n")]]
    return [f"{head} {to_yaml(v)[0]}"]
