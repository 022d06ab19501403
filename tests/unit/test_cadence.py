"""Work-schedule cadences and their grid: pure time logic, no database.

Expected instants are written out by hand. The 2026 transitions they rely on:
- America/New_York: 03-08 02:00 EST → 03:00 EDT (07:00Z); 11-01 02:00 EDT → 01:00 EST (06:00Z).
- Europe/London: 03-29 01:00 GMT → 02:00 BST (01:00Z); 10-25 02:00 BST → 01:00 GMT (01:00Z).
- Australia/Lord_Howe (+10:30 / +11): 04-05 02:00 → 01:30 (04-04 15:00Z); 10-04 02:00 → 02:30 (10-03 15:30Z).
- Pacific/Chatham (+12:45 / +13:45): 04-05 03:45 → 02:45 (04-04 14:00Z); 09-27 02:45 → 03:45 (09-26 14:00Z).
"""

from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.timing import cadence as cadence_module
from models.timing.cadence import (
    Cadence,
    CadenceError,
    Grid,
    grid_for,
    grid_in_words,
    next_slot,
    parse_cadence,
    retry_at,
    slot_at_or_before,
    slots_between,
)
from models.timing.wall_time import InvalidTimezone, WallTimeShift, resolve_wall_time, to_local

UTC = timezone.utc
NY, LONDON, LORD_HOWE, CHATHAM = "America/New_York", "Europe/London", "Australia/Lord_Howe", "Pacific/Chatham"
SEVEN = ["hourly", "every_3_hours", "every_8_hours", "every_12_hours", "daily", "weekly", "monthly"]


def at(*args):
    return datetime(*args, tzinfo=UTC)


def elapsed(cadence, *anchor):
    return Grid(Cadence(cadence), anchor_at=at(*anchor))


def calendar(cadence, *anchor_local):
    return Grid(Cadence(cadence), anchor_local=datetime(*anchor_local))


def first_slots(grid, zone, count, start=at(2000, 1, 1)):
    return slots_between(grid, start, at(2100, 1, 1), zone, limit=count)


# --- the seven cadences ------------------------------------------------------------------


@pytest.mark.parametrize("spelling", SEVEN)
def test_all_seven_cadences_are_accepted_with_the_seeds_spelling(spelling):
    assert parse_cadence(spelling).value == spelling
    assert grid_for(spelling, at(2026, 6, 1, 12, 5), NY).cadence is Cadence(spelling)


def test_there_are_exactly_seven_cadences_four_of_them_elapsed():
    assert [cadence.value for cadence in Cadence] == SEVEN
    assert [cadence.value for cadence in Cadence if cadence.is_elapsed] == SEVEN[:4]


@pytest.mark.parametrize("spelling", ["fortnightly", "Daily", " daily", "every_2_hours", "", None, 7])
def test_an_unknown_cadence_is_refused_naming_the_seven(spelling):
    seven = "hourly, every_3_hours, every_8_hours, every_12_hours, daily, weekly, monthly"
    with pytest.raises(CadenceError, match=seven):
        parse_cadence(spelling)
    with pytest.raises(ValueError):  # CadenceError is a ValueError, for the shells' 422
        grid_for(spelling, at(2026, 6, 1, 12, 5), NY)


# --- choosing the grid on enable ---------------------------------------------------------


def test_enabling_anchors_every_cadence_on_the_next_local_clock_hour():
    now = at(2026, 6, 1, 18, 20)  # 14:20 EDT
    assert grid_for("every_8_hours", now, NY) == elapsed("every_8_hours", 2026, 6, 1, 19, 0)
    assert grid_for("weekly", now, NY) == calendar("weekly", 2026, 6, 1, 15, 0)
    assert next_slot(grid_for("weekly", now, NY), now, NY) == at(2026, 6, 1, 19, 0)


def test_enabling_exactly_on_the_hour_takes_the_following_hour():
    assert grid_for("hourly", at(2026, 6, 1, 12, 0), LONDON).anchor_at == at(2026, 6, 1, 12, 0) + timedelta(hours=1)


def test_enabling_with_seconds_on_the_clock_anchors_on_the_whole_hour():
    now = at(2026, 6, 1, 18, 20, 30, 250_000)  # 14:20:30.25 EDT
    assert grid_for("hourly", now, NY).anchor_at == at(2026, 6, 1, 19, 0)
    assert grid_for("daily", now, NY) == calendar("daily", 2026, 6, 1, 15, 0)


def test_in_chatham_the_clock_hour_is_the_local_one_at_a_quarter_past_in_utc():
    # 12:50Z is 01:35 +12:45 on 09-27; the next local hour, 02:00, is 13:15Z.
    grid = grid_for("hourly", at(2026, 9, 26, 12, 50), CHATHAM)
    assert grid.anchor_at == at(2026, 9, 26, 13, 15)
    # Chatham's shift is a whole hour, so elapsed hours stay on its clock hour across it:
    # 02:00 +12:45, then 04:00 and 05:00 +13:45.
    assert first_slots(grid, CHATHAM, 3) == [at(2026, 9, 26, 13, 15), at(2026, 9, 26, 14, 15), at(2026, 9, 26, 15, 15)]


def test_in_lord_howe_the_clock_hour_is_the_local_one_at_half_past_in_utc():
    # 01:10Z is 11:40 +10:30 in June; the next local hour, 12:00, is 01:30Z.
    assert grid_for("daily", at(2026, 6, 1, 1, 10), LORD_HOWE) == calendar("daily", 2026, 6, 1, 12, 0)
    assert grid_for("hourly", at(2026, 6, 1, 1, 10), LORD_HOWE).anchor_at == at(2026, 6, 1, 1, 30)


