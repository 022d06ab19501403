"""Send windows (quiet hours) in the contact's zone: parsing, and holding a step until it opens.

Every expected instant below is worked out by hand in the comment beside it.
New York is UTC-5 in winter (EST) and UTC-4 in summer (EDT); London UTC+0 (GMT) and +1 (BST);
Lord Howe +10:30 in winter and +11 in summer.
"""

from datetime import date, datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from models.timing.send_window import (
    InvalidSendWindow,
    SendWindow,
    Weekday,
    is_inside_window,
    parse_send_window,
    push_into_window,
)
from models.timing.wall_time import InvalidTimezone, resolve_wall_time

UTC = timezone.utc
NEW_YORK, LONDON, LORD_HOWE = "America/New_York", "Europe/London", "Australia/Lord_Howe"
WORKING_DAYS = ["mon", "tue", "wed", "thu", "fri"]
EVERY_DAY = WORKING_DAYS + ["sat", "sun"]


def at(*args):
    return datetime(*args, tzinfo=UTC)


def window(start, end, days=EVERY_DAY):
    return parse_send_window({"start": start, "end": end, "days": days})


OFFICE_HOURS = window("09:00", "20:00", WORKING_DAYS)


# --- inside and outside --------------------------------------------------------------------


def test_a_step_due_inside_the_window_goes_as_it_is():
    # Tuesday 2026-06-02 14:00 EDT.
    assert push_into_window(at(2026, 6, 2, 18, 0), OFFICE_HOURS, NEW_YORK) == (at(2026, 6, 2, 18, 0), None)


def test_a_step_due_at_ten_past_three_waits_until_nine_and_says_so():
    # Tuesday 03:10 EDT (07:10Z) → Tuesday 09:00 EDT (13:00Z).
    instant, note = push_into_window(at(2026, 6, 2, 7, 10), OFFICE_HOURS, NEW_YORK)
    assert instant == at(2026, 6, 2, 13, 0)
    assert note == (
        "Due 03:10 on Tuesday 2 June, outside the send window (Mon–Fri 09:00–20:00): "
        "held until the send window opens at 09:00 on Tuesday 2 June, America/New_York time."
    )


def test_the_window_is_open_at_its_start_and_closed_at_its_end():
    # Tuesday 09:00 EDT (13:00Z) goes; Tuesday 20:00 EDT (Wednesday 00:00Z) waits for Wednesday 09:00.
    assert push_into_window(at(2026, 6, 2, 13, 0), OFFICE_HOURS, NEW_YORK).note is None
    assert push_into_window(at(2026, 6, 3, 0, 0), OFFICE_HOURS, NEW_YORK).instant == at(2026, 6, 3, 13, 0)
    assert push_into_window(at(2026, 6, 2, 23, 59), OFFICE_HOURS, NEW_YORK).note is None  # 19:59


def test_a_step_due_on_saturday_with_a_working_week_window_waits_until_monday_nine():
    # Saturday 2026-06-06 11:00 EDT (15:00Z) → Monday 2026-06-08 09:00 EDT (13:00Z).
    instant, note = push_into_window(at(2026, 6, 6, 15, 0), OFFICE_HOURS, NEW_YORK)
    assert instant == at(2026, 6, 8, 13, 0)
    assert "Saturday 6 June" in note and "held until the send window opens at 09:00 on Monday 8 June" in note


def test_a_step_due_friday_evening_waits_over_the_weekend():
    # Friday 2026-06-05 20:30 EDT (Saturday 00:30Z) → Monday 09:00 EDT (13:00Z).
    assert push_into_window(at(2026, 6, 6, 0, 30), OFFICE_HOURS, NEW_YORK).instant == at(2026, 6, 8, 13, 0)


