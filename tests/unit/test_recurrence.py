"""Recurring rules in a workspace's zone: DST, the RRULE parts, bounds, queries (no database).

Every expected instant below is worked out by hand from the zone's rules for 2026:
- New York: 02:00 EST -> 03:00 EDT on 8 March (07:00Z); 02:00 EDT -> 01:00 EST on 1 November (06:00Z).
- London: 01:00 GMT -> 02:00 BST on 29 March (01:00Z); 02:00 BST -> 01:00 GMT on 25 October (01:00Z).
- Lord Howe (+10:30 / +11): 02:00 -> 01:30 on 5 April (15:00Z the 4th); 02:00 -> 02:30 on 4 October
  (15:30Z the 3rd).
- Chatham (+12:45 / +13:45): 03:45 -> 02:45 on 5 April (14:00Z the 4th); 02:45 -> 03:45 on 27 September
  (14:00Z the 26th).
"""

import time as stopwatch
from datetime import date, datetime, timedelta, timezone

import pytest
from dateutil.rrule import rrulestr
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from models.timing.recurrence import (
    SEARCH_SPAN,
    Frequency,
    OccurrenceNote,
    RecurrenceError,
    parse_recurrence,
)
from models.timing.wall_time import InvalidTimezone, resolve_wall_time

UTC = timezone.utc
SHIFTED = OccurrenceNote.SHIFTED_BY_DST_GAP
FIRST = OccurrenceNote.FIRST_OF_REPEATED_HOUR
LONG_AGO = datetime(1970, 1, 1, tzinfo=UTC)


def at(*args):
    return datetime(*args, tzinfo=UTC)


def first(rrule, starts_local, zone, count, **fields):
    """The rule's first ``count`` occurrences as (slot, instant, note)."""
    rule = parse_recurrence(rrule, starts_local=starts_local, zone=zone, **fields)
    return [(o.slot, o.instant, o.note) for o in rule.next_occurrences(LONG_AGO, count)]


# --- DAILY and coarser keep the wall time across DST -------------------------------------------------


def test_daily_0230_in_new_york_fires_at_0330_edt_on_the_spring_forward_sunday():
    rule = parse_recurrence("FREQ=DAILY", starts_local=datetime(2026, 3, 7, 2, 30), zone="America/New_York")
    found = rule.next_occurrences(LONG_AGO, 3)
    assert [(o.slot, o.instant, o.note) for o in found] == [
        ("2026-03-07T02:30", at(2026, 3, 7, 7, 30), None),  # 02:30 EST
        ("2026-03-08T02:30", at(2026, 3, 8, 7, 30), SHIFTED),  # 02:30 does not exist: 03:30 EDT
        ("2026-03-09T02:30", at(2026, 3, 9, 6, 30), None),  # 02:30 EDT
    ]
    assert found[1].local.isoformat() == "2026-03-08T03:30:00-04:00"


def test_daily_0130_in_new_york_fires_once_on_the_fall_back_sunday_at_the_first_0130():
    rule = parse_recurrence("FREQ=DAILY", starts_local=datetime(2026, 10, 31, 1, 30), zone="America/New_York")
    found = rule.next_occurrences(LONG_AGO, 3)
    assert [(o.slot, o.instant, o.note) for o in found] == [
        ("2026-10-31T01:30", at(2026, 10, 31, 5, 30), None),  # EDT
        ("2026-11-01T01:30", at(2026, 11, 1, 5, 30), FIRST),  # 01:30 EDT, not 01:30 EST (06:30Z)
        ("2026-11-02T01:30", at(2026, 11, 2, 6, 30), None),  # EST
    ]
    assert found[1].local.isoformat() == "2026-11-01T01:30:00-04:00"


def test_daily_0900_stays_at_0900_on_both_sides_of_both_new_york_transitions():
    rule = parse_recurrence("FREQ=DAILY", starts_local=datetime(2026, 1, 1, 9, 0), zone="America/New_York")
    spring = rule.occurrences_between(at(2026, 3, 7), at(2026, 3, 9))
    fall = rule.occurrences_between(at(2026, 10, 31), at(2026, 11, 2))
    assert [o.instant for o in spring] == [at(2026, 3, 7, 14, 0), at(2026, 3, 8, 13, 0)]
    assert [o.instant for o in fall] == [at(2026, 10, 31, 13, 0), at(2026, 11, 1, 14, 0)]
    assert {o.local.strftime("%H:%M") for o in spring + fall} == {"09:00"}
    assert all(o.note is None for o in spring + fall)


