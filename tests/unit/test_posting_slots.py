"""Posting times, pure: the check of what a client sends (anything it can send), the editor's lines, and the
walk over the weeks, which keeps each slot's wall time across a clock change."""

from datetime import date, time, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from models.channels.slots import check_slots
from models.core.errors import InvalidInput
from models.timing.slot_grid import WEEKDAYS, common_grid, walk_grid
from models.timing.wall_time import resolve_wall_time
from webapp.views.channels import parse_slots_text, slots_text

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
                    | st.sampled_from(["mon", "sun", "09:00", "23:59", "24:00", "9:00", "days", "time"]),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                        st.sampled_from(["days", "time", "other"]) | st.text(max_size=5), inner, max_size=3),
                    max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(JSON)
def test_check_slots_answers_stored_slots_or_its_own_refusal_for_anything(raw):
    try:
        slots = check_slots(raw)
    except InvalidInput as error:
        assert error.field == "slots" and error.message
        return
    for entry in slots:
        assert set(entry) == {"days", "time"} and entry["days"] and set(entry["days"]) <= set(WEEKDAYS)
        time.fromisoformat(entry["time"])


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=80))
def test_the_editors_lines_parse_or_are_refused_with_words(typed):
    try:
        check_slots(parse_slots_text(typed))
    except InvalidInput as error:
        assert error.message


def test_the_editor_reads_what_it_shows():
    slots = check_slots(parse_slots_text("09:00 weekdays\n13:30 Saturday, sunday\n# a note\n18:00 every day"))
    assert slots == [{"days": ["mon", "tue", "wed", "thu", "fri"], "time": "09:00"},
                     {"days": ["sat", "sun"], "time": "13:30"}, {"days": list(WEEKDAYS), "time": "18:00"}]
    assert check_slots(parse_slots_text(slots_text(slots))) == slots


def test_a_day_and_time_named_twice_is_refused_not_merged():
    try:
        check_slots([{"days": ["mon", "tue"], "time": "09:00"}, {"days": ["tue"], "time": "09:00"}])
    except InvalidInput as error:
        assert error.code == "duplicate" and "tue 09:00" in error.message
    else:
        raise AssertionError("a duplicate slot was accepted")


def test_the_walk_keeps_wall_times_across_a_clock_change():
    grid = {day: frozenset({time(9, 0)}) for day in range(7)}
    slots = list(walk_grid(grid, date(2026, 10, 31), date(2026, 11, 2)))
    assert slots == [(date(2026, 10, 31), time(9)), (date(2026, 11, 1), time(9)), (date(2026, 11, 2), time(9))]
    instants = [resolve_wall_time(day, at, "America/New_York").instant.astimezone(timezone.utc).hour
                for day, at in slots]
    assert instants == [13, 14, 14]  # 09:00 EDT, then 09:00 EST


def test_targets_share_only_the_times_each_has():
    monday_nine = {0: frozenset({time(9), time(13)})}
    assert common_grid([monday_nine, {0: frozenset({time(13)}), 1: frozenset({time(9)})}])[0] == {time(13)}
    assert not any(common_grid([monday_nine, {1: frozenset({time(9)})}]).values())


def test_the_common_grid_has_the_seven_days_and_the_walk_skips_days_without_slots():
    assert common_grid([{0: frozenset({time(9)})}]) == {0: {time(9)}, **{day: frozenset() for day in range(1, 7)}}
    # 2026-06-01 is a Monday; the grid has nothing on Tuesday
    assert list(walk_grid({0: frozenset({time(9)})}, date(2026, 6, 1), date(2026, 6, 2))) == [(date(2026, 6, 1), time(9))]
