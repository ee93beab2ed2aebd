"""Text from disk or from a remote, made safe for a terminal. Pure.

Host names, model names, run ids, paths and error details come from files anyone with write
access to a ledger folder could have edited. Printed raw, an escape sequence (``\\x1b[2J``), an
OSC title, a bidi override or a newline would act on the operator's terminal or forge lines of
the report. ``printable`` shows every such character visibly instead: ``\\x1b``, ``\\u202e``.
"""

from __future__ import annotations

import unicodedata

# Control (Cc), format (Cf: bidi overrides, zero-width marks), line and paragraph separators.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn"})


def printable(text: object) -> str:
    """``text`` with every control, format and separator character written as an escape."""
    s = str(text)
    if s.isprintable():  # the common case: nothing to do (no control or format character)
        return s
    out = []
    for ch in s:
        if unicodedata.category(ch) in _UNSAFE_CATEGORIES:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)