@pytest.mark.parametrize(
    "rrule, starts_local, zone, expected",
    [
        # London, Sundays at 01:30: inside the spring gap (01:00 -> 02:00), then repeated in the fall.
        ("FREQ=WEEKLY;BYDAY=SU", datetime(2026, 3, 22, 1, 30), "Europe/London", [
            ("2026-03-22T01:30", at(2026, 3, 22, 1, 30), None),  # GMT
            ("2026-03-29T01:30", at(2026, 3, 29, 1, 30), SHIFTED),  # shown 02:30 BST
            ("2026-04-05T01:30", at(2026, 4, 5, 0, 30), None),  # BST
        ]),
        ("FREQ=WEEKLY", datetime(2026, 10, 18, 1, 30), "Europe/London", [
            ("2026-10-18T01:30", at(2026, 10, 18, 0, 30), None),  # BST
            ("2026-10-25T01:30", at(2026, 10, 25, 0, 30), FIRST),  # the BST 01:30, not the GMT one
            ("2026-11-01T01:30", at(2026, 11, 1, 1, 30), None),  # GMT
        ]),
        # Lord Howe moves by 30 minutes: 02:15 falls in the spring gap, 01:45 is repeated in April.
        ("FREQ=DAILY", datetime(2026, 10, 3, 2, 15), "Australia/Lord_Howe", [
            ("2026-10-03T02:15", at(2026, 10, 2, 15, 45), None),  # +10:30
            ("2026-10-04T02:15", at(2026, 10, 3, 15, 45), SHIFTED),  # shown 02:45 +11
            ("2026-10-05T02:15", at(2026, 10, 4, 15, 15), None),  # +11
        ]),
        ("FREQ=DAILY", datetime(2026, 4, 4, 1, 45), "Australia/Lord_Howe", [
            ("2026-04-04T01:45", at(2026, 4, 3, 14, 45), None),  # +11
            ("2026-04-05T01:45", at(2026, 4, 4, 14, 45), FIRST),  # the +11 one
            ("2026-04-06T01:45", at(2026, 4, 5, 15, 15), None),  # +10:30
        ]),
        # Chatham, Sundays at 03:00: in the gap (02:45 -> 03:45) in September, repeated in April.
        ("FREQ=WEEKLY;BYDAY=SU", datetime(2026, 9, 20, 3, 0), "Pacific/Chatham", [
            ("2026-09-20T03:00", at(2026, 9, 19, 14, 15), None),  # +12:45
            ("2026-09-27T03:00", at(2026, 9, 26, 14, 15), SHIFTED),  # shown 04:00 +13:45
            ("2026-10-04T03:00", at(2026, 10, 3, 13, 15), None),  # +13:45
        ]),
        ("FREQ=WEEKLY;BYDAY=SU", datetime(2026, 3, 29, 3, 0), "Pacific/Chatham", [
            ("2026-03-29T03:00", at(2026, 3, 28, 13, 15), None),  # +13:45
            ("2026-04-05T03:00", at(2026, 4, 4, 13, 15), FIRST),  # the +13:45 one
            ("2026-04-12T03:00", at(2026, 4, 11, 14, 15), None),  # +12:45
        ]),
    ],
    ids=["london-weekly-spring", "london-weekly-fall", "lord-howe-daily-spring", "lord-howe-daily-fall",
         "chatham-weekly-spring", "chatham-weekly-fall"],
)
def test_daily_and_weekly_rules_keep_the_wall_time_across_gap_and_overlap_days(rrule, starts_local, zone, expected):
    assert first(rrule, starts_local, zone, 3) == expected


def test_the_shifted_occurrence_shows_the_wall_time_it_moved_to():
    rule = parse_recurrence("FREQ=WEEKLY;BYDAY=SU", starts_local=datetime(2026, 9, 27, 3, 0), zone="Pacific/Chatham")
    assert rule.first_occurrence().local.isoformat() == "2026-09-27T04:00:00+13:45"


def test_two_wall_times_that_resolve_to_one_instant_are_one_occurrence():
    # Samoa skipped 30 December 2011 (-10 -> +14): its 09:00 moves forward by the whole day,
    # onto the 31st's 09:00, which is then the same instant and not a second occurrence.
    assert first("FREQ=DAILY", datetime(2011, 12, 29, 9, 0), "Pacific/Apia", 3) == [
        ("2011-12-29T09:00", at(2011, 12, 29, 19, 0), None),
        ("2011-12-30T09:00", at(2011, 12, 30, 19, 0), SHIFTED),
        ("2012-01-01T09:00", at(2011, 12, 31, 19, 0), None),
    ]


# --- HOURLY steps in elapsed time ---------------------------------------------------------------


