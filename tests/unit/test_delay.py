"""Drip step delays: ISO 8601 durations, calendar days in the contact's zone, elapsed hours."""

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.timing.delay import MAX_DELAY, Delay, InvalidDelay, apply_delay, parse_delay
from models.timing.wall_time import InvalidTimezone

UTC = timezone.utc
NEW_YORK, LONDON, LORD_HOWE = "America/New_York", "Europe/London", "Australia/Lord_Howe"


def at(*args):
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    "text, calendar_days, elapsed, iso, in_words",
    [
        ("P2D", 2, timedelta(0), "P2D", "2 days"),
        ("P1D", 1, timedelta(0), "P1D", "1 day"),
        ("PT30M", 0, timedelta(minutes=30), "PT30M", "30 minutes"),
        ("PT2H", 0, timedelta(hours=2), "PT2H", "2 hours"),
        ("P1W", 7, timedelta(0), "P7D", "1 week"),
        ("P2W", 14, timedelta(0), "P14D", "2 weeks"),
        ("P10D", 10, timedelta(0), "P10D", "10 days"),
        ("P1DT12H", 1, timedelta(hours=12), "P1DT12H", "1 day and 12 hours"),
        ("PT0S", 0, timedelta(0), "PT0S", "at once"),
        ("P0D", 0, timedelta(0), "PT0S", "at once"),
        ("PT90M", 0, timedelta(minutes=90), "PT1H30M", "1 hour and 30 minutes"),
        # Hours are never carried into days: 36 elapsed hours are not a calendar day and 12 hours.
        ("PT36H", 0, timedelta(hours=36), "PT36H", "36 hours"),
        ("P1W2DT3H4M5S", 9, timedelta(hours=3, minutes=4, seconds=5), "P9DT3H4M5S",
         "9 days, 3 hours, 4 minutes and 5 seconds"),
        ("P366D", 366, timedelta(0), "P366D", "366 days"),
        ("PT8784H", 0, timedelta(hours=8784), "PT8784H", "8784 hours"),
    ],
)
def test_a_delay_reads_as_the_api_writes_it_and_renders_back(text, calendar_days, elapsed, iso, in_words):
    delay = parse_delay(text)
    assert delay == Delay(calendar_days=calendar_days, elapsed=elapsed)
    assert delay.iso == iso
    assert delay.in_words == in_words
    assert parse_delay(delay.iso) == delay


@pytest.mark.parametrize(
    "text, message",
    [
        ("P1M", "not a fixed number of days.*PT1M would be minutes"),
        ("P1Y", "months or years"),
        ("P1Y2M3D", "months or years"),
        ("-P1D", "cannot be negative"),
        ("P-1D", "cannot be negative"),
        ("+P1D", "cannot be negative"),
        ("P367D", "at most 366 days"),
        ("P53W", "at most 366 days"),
        ("P366DT1S", "at most 366 days"),
        ("PT8785H", "at most 366 days"),
        ("P99999999999999999999999D", "at most 366 days"),
        ("P10000000000D", "at most 366 days"),  # days timedelta() cannot hold, though few seconds' worth a day
        ("PT99999999999999999999H", "at most 366 days"),  # hours timedelta() cannot hold
        ("PT1.5H", "fraction"),
        ("P0,5D", "fraction"),
        ("P", "not an ISO 8601 duration"),
        ("PT", "not an ISO 8601 duration"),
        ("P1DT", "not an ISO 8601 duration"),
        ("PT5", "not an ISO 8601 duration"),
        ("2 days", "not an ISO 8601 duration"),
        ("p2d", "not an ISO 8601 duration"),
        (" P2D", "not an ISO 8601 duration"),
        ("P2H", "not an ISO 8601 duration"),
        ("PT2D", "not an ISO 8601 duration"),
        ("P\u0663D", "not an ISO 8601 duration"),  # an Arabic-Indic three, which int() would read
        ("P" + "1" * 5000 + "D", "not an ISO 8601 duration"),
        ("", "not an ISO 8601 duration"),
        (172800, "written as text"),
        (None, "written as text"),
        (["P2D"], "written as text"),
    ],
)
def test_a_bad_delay_is_refused_naming_the_delay_with_a_message_to_act_on(text, message):
    with pytest.raises(InvalidDelay, match=message) as refused:
        parse_delay(text)
    assert refused.value.part == "delay"