# --- across DST ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "due, send_window, zone, sent",
    [
        # New York springs forward on Sunday 2026-03-08.
        # Saturday 22:00 EST (Sunday 03:00Z) → Sunday 09:00 EDT (13:00Z): ten hours, not eleven.
        (at(2026, 3, 8, 3, 0), window("09:00", "20:00"), NEW_YORK, at(2026, 3, 8, 13, 0)),
        # Friday 21:00 EST (Saturday 02:00Z), working days → Monday 09:00 EDT (13:00Z).
        (at(2026, 3, 7, 2, 0), OFFICE_HOURS, NEW_YORK, at(2026, 3, 9, 13, 0)),
        # New York falls back on Sunday 2026-11-01.
        # Saturday 23:00 EDT (Sunday 03:00Z) → Sunday 09:00 EST (14:00Z).
        (at(2026, 11, 1, 3, 0), window("09:00", "20:00"), NEW_YORK, at(2026, 11, 1, 14, 0)),
        # London springs forward on Sunday 2026-03-29.
        # Friday 18:00 GMT, a 09:00–17:00 working week → Monday 09:00 BST (08:00Z).
        (at(2026, 3, 27, 18, 0), window("09:00", "17:00", WORKING_DAYS), LONDON, at(2026, 3, 30, 8, 0)),
        # London falls back on Sunday 2026-10-25.
        # Saturday 12:00 BST (11:00Z) → Monday 09:00 GMT (09:00Z).
        (at(2026, 10, 24, 11, 0), window("09:00", "17:00", WORKING_DAYS), LONDON, at(2026, 10, 26, 9, 0)),
        # Lord Howe falls back half an hour (+11 → +10:30) on Sunday 2026-04-05.
        # Saturday 20:00 +11 (09:00Z) → Sunday 09:00 +10:30 (Saturday 22:30Z).
        (at(2026, 4, 4, 9, 0), window("09:00", "17:00"), LORD_HOWE, at(2026, 4, 4, 22, 30)),
        # Lord Howe springs forward half an hour (+10:30 → +11) on Sunday 2026-10-04.
        # Saturday 20:00 +10:30 (09:30Z) → Sunday 09:00 +11 (Saturday 22:00Z).
        (at(2026, 10, 3, 9, 30), window("09:00", "17:00"), LORD_HOWE, at(2026, 10, 3, 22, 0)),
    ],
)
def test_a_held_step_opens_at_the_local_start_across_dst(due, send_window, zone, sent):
    assert push_into_window(due, send_window, zone).instant == sent


def test_a_window_opening_in_the_spring_gap_opens_when_the_gap_ends_and_says_so():
    # New York, 02:30–06:00. On Sunday 2026-03-08 02:30 does not exist: the window opens at
    # 03:30 EDT (07:30Z). 00:10 EST (05:10Z) and 03:10 EDT (07:10Z) both wait for it.
    night = window("02:30", "06:00")
    instant, note = push_into_window(at(2026, 3, 8, 5, 10), night, NEW_YORK)
    assert instant == at(2026, 3, 8, 7, 30)
    assert "opens at 03:30 on Sunday 8 March (02:30 does not exist that day: the clocks spring forward)" in note
    assert push_into_window(at(2026, 3, 8, 7, 10), night, NEW_YORK).instant == at(2026, 3, 8, 7, 30)
    assert push_into_window(at(2026, 3, 8, 7, 40), night, NEW_YORK) == (at(2026, 3, 8, 7, 40), None)


@pytest.mark.parametrize(
    "due, send_window, zone, sent",
    [
        # London springs forward 01:00 → 02:00 GMT on 2026-03-29: a Sunday window at 01:15 opens at
        # 02:15 BST (01:15Z); due 00:30 GMT.
        (at(2026, 3, 29, 0, 30), window("01:15", "05:00", ["sun"]), LONDON, at(2026, 3, 29, 1, 15)),
        # Lord Howe springs forward 02:00 → 02:30 on 2026-10-04: 02:15 opens at 02:45 +11
        # (Saturday 15:45Z); due 01:00 +10:30 (Saturday 14:30Z).
        (at(2026, 10, 3, 14, 30), window("02:15", "09:00"), LORD_HOWE, at(2026, 10, 3, 15, 45)),
    ],
)
def test_an_opening_in_the_gap_moves_forward_by_the_gap_in_other_zones(due, send_window, zone, sent):
    instant, note = push_into_window(due, send_window, zone)
    assert instant == sent and "spring forward" in note