@pytest.mark.parametrize(
    "rrule, starts_local, zone, expected",
    [
        ("FREQ=HOURLY", datetime(2026, 3, 8, 0, 0), "America/New_York", [
            (at(2026, 3, 8, 5, 0), "2026-03-08T00:00:00-05:00"),
            (at(2026, 3, 8, 6, 0), "2026-03-08T01:00:00-05:00"),
            (at(2026, 3, 8, 7, 0), "2026-03-08T03:00:00-04:00"),  # 02:00 never happens
            (at(2026, 3, 8, 8, 0), "2026-03-08T04:00:00-04:00"),
        ]),
        ("FREQ=HOURLY", datetime(2026, 11, 1, 0, 0), "America/New_York", [
            (at(2026, 11, 1, 4, 0), "2026-11-01T00:00:00-04:00"),
            (at(2026, 11, 1, 5, 0), "2026-11-01T01:00:00-04:00"),
            (at(2026, 11, 1, 6, 0), "2026-11-01T01:00:00-05:00"),  # 01:00 again, an hour later
            (at(2026, 11, 1, 7, 0), "2026-11-01T02:00:00-05:00"),
        ]),
        ("FREQ=HOURLY;INTERVAL=3", datetime(2026, 3, 28, 22, 0), "Europe/London", [
            (at(2026, 3, 28, 22, 0), "2026-03-28T22:00:00+00:00"),
            (at(2026, 3, 29, 1, 0), "2026-03-29T02:00:00+01:00"),
            (at(2026, 3, 29, 4, 0), "2026-03-29T05:00:00+01:00"),
            (at(2026, 3, 29, 7, 0), "2026-03-29T08:00:00+01:00"),
        ]),
        ("FREQ=HOURLY", datetime(2026, 10, 25, 0, 0), "Europe/London", [
            (at(2026, 10, 24, 23, 0), "2026-10-25T00:00:00+01:00"),
            (at(2026, 10, 25, 0, 0), "2026-10-25T01:00:00+01:00"),
            (at(2026, 10, 25, 1, 0), "2026-10-25T01:00:00+00:00"),
            (at(2026, 10, 25, 2, 0), "2026-10-25T02:00:00+00:00"),
        ]),
        ("FREQ=HOURLY", datetime(2026, 4, 5, 0, 0), "Australia/Lord_Howe", [
            (at(2026, 4, 4, 13, 0), "2026-04-05T00:00:00+11:00"),
            (at(2026, 4, 4, 14, 0), "2026-04-05T01:00:00+11:00"),
            (at(2026, 4, 4, 15, 0), "2026-04-05T01:30:00+10:30"),  # half an hour back
            (at(2026, 4, 4, 16, 0), "2026-04-05T02:30:00+10:30"),
        ]),
        ("FREQ=HOURLY", datetime(2026, 10, 4, 1, 0), "Australia/Lord_Howe", [
            (at(2026, 10, 3, 14, 30), "2026-10-04T01:00:00+10:30"),
            (at(2026, 10, 3, 15, 30), "2026-10-04T02:30:00+11:00"),  # half an hour forward
            (at(2026, 10, 3, 16, 30), "2026-10-04T03:30:00+11:00"),
            (at(2026, 10, 3, 17, 30), "2026-10-04T04:30:00+11:00"),
        ]),
        ("FREQ=HOURLY", datetime(2026, 9, 27, 1, 0), "Pacific/Chatham", [
            (at(2026, 9, 26, 12, 15), "2026-09-27T01:00:00+12:45"),
            (at(2026, 9, 26, 13, 15), "2026-09-27T02:00:00+12:45"),
            (at(2026, 9, 26, 14, 15), "2026-09-27T04:00:00+13:45"),
            (at(2026, 9, 26, 15, 15), "2026-09-27T05:00:00+13:45"),
        ]),
        ("FREQ=HOURLY", datetime(2026, 4, 5, 2, 0), "Pacific/Chatham", [
            (at(2026, 4, 4, 12, 15), "2026-04-05T02:00:00+13:45"),
            (at(2026, 4, 4, 13, 15), "2026-04-05T03:00:00+13:45"),
            (at(2026, 4, 4, 14, 15), "2026-04-05T03:00:00+12:45"),
            (at(2026, 4, 4, 15, 15), "2026-04-05T04:00:00+12:45"),
        ]),
    ],
    ids=["new-york-spring", "new-york-fall", "london-every-3h-spring", "london-fall", "lord-howe-fall",
         "lord-howe-spring", "chatham-spring", "chatham-fall"],
)
def test_hourly_rules_step_in_elapsed_time_across_both_transitions(rrule, starts_local, zone, expected):
    rule = parse_recurrence(rrule, starts_local=starts_local, zone=zone)
    found = rule.next_occurrences(LONG_AGO, 4)
    assert [(o.instant, o.local.isoformat()) for o in found] == expected
    assert [o.slot for o in found] == [f"{instant:%Y-%m-%dT%H:%M}Z" for instant, _ in expected]
    assert {b.instant - a.instant for a, b in zip(found, found[1:])} == {timedelta(hours=rule.interval)}
    assert all(o.note is None for o in found)


def test_an_hourly_rule_reads_byday_on_the_workspaces_dates():
    # Mondays in Chatham (+12:45 in June) begin on Sunday 11:15 UTC.
    assert [o.instant for o in parse_recurrence(
        "FREQ=HOURLY;INTERVAL=6;BYDAY=MO", starts_local=datetime(2026, 6, 1, 0, 0), zone="Pacific/Chatham",
    ).next_occurrences(LONG_AGO, 5)] == [
        at(2026, 5, 31, 11, 15), at(2026, 5, 31, 17, 15), at(2026, 5, 31, 23, 15), at(2026, 6, 1, 5, 15),
        at(2026, 6, 7, 11, 15),  # the next Monday
    ]


def test_an_hourly_rule_with_count_counts_only_what_its_filters_let_through():
    rule = parse_recurrence("FREQ=HOURLY;INTERVAL=12;BYDAY=SA,SU;COUNT=5", starts_local=datetime(2026, 6, 5, 9, 0),
                            zone="Europe/London")
    assert [o.instant for o in rule.next_occurrences(LONG_AGO, 10)] == [
        at(2026, 6, 6, 8, 0), at(2026, 6, 6, 20, 0), at(2026, 6, 7, 8, 0), at(2026, 6, 7, 20, 0),
        at(2026, 6, 13, 8, 0),
    ]
    assert rule.occurrences_between(at(2026, 6, 7), at(2026, 6, 30))[-1].instant == at(2026, 6, 13, 8, 0)


# --- What people ask for ------------------------------------------------------------------------


def test_last_friday_of_the_month_at_1730():
    assert [instant for _, instant, _ in first("FREQ=MONTHLY;BYDAY=-1FR", datetime(2026, 1, 1, 17, 30),
                                               "America/New_York", 5)] == [
        at(2026, 1, 30, 22, 30), at(2026, 2, 27, 22, 30),
        at(2026, 3, 27, 21, 30), at(2026, 4, 24, 21, 30), at(2026, 5, 29, 21, 30),  # EDT
    ]


def test_weekdays_at_0800_skip_the_weekend_and_keep_0800_across_the_london_spring_forward():
    assert [instant for _, instant, _ in first("FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR", datetime(2026, 3, 27, 8, 0),
                                               "Europe/London", 6)] == [
        at(2026, 3, 27, 8, 0),  # Friday, GMT
        at(2026, 3, 30, 7, 0), at(2026, 3, 31, 7, 0), at(2026, 4, 1, 7, 0), at(2026, 4, 2, 7, 0),  # BST
        at(2026, 4, 3, 7, 0),
    ]