def test_the_refusals_read_exactly_as_a_person_is_shown_them():
    examples = "for example P2D (two days), PT30M (thirty minutes), P1DT12H or PT0S (at once)"
    negative = "A delay cannot be negative: it counts forward from the previous step."
    months = ("{!r} counts in months or years, which are not a fixed number of days (a month is 28 to 31); give the "
              "days instead, for example P30D{}.")
    for text, message in [
        ("-P2D", negative),
        ("P1Y", months.format("P1Y", "")),
        ("P1Y2M", months.format("P1Y2M", "")),
        ("P5M", months.format("P5M", "; PT5M would be minutes")),
        ("P" + "1" * 40 + "D", "P" + "1" * 31 + f"... is not an ISO 8601 duration; {examples}."),
        (7, f"A delay is an ISO 8601 duration written as text, {examples}."),
    ]:
        with pytest.raises(InvalidDelay) as refused:
            parse_delay(text)
        assert str(refused.value) == refused.value.message == message
    for built, message in [
        (lambda: Delay(calendar_days=-1), negative),
        (lambda: Delay(elapsed=timedelta(milliseconds=1500)), "A delay is counted in whole seconds."),
    ]:
        with pytest.raises(InvalidDelay) as refused:
            built()
        assert str(refused.value) == refused.value.message == message


def test_the_longest_text_read_is_thirty_two_characters():
    assert parse_delay("P" + "0" * 29 + "1D") == Delay(calendar_days=1)


def test_a_delay_built_by_hand_is_held_to_the_same_rules():
    with pytest.raises(InvalidDelay, match="cannot be negative"):
        Delay(elapsed=timedelta(minutes=-1))
    with pytest.raises(InvalidDelay, match="at most 366 days"):
        Delay(calendar_days=366, elapsed=timedelta(seconds=1))
    with pytest.raises(InvalidDelay, match="whole seconds"):
        Delay(elapsed=timedelta(milliseconds=1500))
    assert MAX_DELAY == timedelta(days=366)


@pytest.mark.parametrize(
    "start, text, zone, due",
    [
        # New York springs forward on Sunday 2026-03-08: Saturday 09:00 EST (14:00Z) plus a day
        # is Sunday 09:00 EDT (13:00Z), only 23 hours later.
        (at(2026, 3, 7, 14, 0), "P1D", NEW_YORK, at(2026, 3, 8, 13, 0)),
        # It falls back on Sunday 2026-11-01: Saturday 09:00 EDT (13:00Z) → Sunday 09:00 EST (14:00Z).
        (at(2026, 10, 31, 13, 0), "P1D", NEW_YORK, at(2026, 11, 1, 14, 0)),
        # London springs forward on 2026-03-29: Saturday 10:00 GMT → Monday 10:00 BST (09:00Z).
        (at(2026, 3, 28, 10, 0), "P2D", LONDON, at(2026, 3, 30, 9, 0)),
        # London falls back on 2026-10-25: Sunday 10:00 BST (09:00Z) a week on is 10:00 GMT.
        (at(2026, 10, 18, 9, 0), "P1W", LONDON, at(2026, 10, 25, 10, 0)),
        # Lord Howe moves by half an hour (+10:30 → +11) on 2026-10-04:
        # Saturday 09:00 (22:30Z the day before) → Sunday 09:00 (22:00Z the day before).
        (at(2026, 10, 2, 22, 30), "P1D", LORD_HOWE, at(2026, 10, 3, 22, 0)),
        # ... and back (+11 → +10:30) on 2026-04-05: Saturday 09:00 (22:00Z) → Sunday 09:00 (22:30Z).
        (at(2026, 4, 3, 22, 0), "P1D", LORD_HOWE, at(2026, 4, 4, 22, 30)),
    ],
)
def test_day_delays_keep_the_local_time_of_day_across_dst(start, text, zone, due):
    assert apply_delay(start, parse_delay(text), zone) == due