def test_a_window_the_gap_keeps_shut_waits_for_the_next_week():
    # New York, Sundays 02:30–03:15. On 2026-03-08 it would open at 03:30 EDT, after it closes
    # at 03:15 EDT, so it stays shut; the next Sunday, 03-15, it opens at 02:30 EDT (06:30Z).
    due = at(2026, 3, 7, 17, 0)  # Saturday 12:00 EST
    assert push_into_window(due, window("02:30", "03:15", ["sun"]), NEW_YORK).instant == at(2026, 3, 15, 6, 30)


def test_an_overnight_window_holds_both_halves_of_the_repeated_hour():
    # New York, 22:00–06:00. Saturday's night runs from 22:00 EDT (Sunday 02:00Z) to Sunday
    # 06:00 EST (11:00Z), nine hours. The second 01:30 (EST, 06:30Z) is inside it; 06:00 EST is
    # not, and waits for Sunday 22:00 EST (Monday 03:00Z).
    nights = window("22:00", "06:00")
    assert push_into_window(at(2026, 11, 1, 5, 30), nights, NEW_YORK).note is None
    assert push_into_window(at(2026, 11, 1, 6, 30), nights, NEW_YORK).note is None
    assert push_into_window(at(2026, 11, 1, 11, 0), nights, NEW_YORK).instant == at(2026, 11, 2, 3, 0)


def test_an_edge_in_the_repeated_hour_is_its_first_occurrence():
    # London falls back 02:00 BST → 01:00 GMT on Sunday 2026-10-25; 01:30 happens at 00:30Z and 01:30Z.
    # 01:30–08:00 opens at the first, 00:30Z: the second 01:45 (01:45Z) is inside; 00:10 BST waits for 00:30Z.
    early = window("01:30", "08:00")
    assert push_into_window(at(2026, 10, 25, 1, 45), early, LONDON).note is None
    assert push_into_window(at(2026, 10, 24, 23, 10), early, LONDON).instant == at(2026, 10, 25, 0, 30)
    # 00:00–01:30 closes at the first, 00:30Z: 01:00 GMT (01:00Z) waits for Monday 00:00 GMT.
    late = window("00:00", "01:30")
    assert push_into_window(at(2026, 10, 25, 1, 0), late, LONDON).instant == at(2026, 10, 26, 0, 0)


# --- overnight, all day, midnight ----------------------------------------------------------

FRIDAY_NIGHTS = window("22:00", "06:00", ["fri"])


@pytest.mark.parametrize(
    "due, sent",
    [
        # Saturday 2026-06-06 03:00 EDT (07:00Z) is Friday's night: inside, though Saturday is not listed.
        (at(2026, 6, 6, 7, 0), at(2026, 6, 6, 7, 0)),
        # Friday 03:00 EDT (07:00Z) would be Thursday's night → Friday 22:00 EDT (Saturday 02:00Z).
        (at(2026, 6, 5, 7, 0), at(2026, 6, 6, 2, 0)),
        # Saturday 06:00 EDT (10:00Z), the night is over → next Friday 22:00 EDT (2026-06-13 02:00Z).
        (at(2026, 6, 6, 10, 0), at(2026, 6, 13, 2, 0)),
    ],
)
def test_an_overnight_window_belongs_to_the_day_it_opens(due, sent):
    assert push_into_window(due, FRIDAY_NIGHTS, NEW_YORK).instant == sent
    assert is_inside_window(due, FRIDAY_NIGHTS, NEW_YORK) is (due == sent)


def test_zero_to_twenty_four_is_all_day_on_the_listed_days():
    weekends = window("00:00", "24:00", ["sat", "sun"])
    # Wednesday 2026-06-03 12:00 EDT → Saturday 00:00 EDT (04:00Z).
    assert push_into_window(at(2026, 6, 3, 16, 0), weekends, NEW_YORK).instant == at(2026, 6, 6, 4, 0)
    # Sunday 23:59 EDT (Monday 03:59Z) is inside; Monday 00:00 EDT waits for the next Saturday.
    assert is_inside_window(at(2026, 6, 8, 3, 59), weekends, NEW_YORK)
    assert push_into_window(at(2026, 6, 8, 4, 0), weekends, NEW_YORK).instant == at(2026, 6, 13, 4, 0)


