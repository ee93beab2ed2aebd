"""The digest nobody has to ask for: yesterday's tokens (and, on a weekday, the last 7 days')
posted once a day at a configured local time.

The config's ``notifier.digest`` object::

    "digest": {"time": "09:00", "zone": "Asia/Shanghai", "weekly": "monday",
               "prices": "/etc/notify/prices.toml"}

``time`` (``HH:MM``, required) and ``zone`` (an IANA name; default: this machine's zone) say
when; ``weekly`` (a weekday) adds the week's digest that day; ``prices`` (a price file with
``cloud_input_price`` and ``cloud_output_price``) adds the cost at its rates.

``due(now_ts, settings)`` is pure: today's digests once the local ``time`` has passed, each
with its key (``digest:day:2026-11-30``, ``digest:week:2026-11-30``); none before it.
``DigestJob.step`` posts each due digest whose key the state does not hold: it asks every
host (``notify/asks.py``), renders the text (``bot/usage_text.digest_text``) and queues it
with its key in one transaction (``Store.queue_once``). So a digest is posted once per day
whatever the restarts; a notifier started after the time posts that day's digest then, and
one stopped over the time until the next day posts none for that day. A host that does not
answer is named in the digest, which is not held back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from vllm_ledger.bot.usage_text import HostAnswer, Pricing, digest_text
from vllm_ledger.errors import ConfigError, LedgerError
from vllm_ledger.formats.status_asked import ASKS, Ask
from vllm_ledger.notify.dedupe import Once
from vllm_ledger.notify.store import Store
from vllm_ledger.read.zone import is_zone_name, machine_zone

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
FIELDS = ("time", "zone", "weekly", "prices")
KEEP_S = 3 * 86_400.0
STEP_S = 15.0  # how often the job looks at the clock
_TIME = re.compile(r"([01][0-9]|2[0-3]):([0-5][0-9])")


@dataclass(frozen=True)
class DigestSettings:
    minute_of_day: int  # the local time, in minutes after midnight
    zone: str
    weekday: int | None = None  # 0 Monday .. 6 Sunday: the week's digest that day
    pricing: Pricing | None = None

    @property
    def time_text(self) -> str:
        return f"{self.minute_of_day // 60:02d}:{self.minute_of_day % 60:02d}"


def _bad(field: str, why: str) -> ConfigError:
    return ConfigError(f"notifier.digest.{field}: {why}", key="notifier")


def digest_settings(value: object, base: Path) -> DigestSettings:
    """The ``digest`` object, checked (one line per fault); ``base``: the config's folder."""
    if not isinstance(value, Mapping):
        raise ConfigError('notifier.digest: give an object such as {"time": "09:00"}', "notifier")
    unknown = sorted(str(k) for k in value if k not in FIELDS)
    if unknown:
        raise _bad(ascii(unknown[0])[1:-1][:40], f"unknown field (known: {', '.join(FIELDS)})")
    got = value.get("time")
    m = _TIME.fullmatch(got) if isinstance(got, str) else None
    if m is None:
        raise _bad("time", "give the local time as HH:MM, e.g. 09:00")
    zone = value.get("zone")
    if zone is None:
        zone = machine_zone()[1]
    elif not isinstance(zone, str) or not is_zone_name(zone):
        raise _bad("zone", "give a time zone name such as Asia/Shanghai")
    weekly = value.get("weekly")
    weekday = None
    if weekly is not None:
        if not isinstance(weekly, str) or weekly.lower() not in WEEKDAYS:
            raise _bad("weekly", f"give a weekday: {', '.join(WEEKDAYS)}")
        weekday = WEEKDAYS.index(weekly.lower())
    pricing = None
    if value.get("prices") is not None:
        pricing = _pricing(value["prices"], base)
    return DigestSettings(int(m[1]) * 60 + int(m[2]), zone, weekday, pricing)


def _pricing(value: Any, base: Path) -> Pricing:
    from vllm_ledger.bot.pricing import load_pricing

    if not isinstance(value, str) or not value:
        raise _bad("prices", "give the price file's path")
    path = Path(value) if Path(value).is_absolute() else base / value
    try:
        return load_pricing(path)
    except LedgerError as exc:
        raise _bad("prices", exc.what) from exc


def due(now_ts: float, settings: DigestSettings) -> list[tuple[Ask, str]]:
    """The digests due at ``now_ts``: today's (local), once its time has passed, each with its
    key; none before it (a day whose time went by while the notifier was stopped is not made
    up the next morning: its "yesterday" is gone by then)."""
    tz = ZoneInfo(settings.zone)
    local = datetime.fromtimestamp(now_ts, tz)
    h, m = divmod(settings.minute_of_day, 60)
    day = local.date()
    if (local.hour, local.minute) < (h, m):
        return []
    out = [(ASKS["digest"], f"digest:day:{day.isoformat()}")]
    if settings.weekday is not None and day.weekday() == settings.weekday:
        out.append((ASKS["digest-week"], f"digest:week:{day.isoformat()}"))
    return out


class DigestJob:
    """The digest loop's step: post each due digest not yet posted."""

    def __init__(
        self,
        settings: DigestSettings,
        store: Store,
        ask: Callable[[Ask], list[HostAnswer]],
        *,
        lang: str,
        clock: Callable[[], float],
        posted: Callable[[], None] = lambda: None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.ask = ask
        self.lang = lang
        self.clock = clock
        self.posted = posted

    def step(self) -> float:
        """Post what is due; the seconds to wait before looking again."""
        for ask, key in due(self.clock(), self.settings):
            if self.store.done_once(key):
                continue
            text = digest_text(self.ask(ask), ask, self.lang, self.settings.pricing)
            queued = self.store.queue_once("digest", [Once(key, text, self.clock() + KEEP_S)])
            if queued.dropped:  # the outbox is full: made again once there is room
                return 1.0
            if queued.ids:
                self.posted()
        return STEP_S


def settings_dict(settings: DigestSettings) -> dict[str, Any]:
    """The settings as ``notifier status --json`` shows them."""
    return {
        "time": settings.time_text,
        "zone": settings.zone,
        "weekly": None if settings.weekday is None else WEEKDAYS[settings.weekday],
        "prices": settings.pricing is not None,
    }


__all__ = ["DigestJob", "DigestSettings", "digest_settings", "due", "settings_dict"]
