"""Prometheus' HTTP API (instant queries: values or labelled series), for cost, advise,
baseline, doctor --stack and fleet: one query function, ``vector_answer``, and one fetch,
``http_get`` (the one HTTP client, ``vllm_ledger.http.client``, with a 30 s total deadline);
``first_answer`` asks a query and its fallbacks. ``fleet`` and ``doctor --stack`` also read the
scrape targets (``targets_answer``: ``/api/v1/targets``, which Prometheus, Thanos Query and
VictoriaMetrics single-node serve), ``fleet`` a label's values (``label_values_answer``).

Every failure is a ``RemoteError`` naming the URL and what to check. An answer the store calls
incomplete is not a failure: VictoriaMetrics cluster says ``"isPartial": true`` when some of
its storage nodes did not answer, Prometheus and Thanos put ``"warnings"`` beside ``data`` (a
store or a remote read that did not answer), newer Prometheus ``"infos"`` too. ``said_of``
reads them into a ``Said``, which every function here returns with its answer: no caller
takes the data without what the store said of it (``plan/partial.py`` says it in words).
"""

from __future__ import annotations

import math
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vllm_ledger.errors import AnswerTooLarge, ConfigError, RemoteError
from vllm_ledger.http import client
from vllm_ledger.http.logsafe import safe
from vllm_ledger.strictjson import loads

Fetch = Callable[[str], bytes]
Series = list[tuple[dict[str, str], float]]
MAX_ANSWER_BYTES = 16 * 1024 * 1024
DEADLINE_S = 30.0
MAX_SAID = 5  # warnings (and infos) kept of one answer; the rest are counted
MAX_SAID_CHARS = 200  # kept of each, then shown as printable ASCII


@dataclass(frozen=True)
class Said:
    """What a store said of one answer beside its ``data``: ``isPartial`` (``partial``), its
    ``warnings`` and ``infos``: the first ``MAX_SAID_CHARS`` characters of each text as
    printable ASCII (``http/logsafe.safe``: no text moves a terminal or forges a line), at most
    ``MAX_SAID`` of each (``warnings_left_out``: how many more warnings there were)."""

    partial: bool = False
    warnings: tuple[str, ...] = ()
    infos: tuple[str, ...] = ()
    warnings_left_out: int = 0

    @property
    def incomplete(self) -> bool:
        """Whether the store said the answer may lack series: partial, or with a warning (an
        info is not one)."""
        return self.partial or bool(self.warnings)


def _texts(value: object) -> tuple[tuple[str, ...], int]:
    """A ``warnings`` or ``infos`` value: a list of texts (a lone text or other value is one),
    made safe and cut; and how many past ``MAX_SAID`` were left out."""
    if value is None or value == [] or value == "":
        return (), 0
    items = value if isinstance(value, list) else [value]
    return tuple(safe(t, MAX_SAID_CHARS) for t in items[:MAX_SAID]), max(0, len(items) - MAX_SAID)


def said_of(doc: dict[str, Any]) -> Said:
    """What ``doc`` (a store's answer) says of itself. Any ``isPartial`` other than absent,
    ``null`` or ``false`` is partial: an answer is not taken for whole on a value it does not
    understand."""
    warnings, left_out = _texts(doc.get("warnings"))
    infos, _more = _texts(doc.get("infos"))
    partial = doc.get("isPartial") not in (None, False)
    return Said(partial, warnings, infos, left_out)


def http_get(
    url: str, *, max_bytes: int = MAX_ANSWER_BYTES, deadline_s: float = DEADLINE_S
) -> bytes:
    """The body at ``url`` (HTTP 200 only): at most ``max_bytes``, all of it (connection, headers,
    body) within ``deadline_s``, through the one HTTP client: a server that drips its headers or
    its body is cut at the deadline, whatever the pace. Redirects are followed on the same host
    only (a proxy in front of Prometheus may add a slash)."""
    hint = "check that Prometheus is up and not overloaded"
    try:
        answer = client.get(
            url,
            deadline_s=deadline_s,
            headers={"Accept": "application/json"},
            max_bytes=max_bytes,
            redirects=3,
            hint=hint,
        )
    except AnswerTooLarge as exc:
        raise AnswerTooLarge(url, max_bytes, hint="narrow the query") from exc
    if answer.status != 200:
        raise RemoteError(
            f"cannot read {url}: {answer.status_text}", url, hint="check the URL and that it is up"
        )
    return answer.body


def _data(base_url: str, url: str, asked: str, fetch: Fetch) -> tuple[Any, Said]:
    """The ``data`` of a ``{"status": "success", "data": ...}`` answer at ``url`` and what the
    store said of it, or a ``RemoteError`` naming ``asked``."""
    raw = fetch(url)
    try:
        doc = loads(raw, max_bytes=MAX_ANSWER_BYTES, what=f"{base_url}'s answer")
    except ConfigError as exc:
        raise RemoteError(
            f"{base_url} did not answer a Prometheus query with JSON it can trust: {exc.what}", url
        ) from exc
    if not isinstance(doc, dict):
        raise RemoteError(f"{base_url} did not answer a Prometheus query with an object", url)
    if doc.get("status") != "success":
        raise RemoteError(f"Prometheus at {base_url} refused {asked}: {doc.get('error')}", url)
    return doc.get("data"), said_of(doc)