def test_hourly_in_lord_howe_keeps_elapsed_hours_so_after_its_half_hour_shift_it_lands_on_the_half_hour():
    # 14:10Z on 10-03 is 00:40 +10:30 on 10-04: anchor 01:00 = 14:30Z; 15:30Z is 02:30 +11.
    grid = grid_for("hourly", at(2026, 10, 3, 14, 10), LORD_HOWE)
    slots = first_slots(grid, LORD_HOWE, 3)
    assert slots == [at(2026, 10, 3, 14, 30), at(2026, 10, 3, 15, 30), at(2026, 10, 3, 16, 30)]
    assert [to_local(slot, LORD_HOWE).strftime("%H:%M") for slot in slots] == ["01:00", "02:30", "03:30"]


def test_enabling_just_before_a_gap_skips_the_wall_hour_that_does_not_exist():
    # Lord Howe, 01:45 +10:30 on 10-04 (15:15Z): 02:00 does not exist, 03:00 +11 is 16:00Z.
    assert grid_for("daily", at(2026, 10, 3, 15, 15), LORD_HOWE) == calendar("daily", 2026, 10, 4, 3, 0)
    # New York, 01:30 EST on 03-08 (06:30Z): 02:00 does not exist, 03:00 EDT is 07:00Z.
    assert grid_for("hourly", at(2026, 3, 8, 6, 30), NY).anchor_at == at(2026, 3, 8, 7, 0)


def test_enabling_during_the_repeated_hour_never_anchors_in_the_past():
    # New York, 01:30 EST, the second 01:30 (06:30Z): the next wall hour is 02:00 EST, 07:00Z.
    assert grid_for("hourly", at(2026, 11, 1, 6, 30), NY).anchor_at == at(2026, 11, 1, 7, 0)
    # 00:30 EDT (04:30Z): 01:00 is ambiguous and counts by its first occurrence, 05:00Z.
    assert grid_for("daily", at(2026, 11, 1, 4, 30), NY) == calendar("daily", 2026, 11, 1, 1, 0)
    # Troll falls back two hours, 03:00 +02 → 01:00 +00 at 01:00Z. At 01:30 +00 (01:30Z) the
    # next wall hour, 02:00, first occurred at 00:00Z, already past: 03:00 +00 it is.
    assert grid_for("hourly", at(2026, 10, 25, 1, 30), "Antarctica/Troll").anchor_at == at(2026, 10, 25, 3)


def test_enabling_during_samoas_skipped_day_anchors_on_the_next_day_that_exists():
    # 23:30 on 29 December 2011 (-10): every wall hour of the 30th is missing; 00:00 on the 31st
    # (+14) is 10:00Z.
    assert grid_for("hourly", at(2011, 12, 30, 9, 30), "Pacific/Apia").anchor_at == at(2011, 12, 30, 10)


def test_enabling_in_a_garbage_zone_is_refused():
    with pytest.raises(InvalidTimezone):
        grid_for("daily", at(2026, 6, 1, 12, 5), "Mars/Olympus_Mons")


# --- each cadence across DST, in four zones ----------------------------------------------