def test_every_tuesday_at_9_for_12_weeks():
    rule = parse_recurrence("FREQ=WEEKLY;BYDAY=TU;COUNT=12", starts_local=datetime(2026, 2, 24, 9, 0),
                            zone="America/New_York")
    assert [o.instant for o in rule.next_occurrences(LONG_AGO, 20)] == [
        at(2026, 2, 24, 14, 0), at(2026, 3, 3, 14, 0),  # EST
        at(2026, 3, 10, 13, 0), at(2026, 3, 17, 13, 0), at(2026, 3, 24, 13, 0), at(2026, 3, 31, 13, 0),
        at(2026, 4, 7, 13, 0), at(2026, 4, 14, 13, 0), at(2026, 4, 21, 13, 0), at(2026, 4, 28, 13, 0),
        at(2026, 5, 5, 13, 0), at(2026, 5, 12, 13, 0),
    ]
    assert rule.has_occurrence_after(at(2026, 5, 12, 12, 59))
    assert not rule.has_occurrence_after(at(2026, 5, 12, 13, 0))


def test_bymonthday_31_skips_the_months_without_a_31st():
    assert [slot for slot, _, _ in first("FREQ=MONTHLY;BYMONTHDAY=31", datetime(2026, 1, 1, 9, 0),
                                         "Europe/London", 7)] == [
        "2026-01-31T09:00", "2026-03-31T09:00", "2026-05-31T09:00", "2026-07-31T09:00", "2026-08-31T09:00",
        "2026-10-31T09:00", "2026-12-31T09:00",
    ]


def test_bymonthday_minus_1_lands_on_the_last_day_of_every_month():
    assert [instant for _, instant, _ in first("FREQ=MONTHLY;BYMONTHDAY=-1", datetime(2027, 1, 1, 9, 0), "UTC", 16)][
        :4] == [at(2027, 1, 31, 9, 0), at(2027, 2, 28, 9, 0), at(2027, 3, 31, 9, 0), at(2027, 4, 30, 9, 0)]
    assert [instant for _, instant, _ in first("FREQ=MONTHLY;BYMONTHDAY=-1", datetime(2028, 1, 1, 9, 0), "UTC", 2)] \
        == [at(2028, 1, 31, 9, 0), at(2028, 2, 29, 9, 0)]


def test_an_until_in_utc_is_kept_as_an_instant_and_shown_as_a_wall_time():
    rule = parse_recurrence("FREQ=DAILY;UNTIL=20260310T130000Z", starts_local=datetime(2026, 3, 7, 9, 0),
                            zone="America/New_York")
    assert rule.ends_local == datetime(2026, 3, 10, 9, 0)
    assert [o.instant for o in rule.next_occurrences(LONG_AGO, 10)] == [
        at(2026, 3, 7, 14, 0), at(2026, 3, 8, 13, 0), at(2026, 3, 9, 13, 0), at(2026, 3, 10, 13, 0),
    ]
    earlier = parse_recurrence("FREQ=DAILY;UNTIL=20260310T125959Z", starts_local=datetime(2026, 3, 7, 9, 0),
                               zone="America/New_York")
    assert earlier.ends_local == datetime(2026, 3, 10, 8, 59, 59)
    assert len(earlier.next_occurrences(LONG_AGO, 10)) == 3


def test_an_until_date_and_an_ends_local_each_end_the_rule_inclusively():
    by_date = parse_recurrence("FREQ=DAILY;UNTIL=20260309", starts_local=datetime(2026, 3, 7, 9, 0),
                               zone="America/New_York")
    by_wall_time = parse_recurrence("FREQ=DAILY", starts_local=datetime(2026, 3, 7, 9, 0), zone="America/New_York",
                                    ends_local=datetime(2026, 3, 9, 9, 0))
    expected = [at(2026, 3, 7, 14, 0), at(2026, 3, 8, 13, 0), at(2026, 3, 9, 13, 0)]
    assert [o.instant for o in by_date.next_occurrences(LONG_AGO, 10)] == expected
    assert [o.instant for o in by_wall_time.next_occurrences(LONG_AGO, 10)] == expected
    assert by_date.ends_local == datetime(2026, 3, 9, 23, 59)


def test_a_skipped_date_skips_that_day_and_a_skipped_wall_time_that_occurrence():
    rule = parse_recurrence("FREQ=DAILY", starts_local=datetime(2026, 6, 1, 9, 0), zone="America/New_York",
                            exdates_local=[date(2026, 6, 2), datetime(2026, 6, 4, 9, 0), datetime(2026, 6, 5, 10, 0)])
    assert [o.slot for o in rule.next_occurrences(LONG_AGO, 4)] == [
        "2026-06-01T09:00", "2026-06-03T09:00", "2026-06-05T09:00", "2026-06-06T09:00",  # 10:00 matched nothing
    ]


def test_a_skipped_wall_time_in_the_gap_or_where_it_moved_to_skips_the_shifted_occurrence():
    for skipped in (datetime(2026, 3, 8, 2, 30), datetime(2026, 3, 8, 3, 30)):
        rule = parse_recurrence("FREQ=DAILY", starts_local=datetime(2026, 3, 7, 2, 30), zone="America/New_York",
                                exdates_local=[skipped])
        assert [o.slot for o in rule.next_occurrences(LONG_AGO, 2)] == ["2026-03-07T02:30", "2026-03-09T02:30"]


def test_an_hourly_rule_skips_either_repeated_0100_by_wall_time_or_by_instant():
    def hours(skipped):
        rule = parse_recurrence("FREQ=HOURLY", starts_local=datetime(2026, 11, 1, 0, 0), zone="America/New_York",
                                exdates_local=[skipped])
        return [o.instant for o in rule.next_occurrences(LONG_AGO, 3)]

    assert hours(datetime(2026, 11, 1, 1, 0)) == [at(2026, 11, 1, 4), at(2026, 11, 1, 6), at(2026, 11, 1, 7)]
    assert hours(at(2026, 11, 1, 6, 0)) == [at(2026, 11, 1, 4), at(2026, 11, 1, 5), at(2026, 11, 1, 7)]