def test_a_window_ending_at_twenty_four_closes_at_midnight():
    evenings = window("18:00", "24:00")
    # 23:59 EDT (03:59Z) is inside; 00:00 EDT (04:00Z) waits for 18:00 EDT (22:00Z).
    assert is_inside_window(at(2026, 6, 3, 3, 59), evenings, NEW_YORK)
    assert push_into_window(at(2026, 6, 3, 4, 0), evenings, NEW_YORK).instant == at(2026, 6, 3, 22, 0)


# --- reading the API's shape ---------------------------------------------------------------


@pytest.mark.parametrize(
    "given_shape, stored_shape, in_words",
    [
        ({"start": "09:00", "end": "20:00", "days": WORKING_DAYS}, None, "Mon–Fri 09:00–20:00"),
        ({"start": "22:00", "end": "06:00", "days": ["fri"]}, None, "Fri 22:00–06:00 the next day"),
        ({"start": "00:00", "end": "24:00", "days": ["sun", "sat"]},
         {"start": "00:00", "end": "24:00", "days": ["sat", "sun"]}, "Sat, Sun all day"),
        ({"start": "18:00", "end": "24:00", "days": EVERY_DAY}, None, "every day 18:00–24:00"),
        # Midnight as an end reads the same either way; it is given back as 24:00.
        ({"start": "22:00", "end": "00:00", "days": ["mon", "wed", "fri"]},
         {"start": "22:00", "end": "24:00", "days": ["mon", "wed", "fri"]}, "Mon, Wed, Fri 22:00–24:00"),
    ],
)
def test_a_window_reads_from_the_api_and_gives_the_same_shape_back(given_shape, stored_shape, in_words):
    parsed = parse_send_window(given_shape)
    assert parsed.as_dict() == (stored_shape or given_shape)
    assert parsed.in_words == in_words
    assert parse_send_window(parsed.as_dict()) == parsed


GOOD = {"start": "09:00", "end": "20:00", "days": WORKING_DAYS}


@pytest.mark.parametrize(
    "shape, part, message",
    [
        ("09:00-20:00", None, "is an object such as"),
        (None, None, "is an object such as"),
        ({**GOOD, "zone": "Europe/Paris"}, "zone", "not part of a send window"),
        ({"start": "09:00", "end": "20:00"}, "days", "has no days"),
        ({"end": "20:00", "days": WORKING_DAYS}, "start", "has no start"),
        ({**GOOD, "start": "9:00"}, "start", "HH:MM on a 24-hour clock"),
        ({**GOOD, "start": "25:00"}, "start", "not a time of day"),
        ({**GOOD, "start": "09:60"}, "start", "not a time of day"),
        ({**GOOD, "start": "09:00:00"}, "start", "not a time of day"),
        ({**GOOD, "start": 900}, "start", "not a time of day"),
        ({**GOOD, "start": "24:00"}, "start", "opens at midnight starts at 00:00"),
        ({**GOOD, "end": "24:01"}, "end", "not a time of day"),
        ({**GOOD, "end": ""}, "end", "not a time of day"),
        ({**GOOD, "end": "09:00"}, "end", "opens and closes at 09:00.*00:00 to 24:00"),
        ({**GOOD, "start": "00:00", "end": "00:00"}, "end", "opens and closes at 00:00"),
        ({**GOOD, "days": []}, "days", "at least one day"),
        ({**GOOD, "days": "mon"}, "days", "is a list of days"),
        ({**GOOD, "days": None}, "days", "is a list of days"),
        ({**GOOD, "days": ["Mon"]}, "days", "'Mon' is not a day of the week; write each as one of mon, tue"),
        ({**GOOD, "days": ["monday"]}, "days", "not a day of the week"),
        ({**GOOD, "days": [1]}, "days", "not a day of the week"),
        ({**GOOD, "days": [["mon"]]}, "days", "not a day of the week"),
        ({**GOOD, "days": ["mon", "tue", "mon"]}, "days", "'mon' is listed twice"),
    ],
)
def test_a_bad_window_is_refused_naming_the_part_that_is_wrong(shape, part, message):
    with pytest.raises(InvalidSendWindow, match=message) as refused:
        parse_send_window(shape)
    assert refused.value.part == part