DST_CASES = [
    # New York: 00:00 and 01:00 EST, then 03:00 and 04:00 EDT; the lost 02:00 is no slot.
    (elapsed("hourly", 2026, 3, 8, 5), NY,
        [at(2026, 3, 8, 5), at(2026, 3, 8, 6), at(2026, 3, 8, 7), at(2026, 3, 8, 8)]),
    # 00:00 EDT, then 02:00 and 05:00 EST: three elapsed hours, not three wall hours.
    (elapsed("every_3_hours", 2026, 11, 1, 4), NY,
        [at(2026, 11, 1, 4), at(2026, 11, 1, 7), at(2026, 11, 1, 10)]),
    # 16:00 EST, 00:00 EST, then 09:00 EDT.
    (elapsed("every_8_hours", 2026, 3, 7, 21), NY,
        [at(2026, 3, 7, 21), at(2026, 3, 8, 5), at(2026, 3, 8, 13)]),
    # 20:00 EDT, 07:00 EST, 19:00 EST.
    (elapsed("every_12_hours", 2026, 11, 1, 0), NY,
        [at(2026, 11, 1, 0), at(2026, 11, 1, 12), at(2026, 11, 2, 0)]),
    # 02:30 daily: on 03-08 it does not exist and becomes 03:30 EDT (07:30Z), then 02:30 EDT.
    (calendar("daily", 2026, 3, 6, 2, 30), NY,
        [at(2026, 3, 6, 7, 30), at(2026, 3, 7, 7, 30), at(2026, 3, 8, 7, 30), at(2026, 3, 9, 6, 30)]),
    # 01:30 daily: on 11-01 it happens twice and runs at the first, 01:30 EDT.
    (calendar("daily", 2026, 10, 31, 1, 30), NY,
        [at(2026, 10, 31, 5, 30), at(2026, 11, 1, 5, 30), at(2026, 11, 2, 6, 30)]),
    (calendar("weekly", 2026, 3, 1, 9), NY,
        [at(2026, 3, 1, 14), at(2026, 3, 8, 13), at(2026, 3, 15, 13)]),
    (calendar("monthly", 2026, 10, 1, 9), NY,
        [at(2026, 10, 1, 13), at(2026, 11, 1, 14), at(2026, 12, 1, 14)]),
    # London: hourly runs at both 01:00s of the fall-back night (01:00 BST, 01:00 GMT).
    (elapsed("hourly", 2026, 10, 25, 0), LONDON,
        [at(2026, 10, 25, 0), at(2026, 10, 25, 1), at(2026, 10, 25, 2)]),
    (elapsed("every_3_hours", 2026, 3, 28, 23), LONDON,
        [at(2026, 3, 28, 23), at(2026, 3, 29, 2), at(2026, 3, 29, 5)]),
    (elapsed("every_8_hours", 2026, 10, 24, 16), LONDON,
        [at(2026, 10, 24, 16), at(2026, 10, 25, 0), at(2026, 10, 25, 8)]),
    (elapsed("every_12_hours", 2026, 3, 28, 12), LONDON,
        [at(2026, 3, 28, 12), at(2026, 3, 29, 0), at(2026, 3, 29, 12)]),
    # 01:30 daily: 03-29 01:30 does not exist → 02:30 BST (01:30Z); then 01:30 BST (00:30Z).
    (calendar("daily", 2026, 3, 28, 1, 30), LONDON,
        [at(2026, 3, 28, 1, 30), at(2026, 3, 29, 1, 30), at(2026, 3, 30, 0, 30)]),
    # 01:30 daily: 10-25 01:30 happens twice → first, BST (00:30Z); then GMT.
    (calendar("daily", 2026, 10, 24, 1, 30), LONDON,
        [at(2026, 10, 24, 0, 30), at(2026, 10, 25, 0, 30), at(2026, 10, 26, 1, 30)]),
    (calendar("weekly", 2026, 10, 18, 8), LONDON,
        [at(2026, 10, 18, 7), at(2026, 10, 25, 8), at(2026, 11, 1, 8)]),
    (calendar("monthly", 2026, 3, 15, 18), LONDON,
        [at(2026, 3, 15, 18), at(2026, 4, 15, 17), at(2026, 5, 15, 17)]),
    # Lord Howe: 01:00 +10:30, then 02:30 and 03:30 +11: elapsed hours, so off the clock hour after
    # the 30-minute shift.
    (elapsed("hourly", 2026, 10, 3, 14, 30), LORD_HOWE,
        [at(2026, 10, 3, 14, 30), at(2026, 10, 3, 15, 30), at(2026, 10, 3, 16, 30)]),
    # 23:00 +11, 01:30 +10:30 (the second 01:30), 04:30 +10:30.
    (elapsed("every_3_hours", 2026, 4, 4, 12), LORD_HOWE,
        [at(2026, 4, 4, 12), at(2026, 4, 4, 15), at(2026, 4, 4, 18)]),
    # 18:30 +10:30, 03:00 +11, 11:00 +11.
    (elapsed("every_8_hours", 2026, 10, 3, 8), LORD_HOWE,
        [at(2026, 10, 3, 8), at(2026, 10, 3, 16), at(2026, 10, 4, 0)]),
    # 14:00 +11, 01:30 +10:30, 13:30 +10:30.
    (elapsed("every_12_hours", 2026, 4, 4, 3), LORD_HOWE,
        [at(2026, 4, 4, 3), at(2026, 4, 4, 15), at(2026, 4, 5, 3)]),
    # 02:10 daily: on 10-04 it does not exist → 02:40 +11 (15:40Z), then 02:10 +11.
    (calendar("daily", 2026, 10, 3, 2, 10), LORD_HOWE,
        [at(2026, 10, 2, 15, 40), at(2026, 10, 3, 15, 40), at(2026, 10, 4, 15, 10)]),
    # 01:45 daily: on 04-05 it happens twice → first, +11; then +10:30.
    (calendar("daily", 2026, 4, 4, 1, 45), LORD_HOWE,
        [at(2026, 4, 3, 14, 45), at(2026, 4, 4, 14, 45), at(2026, 4, 5, 15, 15)]),
    (calendar("weekly", 2026, 9, 27, 9), LORD_HOWE,
        [at(2026, 9, 26, 22, 30), at(2026, 10, 3, 22), at(2026, 10, 10, 22)]),
    (calendar("monthly", 2026, 3, 5, 12), LORD_HOWE,
        [at(2026, 3, 5, 1), at(2026, 4, 5, 1, 30), at(2026, 5, 5, 1, 30)]),
    # Chatham: 02:00 and 03:00 +13:45, then 03:00 again and 04:00 +12:45; always hh:15 UTC.
    (elapsed("hourly", 2026, 4, 4, 12, 15), CHATHAM,
        [at(2026, 4, 4, 12, 15), at(2026, 4, 4, 13, 15), at(2026, 4, 4, 14, 15), at(2026, 4, 4, 15, 15)]),
    # 01:00 +13:45, 03:00 +12:45 (the second 03:00), 06:00 +12:45.
    (elapsed("every_3_hours", 2026, 4, 4, 11, 15), CHATHAM,
        [at(2026, 4, 4, 11, 15), at(2026, 4, 4, 14, 15), at(2026, 4, 4, 17, 15)]),
    # 20:00 +12:45, 05:00 +13:45, 13:00 +13:45.
    (elapsed("every_8_hours", 2026, 9, 26, 7, 15), CHATHAM,
        [at(2026, 9, 26, 7, 15), at(2026, 9, 26, 15, 15), at(2026, 9, 26, 23, 15)]),
    # 01:00 +13:45, 12:00 +12:45.
    (elapsed("every_12_hours", 2026, 4, 4, 11, 15), CHATHAM,
        [at(2026, 4, 4, 11, 15), at(2026, 4, 4, 23, 15)]),
    # 03:00 daily: on 09-27 it does not exist → 04:00 +13:45 (14:15Z), then 03:00 +13:45.
    (calendar("daily", 2026, 9, 26, 3), CHATHAM,
        [at(2026, 9, 25, 14, 15), at(2026, 9, 26, 14, 15), at(2026, 9, 27, 13, 15)]),
    # 03:00 daily: on 04-05 it happens twice → first, +13:45; then +12:45.
    (calendar("daily", 2026, 4, 4, 3), CHATHAM,
        [at(2026, 4, 3, 13, 15), at(2026, 4, 4, 13, 15), at(2026, 4, 5, 14, 15)]),
    (calendar("weekly", 2026, 9, 20, 10), CHATHAM,
        [at(2026, 9, 19, 21, 15), at(2026, 9, 26, 20, 15), at(2026, 10, 3, 20, 15)]),
    (calendar("monthly", 2026, 3, 5, 12), CHATHAM,
        [at(2026, 3, 4, 22, 15), at(2026, 4, 4, 23, 15), at(2026, 5, 4, 23, 15)]),
]


DST_CASE_IDS = [f"{grid.cadence.value}-{zone}" for grid, zone, _ in DST_CASES]