def test_wkst_decides_which_weeks_an_every_other_week_rule_takes():
    # RFC 5545's own example: the same rule, two week starts, two sets of dates.
    monday = first("FREQ=WEEKLY;INTERVAL=2;COUNT=4;BYDAY=TU,SU;WKST=MO", datetime(1997, 8, 5, 9, 0),
                   "America/New_York", 5)
    sunday = first("FREQ=WEEKLY;INTERVAL=2;COUNT=4;BYDAY=TU,SU;WKST=SU", datetime(1997, 8, 5, 9, 0),
                   "America/New_York", 5)
    assert [slot for slot, _, _ in monday] == ["1997-08-05T09:00", "1997-08-10T09:00", "1997-08-19T09:00",
                                               "1997-08-24T09:00"]
    assert [slot for slot, _, _ in sunday] == ["1997-08-05T09:00", "1997-08-17T09:00", "1997-08-19T09:00",
                                               "1997-08-31T09:00"]


def test_the_last_weekday_of_the_month_years_after_the_start_picks_from_whole_months():
    rule = parse_recurrence("FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1", starts_local=datetime(2026, 1, 1, 17, 0),
                            zone="UTC")
    assert [o.slot for o in rule.occurrences_between(at(2029, 3, 1), at(2029, 6, 1))] == [
        "2029-03-30T17:00", "2029-04-30T17:00", "2029-05-31T17:00",  # a Friday, a Monday, a Thursday
    ]


def test_the_first_occurrence_is_the_rules_first_match_from_starts_local():
    # starts_local is a Monday; the rule takes Tuesdays.
    assert first("FREQ=WEEKLY;BYDAY=TU", datetime(2026, 6, 1, 9, 0), "UTC", 1) == [
        ("2026-06-02T09:00", at(2026, 6, 2, 9, 0), None)]


# --- Queries ------------------------------------------------------------------------------------


def test_a_window_is_half_open_and_in_order():
    rule = parse_recurrence("FREQ=DAILY", starts_local=datetime(2026, 1, 1, 9, 0), zone="UTC")
    assert [o.instant for o in rule.occurrences_between(at(2026, 6, 1, 9, 0), at(2026, 6, 3, 9, 0))] == [
        at(2026, 6, 1, 9, 0), at(2026, 6, 2, 9, 0)]
    assert rule.occurrences_between(at(2026, 6, 3), at(2026, 6, 1)) == []
    assert rule.occurrences_between(at(2025, 1, 1), at(2025, 12, 31)) == []


def test_a_fourteen_day_window_of_a_three_year_old_daily_rule_costs_the_window_not_its_age():
    rule = parse_recurrence("FREQ=DAILY", starts_local=datetime(2023, 6, 1, 9, 0), zone="America/New_York")
    window = rule.occurrences_between(at(2026, 6, 1, 12), at(2026, 6, 15, 12))
    assert [o.slot for o in window] == [f"2026-06-{day:02d}T09:00" for day in range(1, 15)]  # 13:00Z each
    started = stopwatch.perf_counter()
    for _ in range(500):
        rule.occurrences_between(at(2026, 6, 1, 12), at(2026, 6, 15, 12))
    assert stopwatch.perf_counter() - started < 2  # a sanity bound: about 0.1 ms each where measured


def test_the_next_500_occurrences_are_consecutive():
    rule = parse_recurrence("FREQ=DAILY", starts_local=datetime(2026, 1, 1, 9, 0), zone="Europe/London")
    found = rule.next_occurrences(at(2026, 6, 1, 7, 59), 500)  # 09:00 BST is 08:00Z
    assert len(found) == 500
    assert found[0].slot == "2026-06-01T09:00" and found[-1].slot == "2027-10-13T09:00"
    assert rule.next_occurrences(at(2026, 6, 1, 7, 59), 0) == []


def test_the_next_occurrences_are_strictly_after_the_instant_given():
    rule = parse_recurrence("FREQ=DAILY", starts_local=datetime(2026, 1, 1, 9, 0), zone="UTC")
    assert rule.next_occurrences(at(2026, 6, 1, 9, 0), 1)[0].instant == at(2026, 6, 2, 9, 0)


def test_the_last_occurrences_before_an_instant_come_oldest_first():
    weekly = parse_recurrence("FREQ=WEEKLY;BYDAY=TU", starts_local=datetime(2024, 1, 2, 9, 0), zone="UTC")
    assert [o.slot for o in weekly.last_occurrences(at(2026, 6, 9, 9, 0), 3)] == [
        "2026-05-19T09:00", "2026-05-26T09:00", "2026-06-02T09:00"]
    sparse = parse_recurrence("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29", starts_local=datetime(2020, 1, 1, 9, 0),
                              zone="UTC")
    assert [o.slot for o in sparse.last_occurrences(at(2026, 6, 1), 3)] == ["2020-02-29T09:00", "2024-02-29T09:00"]
    assert sparse.last_occurrences(at(2026, 6, 1), 0) == []


def test_a_rule_without_an_end_always_has_a_next_occurrence_and_one_with_an_end_runs_out():
    endless = parse_recurrence("FREQ=MONTHLY;BYDAY=-1FR", starts_local=datetime(2026, 1, 1, 17, 30), zone="UTC")
    ending = parse_recurrence("FREQ=MONTHLY;BYDAY=-1FR", starts_local=datetime(2026, 1, 1, 17, 30), zone="UTC",
                              ends_local=datetime(2026, 6, 30, 0, 0))
    assert endless.has_occurrence_after(at(2031, 7, 1))
    assert ending.has_occurrence_after(at(2026, 6, 1))  # 26 June is still to come
    assert not ending.has_occurrence_after(at(2026, 6, 26, 17, 30))


