"""Which redirects the client follows (``http/client.py``): at most the number the caller
allows, each only to the same scheme, host and port, and a POST only through 307 and 308 (its
body sent on). Any other is ``RedirectRefused``, naming the host it pointed to and nothing else
of what the remote sent.
"""

from __future__ import annotations

import urllib.parse

from vllm_ledger.errors import RedirectRefused

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of ``url``, the port its scheme's default where none is given."""
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme)


def next_url(
    url: str, current: str, location: str, *, method: str, status: int, hop: int, redirects: int
) -> str:
    """The URL a redirect from ``current`` to ``location`` asks next, or ``RedirectRefused``
    (naming ``url``, the one the caller gave): to another origin, a POST through anything but
    307 or 308, or one more than ``redirects`` (``hop`` counts from 0)."""
    following = urllib.parse.urljoin(current, location.strip())
    if origin(following) != origin(current):
        shown = urllib.parse.urlsplit(following).netloc.rpartition("@")[2][:100]
        raise RedirectRefused(
            url,
            following,
            f"redirects to another host ({shown!r}): not followed",
            hint="give the URL that answers without leaving its host",
        )
    if method == "POST" and status not in (307, 308):
        raise RedirectRefused(
            url,
            following,
            f"answered a POST with HTTP {status}: the body would not be sent on",
            hint="give the URL that answers without a redirect",
        )
    if hop == redirects:
        raise RedirectRefused(
            url,
            following,
            f"redirected more than {redirects} times",
            hint="give the URL that answers without a redirect",
        )
    return following


__all__ = ["REDIRECT_STATUSES", "next_url", "origin"]