@pytest.mark.parametrize("grid, zone, expected", DST_CASES, ids=DST_CASE_IDS)
def test_each_cadence_across_dst_steps_elapsed_hours_or_keeps_the_wall_time(grid, zone, expected):
    assert first_slots(grid, zone, len(expected)) == expected
    # next_slot agrees, slot after slot.
    assert [next_slot(grid, slot - timedelta(seconds=1), zone) for slot in expected] == expected


def test_every_cadence_and_zone_pair_is_covered_across_dst():
    covered = {(grid.cadence, zone) for grid, zone, _ in DST_CASES}
    assert covered == {(cadence, zone) for cadence in Cadence for zone in (NY, LONDON, LORD_HOWE, CHATHAM)}


def test_a_day_samoa_skipped_is_no_extra_slot_and_no_lost_one():
    # Apia went from 29 December 2011 (-10) straight to 31 December (+14). 09:00 on the missing
    # 30th moves forward by the 24-hour gap onto the 31st's 09:00, so the two are one slot.
    assert first_slots(calendar("daily", 2011, 12, 28, 9), "Pacific/Apia", 4) == [
        at(2011, 12, 28, 19), at(2011, 12, 29, 19), at(2011, 12, 30, 19), at(2011, 12, 31, 19),
    ]


# --- month ends and leap years -----------------------------------------------------------


def test_monthly_anchored_on_31_january_runs_28_february_then_31_march():
    grid = calendar("monthly", 2026, 1, 31, 9)
    assert first_slots(grid, LONDON, 5) == [
        at(2026, 1, 31, 9), at(2026, 2, 28, 9), at(2026, 3, 31, 8), at(2026, 4, 30, 8), at(2026, 5, 31, 8),
    ]


def test_monthly_anchored_on_31_january_of_a_leap_year_runs_29_february():
    assert first_slots(calendar("monthly", 2028, 1, 31, 9), LONDON, 3) == [
        at(2028, 1, 31, 9), at(2028, 2, 29, 9), at(2028, 3, 31, 8),
    ]


def test_monthly_anchored_on_29_february_runs_28_february_in_common_years_and_29_in_the_next_leap_year():
    slots = first_slots(calendar("monthly", 2028, 2, 29, 9), "UTC", 50)
    assert at(2029, 2, 28, 9) in slots and at(2029, 3, 29, 9) in slots and at(2032, 2, 29, 9) in slots


def test_monthly_crosses_the_year_end():
    assert first_slots(calendar("monthly", 2026, 12, 31, 23, 30), NY, 3) == [
        at(2027, 1, 1, 4, 30), at(2027, 2, 1, 4, 30), at(2027, 3, 1, 4, 30),
    ]


# --- after a run -------------------------------------------------------------------------


def test_a_run_90_seconds_late_stays_anchored_on_its_slot():
    hourly = elapsed("hourly", 2026, 6, 1, 12)
    # Slot 13:00Z fired at 13:01:30 and finished at 13:03: the next run is 14:00, not 14:01:30.
    assert next_slot(hourly, at(2026, 6, 1, 13, 3), NY) == at(2026, 6, 1, 14)
    assert slot_at_or_before(hourly, at(2026, 6, 1, 13, 1, 30), NY) == at(2026, 6, 1, 13)
    daily = calendar("daily", 2026, 6, 1, 9)  # 09:00 EDT = 13:00Z
    assert next_slot(daily, at(2026, 6, 1, 13, 1, 30), NY) == at(2026, 6, 2, 13)
    # A run started at 08:00 EDT on 06-02 still belongs to 06-01's slot.
    assert slot_at_or_before(daily, at(2026, 6, 2, 12), NY) == at(2026, 6, 1, 13)


def test_the_slot_a_run_belongs_to_is_the_last_one_at_or_before_it():
    weekly = calendar("weekly", 2026, 6, 1, 9)  # Mondays 09:00 EDT
    assert slot_at_or_before(weekly, at(2026, 6, 10, 12), NY) == at(2026, 6, 8, 13)
    monthly = calendar("monthly", 2026, 1, 31, 9)
    assert slot_at_or_before(monthly, at(2026, 3, 15), LONDON) == at(2026, 2, 28, 9)
    assert slot_at_or_before(monthly, at(2026, 3, 31, 7, 59), LONDON) == at(2026, 2, 28, 9)
    assert slot_at_or_before(monthly, at(2026, 3, 31, 8), LONDON) == at(2026, 3, 31, 8)


def test_after_a_three_day_outage_the_next_slot_is_one_slot_after_now():
    daily = calendar("daily", 2026, 6, 1, 9)
    # The 06-01 slot is run once when the consumer comes back on 06-04 at 15:00Z; what follows
    # is 06-05 09:00 EDT, not the three missed slots.
    assert next_slot(daily, at(2026, 6, 4, 15, 5), NY) == at(2026, 6, 5, 13)
    every_8 = elapsed("every_8_hours", 2026, 6, 1, 1)
    assert next_slot(every_8, at(2026, 6, 4, 15, 5), NY) == at(2026, 6, 4, 17)


@pytest.mark.parametrize(
    "failures, expected",
    [
        (1, at(2026, 6, 1, 12, 25)),  # now + 15 min
        (2, at(2026, 6, 1, 12, 40)),  # now + 30 min
        (3, at(2026, 6, 1, 13, 10)),  # now + 1 h
        (4, at(2026, 6, 1, 14, 10)),  # now + 2 h
        (5, at(2026, 6, 1, 15, 0)),  # now + 4 h is 16:10, the next slot 15:00 is earlier
        (6, at(2026, 6, 1, 15, 0)),  # now + 8 h, same
    ],
)
def test_a_retry_is_the_earlier_of_the_backoff_and_the_next_slot(failures, expected):
    grid = elapsed("every_3_hours", 2026, 6, 1, 12)  # slots 12:00, 15:00, 18:00Z
    assert retry_at(grid, at(2026, 6, 1, 12, 10), failures, NY) == expected