@pytest.mark.parametrize("zone", ["Pacific/Kiritimati", "Pacific/Niue"])  # +14 and -11: the widest offsets
def test_queries_answer_for_instants_at_the_ends_of_time(zone):
    rule = parse_recurrence("FREQ=DAILY", starts_local=datetime(2026, 1, 1, 9, 0), zone=zone)
    earliest, latest = datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)
    assert rule.next_occurrences(earliest, 1)[0].slot == "2026-01-01T09:00"
    assert rule.next_occurrences(latest, 1) == []
    assert rule.last_occurrences(earliest, 1) == []
    assert rule.last_occurrences(latest, 1)[0].instant.year == 9899
    assert rule.occurrences_between(earliest, at(2026, 1, 3))[0].slot == "2026-01-01T09:00"
    assert rule.occurrences_between(latest - timedelta(days=1), latest) == []
    assert rule.has_occurrence_after(earliest) and not rule.has_occurrence_after(latest)


def test_queries_refuse_a_naive_datetime():
    rule = parse_recurrence("FREQ=DAILY", starts_local=datetime(2026, 1, 1, 9, 0), zone="UTC")
    with pytest.raises(ValueError, match="timezone-aware"):
        rule.occurrences_between(datetime(2026, 1, 1), at(2026, 2, 1))
    with pytest.raises(ValueError, match="timezone-aware"):
        rule.next_occurrences(datetime(2026, 1, 1), 3)


@pytest.mark.parametrize(
    "rrule, starts_local, words",
    [
        ("FREQ=WEEKLY;BYDAY=TU", datetime(2026, 6, 2, 9, 0), "every Tuesday at 09:00"),
        ("FREQ=WEEKLY;BYDAY=TU;COUNT=12", datetime(2026, 6, 2, 9, 0), "every Tuesday at 09:00, 12 times"),
        ("FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR", datetime(2026, 6, 1, 8, 0), "every weekday at 08:00"),
        ("FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,TH", datetime(2026, 6, 1, 8, 0), "every 2 weeks on Monday and Thursday at 08:00"),
        ("FREQ=MONTHLY;BYDAY=-1FR", datetime(2026, 6, 1, 17, 30), "every month on the last Friday at 17:30"),
        ("FREQ=MONTHLY;BYMONTHDAY=-1", datetime(2026, 6, 1, 9, 0), "every month on the last day at 09:00"),
        ("FREQ=DAILY;UNTIL=20261231T230000Z", datetime(2026, 6, 1, 9, 0), "every day at 09:00, until 2026-12-31 23:00"),
        ("FREQ=YEARLY", datetime(2026, 12, 25, 9, 0), "every year on 25 December at 09:00"),
        ("FREQ=HOURLY;INTERVAL=3", datetime(2026, 6, 1, 0, 0), "every 3 hours from 2026-06-01 00:00"),
        # Shapes the words do not cover show the rule itself rather than something wrong.
        ("FREQ=MONTHLY;BYDAY=FR;BYMONTHDAY=13", datetime(2026, 6, 1, 9, 0), "FREQ=MONTHLY;BYDAY=FR;BYMONTHDAY=13 at 09:00"),
        ("FREQ=DAILY;BYMONTHDAY=1", datetime(2026, 6, 1, 9, 0), "FREQ=DAILY;BYMONTHDAY=1 at 09:00"),
    ],
)
def test_a_rule_reads_as_words(rrule, starts_local, words):
    assert parse_recurrence(rrule, starts_local=starts_local, zone="UTC").describe() == words


# --- Validation ---------------------------------------------------------------------------------

START = datetime(2026, 6, 2, 9, 0)  # a Tuesday

