"""Wall time + zone → UTC, by the brief's rules (invariant 1)."""

from datetime import date, datetime, time, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.timing import wall_time
from models.timing.wall_time import (InvalidTimezone, WallTimeShift, is_known_zone, load_zone, resolve_wall_time,
                                     to_local)

UTC = timezone.utc


def at(*args):
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    "day, wall, zone, instant, shown",
    [
        # New York springs forward at 02:00 → 03:00 on 2026-03-08: 02:30 becomes 03:30 EDT.
        (date(2026, 3, 8), time(2, 30), "America/New_York", at(2026, 3, 8, 7, 30), time(3, 30)),
        # London springs forward at 01:00 → 02:00 on 2026-03-29.
        (date(2026, 3, 29), time(1, 15), "Europe/London", at(2026, 3, 29, 1, 15), time(2, 15)),
        # Lord Howe moves by 30 minutes: 02:00 → 02:30 on 2026-10-04.
        (date(2026, 10, 4), time(2, 10), "Australia/Lord_Howe", at(2026, 10, 3, 15, 40), time(2, 40)),
        # Chatham (+12:45 → +13:45) springs forward at 02:45 → 03:45 on 2026-09-27.
        (date(2026, 9, 27), time(3, 0), "Pacific/Chatham", at(2026, 9, 26, 14, 15), time(4, 0)),
    ],
)
def test_a_wall_time_in_the_spring_gap_moves_forward_by_the_gap(day, wall, zone, instant, shown):
    resolved = resolve_wall_time(day, wall, zone)
    assert resolved.shift is WallTimeShift.GAP
    assert resolved.instant == instant
    assert resolved.local.time() == shown
    assert "does not exist" in resolved.note


@pytest.mark.parametrize(
    "day, wall, zone, instant",
    [
        # New York falls back 02:00 → 01:00 on 2026-11-01: 01:30 happens at 05:30Z (EDT) and 06:30Z (EST).
        (date(2026, 11, 1), time(1, 30), "America/New_York", at(2026, 11, 1, 5, 30)),
        # London falls back 02:00 → 01:00 on 2026-10-25: 01:30 BST is 00:30Z.
        (date(2026, 10, 25), time(1, 30), "Europe/London", at(2026, 10, 25, 0, 30)),
        # Lord Howe falls back 02:00 → 01:30 on 2026-04-05: 01:45 first occurs at +11.
        (date(2026, 4, 5), time(1, 45), "Australia/Lord_Howe", at(2026, 4, 4, 14, 45)),
        # Chatham falls back 03:45 → 02:45 on 2026-04-05: 03:00 first occurs at +13:45.
        (date(2026, 4, 5), time(3, 0), "Pacific/Chatham", at(2026, 4, 4, 13, 15)),
    ],
)
def test_an_ambiguous_wall_time_resolves_to_its_first_occurrence(day, wall, zone, instant):
    resolved = resolve_wall_time(day, wall, zone)
    assert resolved.shift is WallTimeShift.AMBIGUOUS
    assert resolved.instant == instant
    assert resolved.local.time() == wall
    assert "happens twice" in resolved.note


def test_an_ordinary_wall_time_does_not_shift():
    resolved = resolve_wall_time(date(2026, 5, 20), time(9, 0), "America/New_York")
    assert resolved.instant == at(2026, 5, 20, 13, 0)
    assert resolved.shift is WallTimeShift.NONE and resolved.note is None


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "", "america/new_york ", "UTC+3", "../etc/passwd", None, 42])
def test_a_garbage_zone_is_refused_with_a_clear_message(zone):
    with pytest.raises(InvalidTimezone, match="not an IANA time zone"):
        resolve_wall_time(date(2026, 5, 20), time(9, 0), zone)


@pytest.mark.parametrize("name", ["Europe/Paris", "UTC", "Pacific/Chatham", "Mars/Olympus_Mons", "", "europe/paris",
                                  "localtime", "Factory", "posixrules", None, 42, ["Europe/Paris"]])
def test_a_zone_is_known_exactly_when_load_zone_accepts_it(name):
    """The pages ask is_known_zone() before showing a time: a yes there and a refusal from load_zone() is a 500."""
    try:
        load_zone(name)
    except InvalidTimezone:
        accepted = False
    else:
        accepted = True
    assert is_known_zone(name) is accepted
    assert accepted is (name in ("Europe/Paris", "UTC", "Pacific/Chatham"))


def test_a_zone_the_system_lists_but_cannot_read_is_refused_naming_it(monkeypatch):
    def unreadable(name):
        raise ValueError(f"{name}: bad tzfile")

    monkeypatch.setattr(wall_time, "ZoneInfo", unreadable)
    with pytest.raises(InvalidTimezone) as refused:
        load_zone("Europe/Paris")
    assert str(refused.value) == "'Europe/Paris' is not an IANA time zone name"


@pytest.mark.parametrize("day, wall, shift, instant", [
    (date(2026, 3, 8), time(9, 0), WallTimeShift.NONE, "2026-03-08T13:00:00+00:00"),
    (date(2026, 3, 8), time(2, 30), WallTimeShift.GAP, "2026-03-08T07:30:00+00:00"),
    (date(2026, 11, 1), time(1, 30), WallTimeShift.AMBIGUOUS, "2026-11-01T05:30:00+00:00"),
])
def test_the_instant_is_in_utc_whatever_the_hosts_zone(host_zone_kolkata, day, wall, shift, instant):
    resolved = resolve_wall_time(day, wall, "America/New_York")
    assert resolved.shift is shift
    assert resolved.instant.isoformat() == instant


ZONES = ["America/New_York", "Europe/London", "Australia/Lord_Howe", "Pacific/Chatham", "Asia/Kolkata",
         "America/Sao_Paulo", "Africa/Casablanca", "UTC"]


@settings(max_examples=400, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    moment=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2037, 12, 31)),
)
def test_every_existing_unambiguous_wall_time_round_trips(zone, moment):
    wall = moment.replace(second=0, microsecond=0)
    tz = load_zone(zone)
    first = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    second = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    exists = first.astimezone(tz).replace(tzinfo=None) == wall
    if first != second or not exists:
        return  # gaps and overlaps have their own tests above
    resolved = resolve_wall_time(wall.date(), wall.time(), zone)
    assert resolved.shift is WallTimeShift.NONE
    assert to_local(resolved.instant, zone).replace(tzinfo=None) == wall


def test_resolution_always_lands_on_a_real_instant_that_shows_the_resolved_wall_time():
    zone = "America/New_York"
    start = datetime(2026, 3, 8, 0, 0)
    for minute in range(0, 4 * 60, 5):
        wall = start + timedelta(minutes=minute)
        resolved = resolve_wall_time(wall.date(), wall.time(), zone)
        assert to_local(resolved.instant, zone).replace(tzinfo=None) == resolved.local.replace(tzinfo=None)