@pytest.mark.parametrize("failures, minutes", [(1, 15), (2, 30), (3, 60), (4, 120), (5, 240), (6, 480)])
def test_the_backoff_doubles_from_15_minutes_when_the_next_slot_is_far(failures, minutes):
    daily = calendar("daily", 2026, 6, 1, 9)  # failed at 13:05Z, next slot 06-02 13:00Z
    assert retry_at(daily, at(2026, 6, 1, 13, 5), failures, NY) == at(2026, 6, 1, 13, 5) + timedelta(minutes=minutes)


def test_a_retry_keeps_the_slot_it_retries_and_the_grid_never_drifts():
    grid = elapsed("every_3_hours", 2026, 6, 1, 12)
    retry = retry_at(grid, at(2026, 6, 1, 12, 10), 1, NY)
    assert retry == at(2026, 6, 1, 12, 25)
    assert slot_at_or_before(grid, retry, NY) == at(2026, 6, 1, 12)  # the retry is slot 12:00's run
    # It succeeds at 12:31: the next run is the grid's 15:00, not 12:25 + 3 h.
    assert next_slot(grid, at(2026, 6, 1, 12, 31), NY) == at(2026, 6, 1, 15)


def test_a_huge_failure_count_is_still_answered_by_the_next_slot():
    assert retry_at(calendar("monthly", 2026, 1, 31, 9), at(2026, 2, 1), 10_000, LONDON) == at(2026, 2, 28, 9)


@pytest.mark.parametrize("failures", [0, -1, True, 1.5, "1"])
def test_failures_count_from_one(failures):
    with pytest.raises(ValueError, match="from 1"):
        retry_at(elapsed("hourly", 2026, 6, 1), at(2026, 6, 1, 1), failures, NY)


# --- previews ----------------------------------------------------------------------------


def test_slots_between_includes_start_excludes_end_and_stops_at_the_limit():
    grid = elapsed("hourly", 2026, 6, 1)
    assert slots_between(grid, at(2026, 6, 1, 3), at(2026, 6, 1, 6), NY, limit=10) == [
        at(2026, 6, 1, 3), at(2026, 6, 1, 4), at(2026, 6, 1, 5),
    ]
    assert slots_between(grid, at(2026, 6, 1, 3), at(2026, 6, 1, 6), NY, limit=2) == [
        at(2026, 6, 1, 3), at(2026, 6, 1, 4),
    ]
    assert slots_between(grid, at(2020, 1, 1), at(2026, 6, 1, 2), NY, limit=10) == [at(2026, 6, 1), at(2026, 6, 1, 1)]


def test_a_slot_a_microsecond_before_the_window_is_not_in_it():
    grid = elapsed("hourly", 2026, 6, 1)
    start = at(2026, 6, 1, 3) + timedelta(microseconds=1)
    assert slots_between(grid, start, at(2026, 6, 1, 6), NY, limit=10) == [at(2026, 6, 1, 4), at(2026, 6, 1, 5)]


def test_a_preview_of_no_slots_is_empty_and_a_negative_limit_is_refused():
    grid = elapsed("hourly", 2026, 6, 1)
    assert slots_between(grid, at(2026, 6, 1, 3), at(2026, 6, 1, 6), NY, limit=0) == []
    with pytest.raises(ValueError) as refused:
        slots_between(grid, at(2026, 6, 1, 3), at(2026, 6, 1, 6), NY, limit=-1)
    assert str(refused.value) == "limit must not be negative, not -1"


def test_nothing_precedes_the_anchor():
    daily = calendar("daily", 2026, 6, 10, 9)
    assert slot_at_or_before(daily, at(2026, 6, 10, 12), NY) is None
    assert slot_at_or_before(daily, at(2026, 6, 10, 13), NY) == at(2026, 6, 10, 13)
    assert next_slot(daily, at(2026, 1, 1), NY) == at(2026, 6, 10, 13)
    assert slot_at_or_before(elapsed("hourly", 2026, 6, 1), at(2026, 5, 31, 23), NY) is None


# --- a far anchor costs what a near one does ---------------------------------------------


def test_a_schedule_anchored_years_ago_costs_what_one_anchored_yesterday_does(monkeypatch):
    calls = []

    def counting_resolve(*args):
        calls.append(args)
        return resolve_wall_time(*args)

    monkeypatch.setattr(cadence_module, "resolve_wall_time", counting_resolve)
    now = at(2026, 6, 1, 12)
    costs = {}
    for anchor_year in (1926, 2021, 2026):
        calls.clear()
        anchor_day = 31 if anchor_year == 2026 else 14
        assert next_slot(calendar("daily", anchor_year, 5, anchor_day, 2, 30), now, NY) == at(2026, 6, 2, 6, 30)
        costs[anchor_year] = len(calls)
    # A handful of wall times around now, whatever the anchor's age (a walk would need ~36,500).
    assert max(costs.values()) <= 5, costs


@pytest.mark.parametrize("cadence, anchors, expected", [
    # Mondays 09:00: five Mondays around now, whatever the anchor's age (a walk from 1926 would need ~5,200).
    ("weekly", [(1926, 5, 31), (2021, 5, 31), (2026, 5, 25)], at(2026, 6, 1, 13)),
    # The 15th at 09:00: five months around now (a walk from 1926 would need ~1,200).
    ("monthly", [(1926, 1, 15), (2021, 3, 15), (2026, 5, 15)], at(2026, 6, 15, 13)),
])
def test_a_weekly_or_monthly_schedule_anchored_years_ago_costs_what_a_recent_one_does(monkeypatch, cadence, anchors,
                                                                                         expected):
    calls = []

    def counting_resolve(*args):
        calls.append(args)
        return resolve_wall_time(*args)

    monkeypatch.setattr(cadence_module, "resolve_wall_time", counting_resolve)
    costs = {}
    for anchor in anchors:
        calls.clear()
        assert next_slot(calendar(cadence, *anchor, 9, 0), at(2026, 6, 1, 12), NY) == expected
        costs[anchor] = len(calls)
    assert max(costs.values()) <= 5, costs