@pytest.mark.parametrize(
    "start, text, zone, due",
    [
        # Saturday 09:00 EST (14:00Z) plus 24 hours is 14:00Z, which is Sunday 10:00 EDT.
        (at(2026, 3, 7, 14, 0), "PT24H", NEW_YORK, at(2026, 3, 8, 14, 0)),
        # 00:30 EDT (04:30Z) plus two hours is 06:30Z: 01:30 EST, the second 01:30 of the night.
        (at(2026, 11, 1, 4, 30), "PT2H", NEW_YORK, at(2026, 11, 1, 6, 30)),
        # 00:50 GMT plus 30 minutes in London's spring-forward night is 02:20 BST (01:20Z).
        (at(2026, 3, 29, 0, 50), "PT30M", LONDON, at(2026, 3, 29, 1, 20)),
        # 01:50 at +11 (14:50Z) plus 20 minutes on Lord Howe's fall-back night is 01:40 at +10:30.
        (at(2026, 4, 4, 14, 50), "PT20M", LORD_HOWE, at(2026, 4, 4, 15, 10)),
    ],
)
def test_hour_and_minute_delays_are_elapsed_time_across_dst(start, text, zone, due):
    assert apply_delay(start, parse_delay(text), zone) == due


def test_a_mixed_delay_counts_the_calendar_days_first_then_the_elapsed_part():
    # Saturday 2026-03-07 20:00 EST (03-08 01:00Z): one calendar day is Sunday 20:00 EDT
    # (03-09 00:00Z), then twelve real hours: Monday 08:00 EDT. Counting the hours first would
    # give Monday 09:00 EDT (13:00Z) instead.
    assert apply_delay(at(2026, 3, 8, 1, 0), parse_delay("P1DT12H"), NEW_YORK) == at(2026, 3, 9, 12, 0)


def test_a_day_delay_landing_in_the_spring_gap_moves_forward_by_the_gap():
    # Saturday 02:30 EST (07:30Z); Sunday 02:30 does not exist in New York, so 03:30 EDT (07:30Z).
    assert apply_delay(at(2026, 3, 7, 7, 30), parse_delay("P1D"), NEW_YORK) == at(2026, 3, 8, 7, 30)


def test_a_day_delay_landing_in_the_repeated_hour_takes_its_first_occurrence():
    # Saturday 01:30 EDT (05:30Z); Sunday's 01:30 happens at 05:30Z (EDT) and 06:30Z (EST).
    assert apply_delay(at(2026, 10, 31, 5, 30), parse_delay("P1D"), NEW_YORK) == at(2026, 11, 1, 5, 30)


def test_a_day_delay_from_the_second_occurrence_keeps_its_wall_time():
    # 01:30 EST (06:30Z), the second 01:30 of the night; Monday 01:30 EST is 06:30Z.
    assert apply_delay(at(2026, 11, 1, 6, 30), parse_delay("P1D"), NEW_YORK) == at(2026, 11, 2, 6, 30)


@pytest.mark.parametrize("text", ["PT0S", "PT45M"])
def test_a_delay_without_days_never_resolves_the_start_again(text):
    # 06:30Z is the second 01:30 in New York; resolving its wall time would move it to the first.
    start = at(2026, 11, 1, 6, 30)
    assert apply_delay(start, parse_delay(text), NEW_YORK) == start + parse_delay(text).elapsed


def test_the_result_is_utc_whatever_zone_the_start_was_given_in():
    start = datetime(2026, 6, 1, 9, 0, tzinfo=timezone(timedelta(hours=2)))
    due = apply_delay(start, parse_delay("P1D"), "Europe/Paris")
    assert due == at(2026, 6, 2, 7, 0) and due.tzinfo is UTC


@pytest.mark.parametrize("text", ["PT0S", "PT1H", "P1D"])
def test_a_garbage_zone_is_refused_even_when_the_delay_would_not_need_it(text):
    with pytest.raises(InvalidTimezone):
        apply_delay(at(2026, 6, 1, 9, 0), parse_delay(text), "Mars/Olympus_Mons")


def test_a_naive_start_is_refused():
    with pytest.raises(ValueError, match="naive"):
        apply_delay(datetime(2026, 6, 1, 9, 0), parse_delay("P1D"), NEW_YORK)


DELAYS_WITHIN_THE_MAXIMUM = st.integers(0, MAX_DELAY.days).flatmap(
    lambda days: st.builds(
        Delay,
        calendar_days=st.just(days),
        elapsed=st.integers(0, (MAX_DELAY.days - days) * 86400).map(lambda seconds: timedelta(seconds=seconds)),
    )
)


@settings(max_examples=100, deadline=None)
@given(delay=DELAYS_WITHIN_THE_MAXIMUM)
def test_every_delay_within_the_maximum_survives_its_iso_form(delay):
    assert parse_delay(delay.iso) == delay