# Each case: the fields that replace a good daily rule from START in New York, the part that
# must be named, the code, and words the message must hold so a person knows what to change.
BROKEN = [
    ({"rrule": ""}, "rrule", "empty", "FREQ=WEEKLY"),
    ({"rrule": None}, "rrule", "unparsable", "must be text"),
    ({"rrule": "FREQ=DAILY;COUNT"}, "rrule", "unparsable", "COUNT"),
    ({"rrule": "FREQ=MINUTELY"}, "rrule", "too_frequent", "FREQ=MINUTELY is finer than hourly; the finest is FREQ=HOURLY"),
    ({"rrule": "FREQ=SECONDLY;INTERVAL=5"}, "rrule", "too_frequent", "FREQ=HOURLY"),
    ({"rrule": "FREQ=FORTNIGHTLY"}, "rrule", "bad_freq", "FORTNIGHTLY"),
    ({"rrule": "BYDAY=TU"}, "rrule", "missing_freq", "FREQ"),
    ({"rrule": "FREQ=DAILY;BYHOUR=9,17"}, "rrule", "time_of_day_part", "starts_local"),
    ({"rrule": "FREQ=DAILY;BYMINUTE=30"}, "rrule", "time_of_day_part", "BYMINUTE"),
    ({"rrule": "FREQ=YEARLY;BYWEEKNO=20"}, "rrule", "unsupported_part", "BYWEEKNO"),
    ({"rrule": "DTSTART=20260101T090000;FREQ=DAILY"}, "rrule", "dtstart_in_rule", "starts_local"),
    # An iCalendar snippet pasted whole is named for what it holds, never "DTSTART:...RRULE:FREQ is not supported".
    ({"rrule": "DTSTART:20261202T090000\nRRULE:FREQ=DAILY"}, "rrule", "dtstart_in_rule", "keep only the RRULE line"),
    ({"rrule": "RRULE:FREQ=DAILY\nEXDATE:20261225T090000"}, "rrule", "unparsable", "one line"),
    ({"rrule": "FREQ=DAILY;FREQ=WEEKLY"}, "rrule", "repeated_part", "FREQ"),
    ({"rrule": "FREQ=DAILY;INTERVAL=0"}, "rrule", "bad_interval", "INTERVAL=0"),
    ({"rrule": "FREQ=YEARLY;INTERVAL=99999999999"}, "rrule", "bad_interval", "from 1 to 10"),
    ({"rrule": "FREQ=WEEKLY;COUNT=0"}, "rrule", "bad_count", "COUNT=0"),
    ({"rrule": "FREQ=DAILY;COUNT=5;UNTIL=20261231T000000Z"}, "rrule", "count_and_until", "COUNT and UNTIL"),
    ({"rrule": "FREQ=DAILY;UNTIL=2026-12-31"}, "rrule", "bad_until", "UNTIL=2026-12-31"),
    ({"rrule": "FREQ=DAILY;UNTIL=20261331"}, "rrule", "bad_until", "YYYYMMDD"),
    ({"rrule": "FREQ=DAILY;UNTIL=20260101T000000Z"}, "rrule", "ends_before_start", "before starts_local"),
    ({"rrule": "FREQ=WEEKLY;BYDAY=XX"}, "rrule", "bad_byday", "XX"),
    ({"rrule": "FREQ=WEEKLY;BYDAY=-1FR"}, "rrule", "ordinal_needs_month", "FREQ=MONTHLY"),
    ({"rrule": "FREQ=MONTHLY;BYDAY=0MO"}, "rrule", "bad_byday", "0MO"),
    ({"rrule": "FREQ=MONTHLY;BYMONTHDAY=32"}, "rrule", "bad_bymonthday", "BYMONTHDAY=32"),
    ({"rrule": "FREQ=MONTHLY;BYMONTHDAY=0"}, "rrule", "bad_bymonthday", "-1 (the last)"),
    ({"rrule": "FREQ=YEARLY;BYMONTH=13"}, "rrule", "bad_bymonth", "BYMONTH=13"),
    ({"rrule": "FREQ=WEEKLY;BYMONTHDAY=1"}, "rrule", "monthday_with_weekly", "FREQ=MONTHLY"),
    ({"rrule": "FREQ=DAILY;BYDAY=MO;BYSETPOS=1"}, "rrule", "setpos_needs_period", "BYSETPOS"),
    ({"rrule": "FREQ=MONTHLY;BYSETPOS=2"}, "rrule", "setpos_alone", "BYSETPOS"),
    ({"rrule": "FREQ=WEEKLY;BYDAY=MO;BYSETPOS=3"}, "rrule", "setpos_out_of_reach", "BYSETPOS=3"),
    ({"rrule": "FREQ=WEEKLY;WKST=XX"}, "rrule", "bad_wkst", "WKST=XX"),
    ({"rrule": "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30"}, "rrule", "no_occurrences", "BY parts"),
    ({"rrule": "FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=31"}, "rrule", "no_occurrences", "ten years"),
    # Parts that can each be met but never together: only the expansion can tell.
    ({"rrule": "FREQ=MONTHLY;BYDAY=MO;BYMONTHDAY=1,2,3;BYSETPOS=5"}, "rrule", "no_occurrences", "BY parts"),
    ({"rrule": "FREQ=DAILY;INTERVAL=7;BYDAY=MO"}, "rrule", "no_occurrences", "BY parts"),  # only Tuesdays
    ({"rrule": "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO"}, "rrule", "no_occurrences", "ten years"),
    ({"rrule": "FREQ=HOURLY", "max_per_day": 12}, "rrule", "too_many_per_day", "INTERVAL=2 or more"),
    ({"rrule": "FREQ=DAILY;" + "BYMONTH=1," * 1000}, "rrule", "too_long", "500"),
    ({"rrule": "x" * 10_000}, "rrule", "too_long", "500"),
    ({"starts_local": datetime(2026, 6, 2, 9, 0, 30)}, "starts_local", "bad_value", "to the minute"),
    ({"starts_local": datetime(2026, 6, 2, 9, 0, tzinfo=UTC)}, "starts_local", "bad_value", "without an offset"),
    ({"starts_local": date(2026, 6, 2)}, "starts_local", "bad_value", "2026-12-01T09:00"),
    ({"starts_local": "2026-06-02T09:00"}, "starts_local", "bad_value", "date and time"),
    ({"starts_local": datetime(9500, 1, 1)}, "starts_local", "out_of_range", "9000"),
    ({"rrule": "FREQ=DAILY;COUNT=3", "ends_local": datetime(2026, 7, 1)}, "ends_local", "end_given_twice", "COUNT"),
    ({"ends_local": datetime(2026, 6, 1, 9, 0)}, "ends_local", "ends_before_start", "before starts_local"),
    ({"rrule": "FREQ=WEEKLY;BYDAY=WE", "ends_local": datetime(2026, 6, 2, 23, 0)}, "ends_local",
     "ends_before_first", "2026-06-03 09:00"),
    ({"exdates_local": "2026-06-02"}, "exdates_local", "bad_exdates", "list"),
    ({"exdates_local": [42]}, "exdates_local", "bad_exdates", "42"),
    ({"exdates_local": [date(2026, 6, 2)] * 1001}, "exdates_local", "too_many_exdates", "1000"),
    ({"rrule": "FREQ=DAILY;COUNT=1", "exdates_local": [date(2026, 6, 2)]}, "exdates_local", "all_skipped",
     "no occurrence"),
]