def test_far_anchors_give_the_right_slot():
    # 2021-06-01 01:00Z + 1826 days (2024 is leap) = 2026-06-01 01:00Z, on the 8-hour grid.
    assert next_slot(elapsed("every_8_hours", 2021, 6, 1, 1), at(2026, 6, 1, 12), NY) == at(2026, 6, 1, 17)
    assert next_slot(calendar("monthly", 2021, 1, 31, 9), at(2026, 2, 15), LONDON) == at(2026, 2, 28, 9)
    assert next_slot(calendar("weekly", 2001, 1, 1, 9), at(2026, 6, 2), "UTC") == at(2026, 6, 8, 9)  # Mondays


# --- refusals ----------------------------------------------------------------------------


def test_naive_instants_are_refused():
    grid = elapsed("hourly", 2026, 6, 1)
    naive = datetime(2026, 6, 1, 12)
    for call in (
        lambda: grid_for("daily", naive, NY),
        lambda: next_slot(grid, naive, NY),
        lambda: slot_at_or_before(grid, naive, NY),
        lambda: retry_at(grid, naive, 1, NY),
        lambda: slots_between(grid, naive, at(2026, 6, 2), NY, limit=3),
        lambda: Grid(Cadence.HOURLY, anchor_at=naive),
    ):
        with pytest.raises(ValueError, match="naive"):
            call()


def test_a_grid_holds_exactly_the_anchor_its_cadence_reads():
    with pytest.raises(ValueError, match="needs anchor_local"):
        Grid(Cadence.DAILY, anchor_at=at(2026, 6, 1))
    with pytest.raises(ValueError, match="needs anchor_at"):
        Grid(Cadence.HOURLY, anchor_local=datetime(2026, 6, 1))
    with pytest.raises(ValueError, match="must be naive"):
        Grid(Cadence.WEEKLY, anchor_local=at(2026, 6, 1))
    assert Grid("daily", anchor_local=datetime(2026, 6, 1, 9)).cadence is Cadence.DAILY


def test_an_anchor_at_in_another_offset_is_kept_in_utc():
    plus_two = timezone(timedelta(hours=2))
    grid = Grid(Cadence.HOURLY, anchor_at=datetime(2026, 6, 1, 14, tzinfo=plus_two))
    # Aware datetimes compare as instants whatever their zone: the zone itself is asked, and the slots read off it.
    assert grid.anchor_at == at(2026, 6, 1, 12) and grid.anchor_at.tzinfo is UTC
    assert next_slot(grid, at(2026, 6, 1, 12, 30), NY).isoformat() == "2026-06-01T13:00:00+00:00"


@pytest.mark.parametrize("cadence", SEVEN)
def test_a_grid_with_both_anchors_or_neither_is_refused_naming_the_one_it_reads(cadence):
    reads = "anchor_at and no anchor_local" if Cadence(cadence).is_elapsed else "anchor_local and no anchor_at"
    for anchors in ({}, {"anchor_at": at(2026, 6, 1), "anchor_local": datetime(2026, 6, 1)}):
        with pytest.raises(ValueError) as refused:
            Grid(Cadence(cadence), **anchors)
        assert str(refused.value) == f"a {cadence} grid needs {reads}"


def test_a_wall_anchor_carrying_a_zone_is_refused_saying_whose_zone_it_is_read_in():
    with pytest.raises(ValueError) as refused:
        Grid(Cadence.MONTHLY, anchor_local=at(2026, 6, 1))
    assert str(refused.value) == "anchor_local is a wall time and must be naive; the zone is the workspace's"


@pytest.mark.parametrize("grid", [elapsed("hourly", 2026, 6, 1), calendar("daily", 2026, 6, 1, 9)])
def test_a_garbage_zone_is_refused_for_every_cadence(grid):
    for call in (next_slot, slot_at_or_before):
        with pytest.raises(InvalidTimezone):
            call(grid, at(2026, 6, 1, 12, 5), "Mars/Olympus_Mons")


def test_a_zone_change_moves_calendar_slots_with_the_wall_time_and_leaves_elapsed_ones():
    now = at(2026, 6, 1, 12)
    assert next_slot(calendar("daily", 2026, 5, 1, 9), now, NY) == at(2026, 6, 1, 13)
    assert next_slot(calendar("daily", 2026, 5, 1, 9), now, LONDON) == at(2026, 6, 2, 8)
    assert next_slot(elapsed("hourly", 2026, 5, 1), now, LONDON) == next_slot(elapsed("hourly", 2026, 5, 1), now, NY)


def test_a_monthly_slot_on_a_day_the_zone_skipped_moves_to_the_next_day_at_the_same_wall_time():
    # Samoa skipped 30 December 2011 whole; the 30th-of-the-month slot lands on the 31st at 09:00.
    slots = slots_between(calendar("monthly", 2011, 9, 30, 9), at(2011, 12, 1), at(2012, 1, 15), "Pacific/Apia",
                          limit=5)
    assert [to_local(slot, "Pacific/Apia").replace(tzinfo=None) for slot in slots] == [datetime(2011, 12, 31, 9)]


# --- properties --------------------------------------------------------------------------


