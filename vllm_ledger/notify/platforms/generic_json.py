"""Any receiver of JSON: apprise's ``json://`` body, posted to the URL as given. Pure.

=======  ===========================================================================
body     ``{"version": "1.0", "title": "", "message": T, "attachments": [],
         "type": "info"}`` (what apprise's ``json://`` plugin sends), a word joiner
         after every ``<`` of T and inside ``](`` / ``][``
success  2xx
sign     none
url      ``json://`` / ``jsons://`` are taken as ``http://`` / ``https://`` (apprise's
         names for them); the query is kept, apprise's URL options (``+header``,
         ``-param``, ``:field``, ``method``) are not read
inbound  none: send commands through a relay (``POST /command``)
=======  ===========================================================================

The module is not named ``json`` so that it never stands in for the standard library's.

Nothing is a mention to a JSON receiver, so ``@`` is left as it is; a receiver that renders the
message as HTML or markdown still gets no link out of it (``<\u2060a href>``,
``[text]\u2060(url)``): links stay text.
"""

from __future__ import annotations

from typing import Any

from vllm_ledger.notify.platforms.base import Platform, joined

MARKUP = "<"  # followed by a word joiner: no HTML tag (markdown links: unlinked)


def body(text: str) -> dict[str, Any]:
    message = joined(text, MARKUP)
    return {"version": "1.0", "title": "", "message": message, "attachments": [], "type": "info"}


def url(configured: str) -> str:
    scheme, sep, rest = configured.partition("://")
    return {"json": "http", "jsons": "https"}.get(scheme.lower(), scheme) + sep + rest


JSON = Platform("json", body, url=url)

__all__ = ["JSON", "MARKUP", "body", "url"]
