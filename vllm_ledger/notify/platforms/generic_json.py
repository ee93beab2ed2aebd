"""Any receiver of JSON: apprise's ``json://`` body, posted to the URL as given. Pure.

=======  ===========================================================================
body     ``{"version": "1.0", "title": "", "message": T, "attachments": [],
         "type": "info"}`` (what apprise's ``json://`` plugin sends)
success  2xx
sign     none
url      ``json://`` / ``jsons://`` are taken as ``http://`` / ``https://`` (apprise's
         names for them); the query is kept, apprise's URL options (``+header``,
         ``-param``, ``:field``, ``method``) are not read
inbound  none: send commands through a relay (``POST /command``)
=======  ===========================================================================

The module is not named ``json`` so that it never stands in for the standard library's.
"""

from __future__ import annotations

from typing import Any

from vllm_ledger.notify.platforms.base import Platform


def body(text: str) -> dict[str, Any]:
    return {"version": "1.0", "title": "", "message": text, "attachments": [], "type": "info"}


def url(configured: str) -> str:
    scheme, sep, rest = configured.partition("://")
    return {"json": "http", "jsons": "https"}.get(scheme.lower(), scheme) + sep + rest


JSON = Platform("json", body, url=url)

__all__ = ["JSON", "body", "url"]