# An example takes milliseconds; the deadline is generous for a slow shared 2-core machine.
@settings(max_examples=150, deadline=timedelta(seconds=5))
@given(
    cadence=st.sampled_from(list(Cadence)),
    zone=st.sampled_from([NY, LONDON, LORD_HOWE, CHATHAM, "Pacific/Apia", "UTC"]),
    anchor=st.datetimes(min_value=datetime(2005, 1, 1), max_value=datetime(2035, 12, 31)).map(
        lambda moment: moment.replace(second=0, microsecond=0)
    ),
    offset_days=st.integers(min_value=-40, max_value=400),
)
def test_slots_increase_and_keep_the_anchors_wall_time_unless_it_fell_in_a_gap(cadence, zone, anchor, offset_days):
    if cadence.is_elapsed:
        grid = Grid(cadence, anchor_at=resolve_wall_time(anchor.date(), anchor.time(), zone).instant)
    else:
        grid = Grid(cadence, anchor_local=anchor)
    start = resolve_wall_time(anchor.date(), anchor.time(), zone).instant + timedelta(days=offset_days)
    slots = slots_between(grid, start, start + timedelta(days=120), zone, limit=12)
    assert slots and all(earlier < later for earlier, later in zip(slots, slots[1:]))
    assert slots[0] >= start
    for earlier, later in zip(slots, slots[1:]):
        assert slot_at_or_before(grid, later - timedelta(microseconds=1), zone) == earlier
    for slot in slots:
        assert next_slot(grid, slot - timedelta(microseconds=1), zone) == slot
        assert slot_at_or_before(grid, slot, zone) == slot
        if cadence.is_elapsed:
            assert (slot - grid.anchor_at) % cadence.elapsed_step == timedelta(0)
            continue
        local = to_local(slot, zone).replace(tzinfo=None)
        # A wall time in a gap moves forward by the gap, which can be a whole day (Samoa skipped
        # 30 December 2011): the intended date is the slot's own or the one before it.
        in_gap = any(resolve_wall_time(day, anchor.time(), zone).shift is WallTimeShift.GAP
                     for day in (local.date(), local.date() - timedelta(days=1)))
        assert local.time() == anchor.time() or in_gap
        if cadence is Cadence.WEEKLY and not in_gap:
            assert local.weekday() == anchor.weekday()
        if cadence is Cadence.MONTHLY and not in_gap:
            last_of_month = (local + timedelta(days=1)).month != local.month
            assert local.day == anchor.day or (local.day < anchor.day and last_of_month)


@settings(max_examples=100, deadline=timedelta(seconds=5))
@given(
    cadence=st.sampled_from([Cadence.DAILY, Cadence.WEEKLY, Cadence.MONTHLY]),
    zone=st.sampled_from([NY, LONDON, LORD_HOWE, CHATHAM]),
    anchor=st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 12, 31)).map(
        lambda moment: moment.replace(second=0, microsecond=0)
    ),
    after_minutes=st.integers(min_value=-3 * 24 * 60, max_value=300 * 24 * 60),
)
def test_next_slot_matches_a_plain_walk_from_the_anchor(cadence, zone, anchor, after_minutes):
    grid = Grid(cadence, anchor_local=anchor)
    after = resolve_wall_time(anchor.date(), anchor.time(), zone).instant + timedelta(minutes=after_minutes)
    assert next_slot(grid, after, zone) == _walk_to_first_slot_after(grid, after, zone)


def _walk_to_first_slot_after(grid, after, zone):
    """The oracle: step date by date from the anchor (slow, obviously right)."""
    anchor = grid.anchor_local
    for index in range(10_000):
        if grid.cadence is Cadence.DAILY:
            day = anchor.date() + timedelta(days=index)
        elif grid.cadence is Cadence.WEEKLY:
            day = anchor.date() + timedelta(weeks=index)
        else:
            year, month = divmod(anchor.month - 1 + index, 12)
            year += anchor.year
            last = (date(year + (month == 11), (month + 1) % 12 + 1, 1) - timedelta(days=1)).day
            day = date(year, month + 1, min(anchor.day, last))
        instant = resolve_wall_time(day, anchor.time(), zone).instant
        if instant > after:
            return instant
    raise AssertionError("the walk found no slot")


# -- issue 22: the first slot follows the last generation, and named days --------------------------------

MINUTE = timedelta(minutes=1)
NY = "America/New_York"


def test_round_up_lands_on_the_dispatchers_grid_and_keeps_an_instant_already_on_it():
    from models.timing.cadence import round_up

    assert round_up(datetime(2026, 6, 1, 12, 0, tzinfo=UTC), MINUTE) == datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    assert round_up(datetime(2026, 6, 1, 12, 0, 0, 1, tzinfo=UTC), MINUTE) == datetime(2026, 6, 1, 12, 1, tzinfo=UTC)
    assert round_up(datetime(2026, 6, 1, 12, 56, 1, tzinfo=UTC), timedelta(minutes=5)) == datetime(
        2026, 6, 1, 13, 0, tzinfo=UTC)


@pytest.mark.parametrize("cadence, last, now, first", [
    # a week after Monday 09:00 (13:00Z), enabled on Thursday: next Monday at the same wall time
    ("weekly", datetime(2026, 6, 1, 13, 0, tzinfo=UTC), datetime(2026, 6, 4, 12, 0, tzinfo=UTC),
     datetime(2026, 6, 8, 13, 0, tzinfo=UTC)),
    # across the fall-back change the wall time stays 09:00 (14:00Z in EST)
    ("weekly", datetime(2026, 10, 26, 13, 0, tzinfo=UTC), datetime(2026, 10, 29, 12, 0, tzinfo=UTC),
     datetime(2026, 11, 2, 14, 0, tzinfo=UTC)),
    # monthly from 31 January clamps to February's last day
    ("monthly", datetime(2027, 1, 31, 14, 0, tzinfo=UTC), datetime(2027, 2, 1, 12, 0, tzinfo=UTC),
     datetime(2027, 2, 28, 14, 0, tzinfo=UTC)),
    # elapsed cadences step in elapsed time from the generation, rounded up to the minute
    ("every_8_hours", datetime(2026, 6, 1, 12, 0, 30, tzinfo=UTC), datetime(2026, 6, 1, 13, 0, tzinfo=UTC),
     datetime(2026, 6, 1, 20, 1, tzinfo=UTC)),
    # never generated: one cadence after now
    ("daily", None, datetime(2026, 6, 1, 12, 0, tzinfo=UTC), datetime(2026, 6, 2, 12, 0, tzinfo=UTC)),
    # a first slot already past is due at the next pass
    ("daily", datetime(2026, 5, 1, 13, 0, tzinfo=UTC), datetime(2026, 6, 1, 12, 0, 10, tzinfo=UTC),
     datetime(2026, 6, 1, 12, 1, tzinfo=UTC)),
])
def test_first_grid_runs_one_cadence_after_the_last_generation_or_now(cadence, last, now, first):
    from models.timing.cadence import first_grid

    grid, found = first_grid(cadence, last_generation=last, now=now, zone=NY, dispatch_interval=MINUTE)
    assert found == first
    if last is not None and not grid.cadence.is_elapsed:  # the generation is the grid's anchor
        assert grid.anchor_local == to_local(last, NY).replace(tzinfo=None)