def test_a_window_built_by_hand_is_held_to_the_same_rules():
    with pytest.raises(InvalidSendWindow, match="opens and closes at 09:00"):
        SendWindow(start=time(9), end=time(9), days=frozenset({Weekday.MON}))
    with pytest.raises(InvalidSendWindow, match="at least one day"):
        SendWindow(start=time(9), end=time(17), days=frozenset())
    with pytest.raises(InvalidSendWindow, match="whole minutes"):
        SendWindow(start=time(9, 0, 30), end=time(17), days=frozenset({Weekday.MON}))


# --- what callers must give ----------------------------------------------------------------


@pytest.mark.parametrize("check", [push_into_window, is_inside_window])
def test_a_naive_instant_is_refused(check):
    with pytest.raises(ValueError, match="naive"):
        check(datetime(2026, 6, 2, 9, 0), OFFICE_HOURS, NEW_YORK)


@pytest.mark.parametrize("check", [push_into_window, is_inside_window])
@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "", None])
def test_a_garbage_zone_raises_invalid_timezone_for_the_caller_to_fall_back(check, zone):
    with pytest.raises(InvalidTimezone):
        check(at(2026, 6, 2, 9, 0), OFFICE_HOURS, zone)


# --- the property --------------------------------------------------------------------------

ZONES = [NEW_YORK, LONDON, LORD_HOWE, "Pacific/Chatham", "America/Havana", "Asia/Kolkata", "UTC"]


def _offset_changes(zone_name: str) -> list[datetime]:
    """The hours of 2026 at which the zone's offset changed, to aim examples at."""
    zone = ZoneInfo(zone_name)
    hours = [at(2026, 1, 1) + timedelta(hours=n) for n in range(366 * 24)]
    return [b for a, b in zip(hours, hours[1:]) if a.astimezone(zone).utcoffset() != b.astimezone(zone).utcoffset()]


