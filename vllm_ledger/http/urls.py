"""What the client asks and the command line takes as a URL, and a host as a URL writes it.
Standard library only.

* ``url_problem``: why a text is not an ``http://`` or ``https://`` URL of a host with a valid
  port (``None`` when it is one). The client refuses such a URL; ``commands/_values.url`` says
  the reason to the user.
* ``url_host``: a host as it stands before ``:PORT`` in a URL or an address, an IPv6 address
  in brackets (``[::1]:8000``).
* ``local_host``: where this machine reaches a server that listens on every address
  (``0.0.0.0`` -> ``127.0.0.1``, ``::`` -> ``::1``).
"""

from __future__ import annotations

import urllib.parse


def url_problem(url: str) -> str | None:
    """``is not a URL``, ``is not an http:// or https:// URL``, ``names no host``, or None."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError on a port out of range)
    except ValueError:
        return "is not a URL"
    if parts.scheme not in ("http", "https"):
        return "is not an http:// or https:// URL"
    if not parts.hostname:
        return "names no host"
    return None


def url_host(host: str) -> str:
    """``host`` as a URL writes it before ``:PORT``: an IPv6 address (a colon in it) in
    brackets, anything else as it is."""
    return f"[{host}]" if ":" in host else host


def local_host(listen_host: str) -> str:
    """The address to ask a server listening on ``listen_host`` at from this machine: the
    loopback for a wildcard (``0.0.0.0``, ``::``), the address itself otherwise."""
    return _LOOPBACK.get(listen_host, listen_host)


_LOOPBACK = {"0.0.0.0": "127.0.0.1", "::": "::1"}

__all__ = ["local_host", "url_host", "url_problem"]