@pytest.mark.parametrize("fields, part, code, says", BROKEN, ids=[code for _, _, code, _ in BROKEN])
def test_a_broken_rule_is_refused_naming_the_part_quickly(fields, part, code, says):
    arguments = {"rrule": "FREQ=DAILY", "starts_local": START, "zone": "America/New_York", **fields}
    rrule = arguments.pop("rrule")
    started = stopwatch.perf_counter()
    with pytest.raises(RecurrenceError) as refused:
        parse_recurrence(rrule, **arguments)
    assert stopwatch.perf_counter() - started < 2  # a sanity bound: tens of milliseconds where measured
    assert (refused.value.part, refused.value.code) == (part, code)
    assert says in str(refused.value)


def test_a_garbage_zone_is_refused_as_such():
    with pytest.raises(InvalidTimezone):
        parse_recurrence("FREQ=DAILY", starts_local=START, zone="Mars/Olympus_Mons")


def test_an_hourly_rule_is_allowed_as_many_per_day_as_24_hours_hold():
    # The fall-back day in New York has 25 hours, and this rule 25 occurrences in it: the limit
    # counts per 24 hours, so a zone's DST never turns a plain hourly rule away.
    rule = parse_recurrence("FREQ=HOURLY", starts_local=datetime(2026, 11, 1, 0, 0), zone="America/New_York")
    assert len(rule.occurrences_between(at(2026, 11, 1, 4), at(2026, 11, 2, 5))) == 25
    parse_recurrence("FREQ=HOURLY;INTERVAL=2", starts_local=START, zone="UTC", max_per_day=12)
    parse_recurrence("FREQ=DAILY", starts_local=START, zone="UTC", max_per_day=1)


def test_the_rule_text_is_read_leniently_and_kept_normalized():
    rule = parse_recurrence(" RRULE:freq=weekly; byday = tu, th ;", starts_local=START, zone="UTC")
    assert rule.text == "FREQ=WEEKLY;BYDAY=TU,TH"
    assert rule.frequency is Frequency.WEEKLY


# --- Properties ---------------------------------------------------------------------------------

ZONES = ["America/New_York", "Europe/London", "Australia/Lord_Howe", "Pacific/Chatham", "Asia/Kolkata", "UTC"]
DAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]


@st.composite
def rules(draw):
    """An RRULE from the supported parts, in a shape people write."""
    frequency = draw(st.sampled_from(["HOURLY", "DAILY", "WEEKLY", "MONTHLY", "YEARLY"]))
    parts = [f"FREQ={frequency}", f"INTERVAL={draw(st.sampled_from([1, 1, 2, 3, 7]))}"]
    if draw(st.booleans()):
        days = draw(st.lists(st.sampled_from(DAYS), min_size=1, max_size=3, unique=True))
        if frequency in ("MONTHLY", "YEARLY") and draw(st.booleans()):
            days = [f"{draw(st.sampled_from([1, 2, -1]))}{day}" for day in days]
        parts.append("BYDAY=" + ",".join(days))
    if frequency != "WEEKLY" and draw(st.booleans()):
        parts.append(f"BYMONTHDAY={draw(st.sampled_from([1, 15, 29, 30, 31, -1]))}")
    if draw(st.booleans()):
        parts.append(f"BYMONTH={draw(st.integers(1, 12))}")
    if draw(st.booleans()):
        parts.append(f"COUNT={draw(st.integers(1, 40))}")
    return ";".join(parts)


@settings(max_examples=100, deadline=timedelta(seconds=3), suppress_health_check=[HealthCheck.too_slow])
@given(
    rrule=rules(),
    zone=st.sampled_from(ZONES),
    starts_local=st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2028, 12, 31)).map(
        lambda moment: moment.replace(second=0, microsecond=0)),
)
def test_occurrences_increase_never_repeat_and_each_daily_or_coarser_one_is_its_slot_resolved(rrule, zone, starts_local):
    try:
        rule = parse_recurrence(rrule, starts_local=starts_local, zone=zone)
    except RecurrenceError:
        assume(False)  # an impossible combination drawn at random: its refusal is tested above
    found = rule.next_occurrences(LONG_AGO, 60)
    assert found, "a validated rule has a first occurrence"
    instants = [o.instant for o in found]
    assert all(a < b for a, b in zip(instants, instants[1:]))
    assert len(set(instants)) == len(instants)
    assert len({o.slot for o in found}) == len(found)
    for occurrence in found:
        assert occurrence.local.astimezone(UTC) == occurrence.instant  # == is False across zones in a fold (PEP 495)
        if rule.frequency is Frequency.HOURLY:
            assert (occurrence.instant - found[0].instant) % timedelta(hours=rule.interval) == timedelta(0)
        else:
            slot = datetime.fromisoformat(occurrence.slot)
            assert occurrence.instant == resolve_wall_time(slot.date(), slot.time(), zone).instant
    if rule.frequency is not Frequency.HOURLY:
        # dateutil alone, from the start, every wall time resolved, an instant kept once: the same.
        reach = resolve_wall_time(starts_local.date(), starts_local.time(), zone).instant + SEARCH_SPAN
        expected = []
        for wall in rrulestr(rule.text, dtstart=starts_local):
            resolved = resolve_wall_time(wall.date(), wall.time(), zone)
            if resolved.instant > reach or len(expected) == 60:
                break
            if not expected or resolved.instant != expected[-1][1]:
                expected.append((wall.isoformat(timespec="minutes"), resolved.instant))
        assert [(o.slot, o.instant) for o in found] == expected
    # A window anywhere in the list, however far from the start, answers the same occurrences.
    middle = found[len(found) // 2].instant - timedelta(minutes=1)
    window_end = found[-1].instant
    assert rule.occurrences_between(middle, window_end) == [o for o in found if middle <= o.instant < window_end]