def test_named_grid_takes_the_named_parts_and_the_rest_from_the_default():
    from datetime import time

    from models.timing.cadence import named_grid

    now = datetime(2026, 6, 3, 12, 0, tzinfo=UTC)  # Wednesday 08:00 in New York
    default = datetime(2026, 6, 1, 9, 0)
    friday = named_grid("weekly", now=now, zone=NY, default_wall=default, weekday=4, wall_time=time(17, 30))
    assert next_slot(friday, now, NY) == datetime(2026, 6, 5, 21, 30, tzinfo=UTC)
    monday = named_grid("weekly", now=now, zone=NY, default_wall=default)
    assert next_slot(monday, now, NY) == datetime(2026, 6, 8, 13, 0, tzinfo=UTC)
    last_day = named_grid("monthly", now=datetime(2027, 2, 2, tzinfo=UTC), zone=NY, default_wall=default,
                          day_of_month=31)
    assert last_day.anchor_local == datetime(2027, 1, 31, 9, 0)
    assert slots_between(last_day, datetime(2027, 2, 2, tzinfo=UTC), datetime(2027, 5, 1, tzinfo=UTC), NY,
                         limit=5) == [datetime(2027, 2, 28, 14, 0, tzinfo=UTC), datetime(2027, 3, 31, 13, 0, tzinfo=UTC),
                                      datetime(2027, 4, 30, 13, 0, tzinfo=UTC)]
    daily = named_grid("daily", now=now, zone=NY, default_wall=default, wall_time=time(7, 0))
    assert next_slot(daily, now, NY) == datetime(2026, 6, 4, 11, 0, tzinfo=UTC)
    with pytest.raises(ValueError, match="elapsed time"):
        named_grid("hourly", now=now, zone=NY, default_wall=default)


def test_a_monthly_named_grid_anchors_on_the_last_such_day_on_or_before_today_in_the_zone():
    from models.timing.cadence import named_grid

    now = at(2026, 6, 3, 12)  # 08:00 on 3 June in New York
    default = datetime(2026, 1, 1, 9, 0)

    def anchor(day_of_month=None, when=now):
        return named_grid("monthly", now=when, zone=NY, default_wall=default, day_of_month=day_of_month).anchor_local

    assert anchor() == datetime(2026, 6, 1, 9, 0)  # the default's day, already come this month
    assert anchor(3) == datetime(2026, 6, 3, 9, 0)  # today is such a day
    assert anchor(4) == datetime(2026, 5, 4, 9, 0)  # not yet this month
    assert anchor(3, when=at(2026, 6, 3, 2)) == datetime(2026, 5, 3, 9, 0)  # 02:00Z is still 2 June in New York
    with pytest.raises(ValueError) as refused:
        anchor(32)
    assert str(refused.value) == "day of month 32 is not from 1 to 31"


ORDINALS = ("1st 2nd 3rd 4th 5th 6th 7th 8th 9th 10th 11th 12th 13th 14th 15th 16th 17th 18th 19th 20th 21st 22nd "
            "23rd 24th 25th 26th 27th 28th 29th 30th 31st").split()


@pytest.mark.parametrize("day", range(1, 32))
def test_every_day_of_the_month_reads_as_its_ordinal_and_only_29_to_31_warn_of_shorter_months(day):
    shorter = " (the last day in shorter months)" if day >= 29 else ""  # February has 28 days three years in four
    words = grid_in_words(calendar("monthly", 2026, 1, day, 9))
    assert words == f"Every month on the {ORDINALS[day - 1]} at 09:00{shorter}"


@pytest.mark.parametrize(("grid", "words"), [
    (Grid(Cadence.WEEKLY, anchor_local=datetime(2026, 6, 1, 9, 0)), "Every Monday at 09:00"),
    (Grid(Cadence.WEEKLY, anchor_local=datetime(2026, 6, 5, 17, 30)), "Every Friday at 17:30"),
    (Grid(Cadence.DAILY, anchor_local=datetime(2026, 6, 5, 7, 5)), "Every day at 07:05"),
    (Grid(Cadence.MONTHLY, anchor_local=datetime(2026, 6, 1, 9, 0)), "Every month on the 1st at 09:00"),
    (Grid(Cadence.MONTHLY, anchor_local=datetime(2026, 6, 12, 9, 0)), "Every month on the 12th at 09:00"),
    (Grid(Cadence.MONTHLY, anchor_local=datetime(2026, 6, 22, 9, 0)), "Every month on the 22nd at 09:00"),
    (Grid(Cadence.MONTHLY, anchor_local=datetime(2026, 1, 31, 18, 0)),
     "Every month on the 31st at 18:00 (the last day in shorter months)"),
    (elapsed("hourly", 2026, 6, 1, 12), "Every hour"),
    (elapsed("every_3_hours", 2026, 6, 1, 12), "Every 3 hours"),
    (elapsed("every_12_hours", 2026, 6, 1, 12), "Every 12 hours"),
])
def test_a_grid_reads_as_a_person_says_it(grid, words):
    assert grid_in_words(grid) == words
