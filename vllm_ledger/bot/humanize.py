"""Numbers and labels as the bot's replies write them: human-sized counts (``1.2M``), rates,
speeds, a signed count, a host's offset from UTC (``+08:00``) and the last part of an address
(``.12``)."""

from __future__ import annotations

import ipaddress


def human_count(n: int) -> str:
    """1234 -> 1.2K, 123456 -> 123K, 1234567 -> 1.2M."""
    if n < 1000:
        return str(n)
    for unit, size in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= size * 0.9995 or unit == "K":
            x = n / size
            if x >= 999.5 and unit != "T":
                continue
            return f"{x:.1f}{unit}" if x < 99.95 else f"{x:.0f}{unit}"
    return str(n)  # pragma: no cover


def human_rate(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def human_speed(x: float | None) -> str:
    if x is None:
        return "-"
    if 0 < x < 0.005:
        return "<0.01"  # not 0: something was produced
    if x < 99.95:
        return f"{x:.1f}" if x >= 0.05 or x == 0 else f"{x:.2f}"
    return human_count(round(x))


def ip_last_part(host: str | None) -> str | None:
    """``10.0.0.12`` -> ``.12``; an IPv6 address -> its last group; a host name -> None."""
    if host is None:
        return None
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return None
    if addr.version == 4:
        return "." + str(addr).rsplit(".", 1)[1]
    return ":" + addr.exploded.rsplit(":", 1)[1].lstrip("0")


def utc_offset(offset_s: int) -> str:
    """``+08:00``, ``-03:30``: a host's offset as every other printed time writes it
    (``units.format_instant``), in the chat's times too."""
    h, rem = divmod(abs(offset_s), 3600)
    return f"{'+' if offset_s >= 0 else '-'}{h:02d}:{rem // 60:02d}"


def signed_count(n: int) -> str:
    """``human_count`` with a minus sign for a negative count."""
    return ("-" if n < 0 else "") + human_count(abs(n))


__all__ = ["human_count", "human_rate", "human_speed", "ip_last_part", "signed_count", "utc_offset"]