def vector_answer(
    base_url: str,
    expr: str,
    at_ts: float | None = None,
    fetch: Fetch = http_get,
    *,
    keep_nan: bool = False,
) -> tuple[Series, Said]:
    """Each series of an instant vector (or scalar) query: its labels (``__name__`` included)
    and its value. An answer that is not ``{"status": "success", "data": {"result": [...]}}`` is
    a ``RemoteError``; a series without a ``metric`` object or a number ``value`` is skipped,
    and so is a NaN unless ``keep_nan`` (a caller that judges every value names it). A scalar is
    one series with no labels. With them, what the store said of its answer (``said_of``)."""
    params = {"query": expr}
    if at_ts is not None:
        params["time"] = f"{at_ts:.3f}"
    url = base_url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode(params)
    data, said = _data(base_url, url, repr(expr), fetch)
    result = data.get("result") if isinstance(data, dict) else None
    if isinstance(data, dict) and data.get("resultType") == "scalar":
        result = [{"metric": {}, "value": result}]
    if not isinstance(result, list):
        raise RemoteError(f"{base_url} answered {expr!r} without a result list", url)
    out: Series = []
    for item in result:
        try:
            metric = item["metric"]
            value = float(item["value"][1])
        except (KeyError, IndexError, TypeError, ValueError, OverflowError):
            continue
        if not isinstance(metric, dict) or (math.isnan(value) and not keep_nan):
            continue
        out.append(({str(k): str(v) for k, v in metric.items()}, value))
    return out, said


@dataclass(frozen=True)
class Target:
    """One active scrape target as ``/api/v1/targets`` lists it: its labels after relabelling
    (``job``, ``instance`` and any added), ``health`` (``up``, ``down``, ``unknown``: not
    scraped yet) and the last scrape's error (``""`` when none)."""

    labels: dict[str, str]
    health: str
    last_error: str


def targets_answer(base_url: str, fetch: Fetch = http_get) -> tuple[list[Target], Said]:
    """The store's active scrape targets. A store that scrapes nothing answers an empty list
    (VictoriaMetrics single-node without ``-promscrape.config``); one without the API (Mimir)
    answers an HTTP error, a ``RemoteError`` here. Entries that are not objects are skipped.
    With them, what the store said of its answer."""
    url = base_url.rstrip("/") + "/api/v1/targets?state=active"
    data, said = _data(base_url, url, "/api/v1/targets", fetch)
    active = data.get("activeTargets") if isinstance(data, dict) else None
    if not isinstance(active, list):
        raise RemoteError(f"{base_url} answered /api/v1/targets without activeTargets", url)
    out: list[Target] = []
    for item in active:
        labels = item.get("labels") if isinstance(item, dict) else None
        if not isinstance(labels, dict):
            continue
        out.append(
            Target(
                {str(k): str(v) for k, v in labels.items()},
                str(item.get("health", "unknown")),
                str(item.get("lastError") or ""),
            )
        )
    return out, said


def label_values_answer(
    base_url: str,
    label: str,
    match: str,
    start_ts: float,
    end_ts: float,
    fetch: Fetch = http_get,
) -> tuple[list[str], Said]:
    """The values ``label`` takes on the series ``match`` selects between two instants
    (``/api/v1/label/<label>/values``: the index only, no samples read), and what the store
    said of its answer."""
    params = {"match[]": match, "start": f"{start_ts:.3f}", "end": f"{end_ts:.3f}"}
    path = f"/api/v1/label/{urllib.parse.quote(label)}/values"
    url = base_url.rstrip("/") + path + "?" + urllib.parse.urlencode(params)
    data, said = _data(base_url, url, path, fetch)
    if not isinstance(data, list):
        raise RemoteError(f"{base_url} answered {path} without a list", url)
    return [str(v) for v in data], said


def first_answer(
    base_url: str, exprs: list[str], at_ts: float | None = None, fetch: Fetch = http_get
) -> tuple[tuple[float, str] | None, dict[str, Said]]:
    """The first of ``exprs`` that returns a value, with the expression that did (None: none
    did), and what the store said of each answer asked, by its expression: an expression
    asked before the one that answered may have come back empty only because its answer was
    partial."""
    said: dict[str, Said] = {}
    for expr in exprs:
        series, said[expr] = vector_answer(base_url, expr, at_ts, fetch)
        if series:
            return (series[0][1], expr), said
    return None, said


__all__ = [
    "Said",
    "Series",
    "Target",
    "first_answer",
    "http_get",
    "label_values_answer",
    "said_of",
    "targets_answer",
    "vector_answer",
]