CLOCK_CHANGES = sorted({change for zone in ZONES for change in _offset_changes(zone)})
ANY_TIME_IN_2026 = st.integers(0, 365 * 24 * 60).map(lambda minutes: at(2026, 1, 1) + timedelta(minutes=minutes))
NEAR_A_CLOCK_CHANGE = st.tuples(st.sampled_from(CLOCK_CHANGES), st.integers(-3 * 24 * 60, 3 * 24 * 60)).map(
    lambda pair: pair[0] + timedelta(minutes=pair[1])
)
# Quarter hours meet the half-hour and 45-minute offsets and gaps of Lord Howe and Chatham.
QUARTER_HOURS = st.integers(0, 95).map(lambda n: time(n // 4, n % 4 * 15))
WINDOWS = st.tuples(QUARTER_HOURS, QUARTER_HOURS, st.frozensets(st.sampled_from(list(Weekday)), min_size=1)).filter(
    lambda edges_and_days: edges_and_days[0] != edges_and_days[1] or edges_and_days[0] == time(0)  # 00:00–24:00
).map(lambda edges_and_days: SendWindow(*edges_and_days))


def _openings_by_definition(send_window: SendWindow, zone: str, first: date, last: date):
    """Every (open, close) from ``first`` to ``last``, straight from the module's definition."""
    spans = []
    day = first
    while day <= last:
        if Weekday(day.weekday()) in send_window.days:
            opens = resolve_wall_time(day, send_window.start, zone).instant
            closing_day = day + timedelta(days=1) if send_window.end <= send_window.start else day
            closes = resolve_wall_time(closing_day, send_window.end, zone).instant
            spans.append((opens, closes))
        day += timedelta(days=1)
    return spans


# Each example walks at most two weeks of minutes; a generous deadline still catches a runaway
# loop without flaking on a busy machine.
@settings(max_examples=300, deadline=timedelta(seconds=5))
@given(zone=st.sampled_from(ZONES), send_window=WINDOWS, due=st.one_of(ANY_TIME_IN_2026, NEAR_A_CLOCK_CHANGE))
# Random draws seldom meet a window that the gap keeps shut for a day; always try one.
@example(zone=NEW_YORK, send_window=window("02:30", "03:15", ["sun"]), due=at(2026, 3, 7, 17, 0))
def test_the_pushed_instant_is_the_earliest_minute_at_or_after_the_due_time_inside_the_window(zone, send_window, due):
    sent, note = push_into_window(due, send_window, zone)
    local = ZoneInfo(zone)
    first_day = due.astimezone(local).date() - timedelta(days=1)
    last_day = sent.astimezone(local).date() + timedelta(days=1)
    spans = _openings_by_definition(send_window, zone, first_day, last_day)

    def inside(moment):
        return any(opens <= moment < closes for opens, closes in spans)

    assert sent >= due
    assert inside(sent) and is_inside_window(sent, send_window, zone)
    assert (note is None) is (sent == due)
    minute = due
    while minute < sent:
        assert not inside(minute), f"{minute} is inside {send_window.in_words} but {sent} was chosen"
        minute += timedelta(minutes=1)


def test_a_window_built_by_hand_names_the_part_it_refuses_and_reads_its_days_as_weekdays():
    for built, part, message in [
        (lambda: SendWindow(start=time(9), end=time(17), days=frozenset()), "days",
         "A send window needs at least one day it is open on."),
        (lambda: SendWindow(start=time(9, 0, 30), end=time(17), days={0}), "start",
         "A send window's start is a wall time in whole minutes, such as 09:00."),
        (lambda: SendWindow(start=time(9), end=time(17, tzinfo=UTC), days={0}), "end",
         "A send window's end is a wall time in whole minutes, such as 09:00."),
        (lambda: SendWindow(start=time(9), end=time(9), days={0}), "end",
         "The window opens and closes at 09:00, which could mean never or always; "
         "for any time of day write 00:00 to 24:00."),
    ]:
        with pytest.raises(InvalidSendWindow) as refused:
            built()
        assert (refused.value.part, refused.value.message, str(refused.value)) == (part, message, message)
    assert SendWindow(start=time(9), end=time(17), days={0, 4}).as_dict()["days"] == ["mon", "fri"]


def test_a_bad_time_of_day_is_refused_in_full_words():
    hint = "; a window that opens at midnight starts at 00:00"
    for start, said in [("24:00", hint), ("25:00", "")]:
        with pytest.raises(InvalidSendWindow) as refused:
            window(start, "20:00")
        assert refused.value.message == (
            f"{start!r} is not a time of day; write it as HH:MM on a 24-hour clock, for example 09:00{said}.")


def test_three_days_in_a_row_read_as_a_range():
    assert window("09:00", "17:00", ["mon", "tue", "wed"]).in_words == "Mon–Wed 09:00–17:00"
    assert window("09:00", "17:00", ["mon", "tue"]).in_words == "Mon, Tue 09:00–17:00"


def test_a_window_the_gap_pushes_exactly_to_its_closing_is_shut_that_day():
    # 2026-03-08 is New York's spring-forward day: 02:30 does not exist and opens at 03:30, the closing; shut.
    # 01:00 EST is 06:00 UTC; the next opening is Monday 02:30 EDT, 06:30 UTC.
    pushed = push_into_window(at(2026, 3, 8, 6, 0), window("02:30", "03:30"), NEW_YORK)
    assert pushed.instant == at(2026, 3, 9, 6, 30)


def test_a_night_window_still_open_from_yesterday_in_the_contacts_zone_holds_the_step():
    # Tuesday 17:00 PST (UTC-8) is already Wednesday 01:00 UTC; the window opened Monday 20:00 and closes Tuesday 18:00.
    due = at(2026, 1, 14, 1, 0)
    night = window("20:00", "18:00")
    assert is_inside_window(due, night, "America/Los_Angeles")
    assert push_into_window(due, night, "America/Los_Angeles") == (due, None)
