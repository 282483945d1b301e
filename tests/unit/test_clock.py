"""The clock: place resolution, the spoken sentence at fixed instants, defaults, errors."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from iris_voice.errors import ToolError
from iris_voice.tools.builtin.clock import (
    describe_time,
    local_timezone,
    make_clock_tool,
    now_in,
    resolve_place,
    resolve_timezone,
)
from iris_voice.tools.registry import ToolRegistry

WINTER = datetime(2025, 11, 22, 6, 5, tzinfo=UTC)  # a Saturday; New York on EST
SUMMER = datetime(2025, 7, 15, 12, 0, tzinfo=UTC)  # New York on EDT


@pytest.mark.parametrize(
    ("name", "zone"),
    [
        # IANA names, any case
        ("Asia/Tokyo", "Asia/Tokyo"),
        ("asia/tokyo", "Asia/Tokyo"),
        ("AMERICA/NEW_YORK", "America/New_York"),
        ("america/new york", "America/New_York"),
        ("America/Argentina/Buenos_Aires", "America/Argentina/Buenos_Aires"),
        # abbreviations
        ("UTC", "UTC"),
        ("gmt", "GMT"),
        ("PST", "America/Los_Angeles"),
        # cities that are a zone's last component, with spaces, case and accents
        ("Tokyo", "Asia/Tokyo"),
        ("new york", "America/New_York"),
        ("New York", "America/New_York"),
        ("los angeles", "America/Los_Angeles"),
        ("São Paulo", "America/Sao_Paulo"),
        ("sao paulo", "America/Sao_Paulo"),
        ("Sydney", "Australia/Sydney"),
        ("Paris", "Europe/Paris"),
        ("Berlin", "Europe/Berlin"),
        ("London", "Europe/London"),
        ("hong kong", "Asia/Hong_Kong"),
        ("Buenos Aires", "America/Argentina/Buenos_Aires"),
        ("Zürich", "Europe/Zurich"),
        ("St. John's", "America/St_Johns"),
        # countries: alias table, then pytz's names
        ("UK", "Europe/London"),
        ("England", "Europe/London"),
        ("United States", "America/New_York"),
        ("the USA", "America/New_York"),
        ("Russia", "Europe/Moscow"),
        ("Brazil", "America/Sao_Paulo"),
        ("Australia", "Australia/Sydney"),
        ("Canada", "America/Toronto"),
        ("South Korea", "Asia/Seoul"),
        ("India", "Asia/Kolkata"),
        ("China", "Asia/Shanghai"),
        ("Japan", "Asia/Tokyo"),
        ("france", "Europe/Paris"),
        # big cities that are not zone names
        ("san francisco", "America/Los_Angeles"),
        ("Seattle", "America/Los_Angeles"),
        ("Beijing", "Asia/Shanghai"),
        ("Mumbai", "Asia/Kolkata"),
        ("new delhi", "Asia/Kolkata"),
        ("Washington DC", "America/New_York"),
        ("Montreal", "America/Toronto"),
        ("Barcelona", "Europe/Madrid"),
        # "city, country" and stray punctuation
        ("Paris, France", "Europe/Paris"),
        ("Tokyo?", "Asia/Tokyo"),
        # legacy pytz names still work
        ("Hongkong", "Hongkong"),
    ],
)
def test_resolve_timezone(name: str, zone: str) -> None:
    assert resolve_timezone(name) == zone


@pytest.mark.parametrize("name", ["Atlantis", "Narnia, Middle Earth", "IST", "12"])
def test_unknown_place(name: str) -> None:
    with pytest.raises(ToolError) as info:
        resolve_timezone(name)
    assert info.value.message == (
        f"Unknown place '{name}'. Use a city, a country or an IANA zone such as Europe/Paris."
    )


def test_country_label_and_city_label() -> None:
    assert resolve_place("UK").label == "the United Kingdom"
    assert resolve_place("sao paulo").label == "Sao Paulo"
    assert resolve_place("asia/tokyo").label == "Tokyo"


def test_sentence_in_tokyo() -> None:
    assert describe_time("Tokyo", now=WINTER) == (
        "It is 3:05 PM on Saturday, November 22, 2025 in Tokyo (Asia/Tokyo, UTC+09:00)."
    )


def test_new_york_with_and_without_dst() -> None:
    assert "1:05 AM on Saturday, November 22, 2025" in describe_time("new york", now=WINTER)
    assert "(America/New_York, UTC-05:00)" in describe_time("new york", now=WINTER)
    assert "8:00 AM on Tuesday, July 15, 2025" in describe_time("new york", now=SUMMER)
    assert "(America/New_York, UTC-04:00)" in describe_time("new york", now=SUMMER)


def test_date_changes_across_the_dateline() -> None:
    assert "10:05 PM on Friday, November 21" in describe_time("Los Angeles", now=WINTER)


def test_half_hour_offset() -> None:
    assert "11:35 AM" in describe_time("India", now=WINTER)
    assert "UTC+05:30" in describe_time("India", now=WINTER)


def test_multi_zone_country_says_which_zone() -> None:
    text = describe_time("United States", now=WINTER)
    assert "in New York, one of several time zones in the United States" in text
    assert "in Germany (Europe/Berlin" in describe_time("Germany", now=WINTER)  # Busingen agrees
    assert "in China (Asia/Shanghai" in describe_time("China", now=WINTER)


def test_now_in() -> None:
    local = now_in("Asia/Tokyo", WINTER)
    assert (local.hour, local.minute, local.tzinfo.zone) == (15, 5, "Asia/Tokyo")
    assert now_in("UTC", datetime(2025, 1, 1, 12, 0)).hour == 12  # naive means UTC


def test_default_zone_is_used_without_place() -> None:
    text = describe_time(None, default_timezone="Europe/Berlin", now=WINTER)
    assert text == "It is 7:05 AM on Saturday, November 22, 2025 (Europe/Berlin, UTC+01:00)."
    assert describe_time("  ", default_timezone="tokyo", now=WINTER).startswith("It is 3:05 PM")


def test_local_timezone_sources(tmp_path: Path) -> None:
    assert local_timezone({"TZ": ":Europe/Paris"}, tmp_path) == "Europe/Paris"
    assert local_timezone({"TZ": "/usr/share/zoneinfo/Asia/Tokyo"}, tmp_path) == "Asia/Tokyo"
    assert local_timezone({}, tmp_path) == "UTC"  # nothing known
    (tmp_path / "timezone").write_text("America/Chicago\n")
    assert local_timezone({"TZ": "not a zone"}, tmp_path) == "America/Chicago"
    (tmp_path / "timezone").unlink()
    os.symlink("/usr/share/zoneinfo/posix/Australia/Sydney", tmp_path / "localtime")
    assert local_timezone({}, tmp_path) == "Australia/Sydney"


async def test_tool_through_registry_with_injected_clock() -> None:
    registry = ToolRegistry([make_clock_tool("Asia/Tokyo", now=lambda: WINTER)])
    result = await registry.call("get_current_time", {"timezone": "new york"})
    assert result.ok is True
    assert result.result.startswith("It is 1:05 AM on Saturday, November 22, 2025 in New York")
    default = await registry.call("get_current_time", {})
    assert default.ok and default.result.endswith("(Asia/Tokyo, UTC+09:00).")


async def test_tool_unknown_place_is_an_error_result() -> None:
    registry = ToolRegistry([make_clock_tool("UTC", now=lambda: WINTER)])
    result = await registry.call("get_current_time", {"timezone": "Atlantis"})
    assert result.ok is False
    assert result.result == (
        "Error: Unknown place 'Atlantis'. Use a city, a country or an IANA zone such as Europe/Paris."
    )


async def test_tool_without_default_uses_machine_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Europe/Paris")
    registry = ToolRegistry([make_clock_tool(None, now=lambda: WINTER)])
    result = await registry.call("get_current_time", {"timezone": None})
    assert result.result == "It is 7:05 AM on Saturday, November 22, 2025 (Europe/Paris, UTC+01:00)."


def test_bad_default_zone_fails_at_construction() -> None:
    with pytest.raises(ValueError, match="Unknown place 'Atlantis'"):
        make_clock_tool("Atlantis")


def test_spec() -> None:
    spec = make_clock_tool().spec
    assert spec.name == "get_current_time"
    assert "required" not in spec.parameters
    assert spec.parameters["properties"]["timezone"]["type"] == "string"
