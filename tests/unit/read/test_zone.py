"""read/zone.py: which names are zones (IANA Region/City and UTC), the refusal of the others on
every path (flag, environment, zone file), and this machine's zone for rootless commands."""

from __future__ import annotations

import os
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from vllm_ledger.commands._values import tz_name
from vllm_ledger.errors import BadArgument
from vllm_ledger.read.zone import (
    ZONE_ENV,
    ZONE_FILE,
    is_zone_name,
    machine_zone,
    resolve_zone,
    zone_info,
    zone_problem,
)

REFUSED = ["localtime", "posixrules", "Factory", "right/UTC", "posix/Asia/Shanghai", "GMT"]
ACCEPTED = ["Asia/Shanghai", "America/New_York", "UTC", "Etc/UTC"]


@pytest.mark.parametrize("name", ACCEPTED)
def test_region_zones_and_utc_are_accepted(name: str) -> None:
    assert is_zone_name(name)
    assert zone_problem(name) is None
    assert zone_info(name) == ZoneInfo(name)
    assert tz_name()(name) == name
    assert resolve_zone(name, {}, []).name == name


@pytest.mark.parametrize("name", REFUSED)
def test_database_files_that_are_not_region_zones_are_refused(name: str) -> None:
    assert not is_zone_name(name)
    said = zone_problem(name)
    assert said in ("is not a Region/City zone", "is not a known time zone")
    with pytest.raises(BadArgument) as flag:
        tz_name()(name)
    assert (
        str(flag.value)
        == f"--tz {name!r} {said}: "
        + (
            "use an IANA Region/City name or UTC"
            if said == "is not a Region/City zone"
            else "use an IANA name"
        )
        + ", e.g. --tz Asia/Shanghai"
    )
    with pytest.raises(BadArgument, match=f"^{ZONE_ENV} '{name}' "):
        resolve_zone(None, {ZONE_ENV: name}, [])
    with pytest.raises(BadArgument, match=f"^time zone '{name}' .*such as Asia/Shanghai$"):
        zone_info(name)


@pytest.mark.parametrize("name", ["localtime", "posixrules", "Factory", "right/UTC"])
def test_a_zone_file_naming_one_is_ignored_with_a_warning(tmp_path: Path, name: str) -> None:
    (tmp_path / ZONE_FILE).write_text(f"{name}\n")
    zone = resolve_zone(None, {}, [tmp_path])
    assert (zone.name, zone.source) == ("Asia/Shanghai", "default")
    assert zone.warnings == (
        f"ignoring the zone file {tmp_path / ZONE_FILE}: {name!r} {zone_problem(name)}",
    )


def test_the_refusal_of_a_region_less_name_says_what_to_give() -> None:
    with pytest.raises(BadArgument) as exc:
        tz_name()("localtime")
    assert str(exc.value) == (
        "--tz 'localtime' is not a Region/City zone: use an IANA Region/City name or UTC, "
        "e.g. --tz Asia/Shanghai"
    )


def test_machine_zone_takes_tz_then_the_localtime_link_then_utc(tmp_path: Path) -> None:
    link = tmp_path / "localtime"
    os.symlink("/usr/share/zoneinfo/America/New_York", link)
    assert machine_zone({"TZ": "Asia/Tokyo"}, link) == (ZoneInfo("Asia/Tokyo"), "Asia/Tokyo")
    assert machine_zone({"TZ": ":Asia/Tokyo"}, link)[1] == "Asia/Tokyo"
    # TZ naming no zone (a POSIX rule, localtime) falls through to the link
    assert machine_zone({"TZ": "CST-8"}, link)[1] == "America/New_York"
    assert machine_zone({"TZ": "localtime"}, link)[1] == "America/New_York"
    assert machine_zone({}, link)[1] == "America/New_York"
    posix = tmp_path / "posix-link"
    os.symlink("../usr/share/zoneinfo/posix/Asia/Shanghai", posix)
    assert machine_zone({}, posix)[1] == "Asia/Shanghai"
    plain = tmp_path / "plain"
    plain.write_bytes(b"TZif")  # a copy, not a link: nothing names its zone
    assert machine_zone({}, plain) == (ZoneInfo("UTC"), "UTC")
    assert machine_zone({}, tmp_path / "missing") == (ZoneInfo("UTC"), "UTC")
