"""Rules that live once in the domain and are pure: who may change a row, typed times, cursors, the due-soon horizon."""

from datetime import date, datetime, time, timedelta, timezone

import pytest

from models.accounts.tables import Role
from models.actions.access import (
    check_may_cancel,
    check_may_reschedule,
    check_may_retry,
    may_cancel,
    may_reschedule,
    may_retry,
)
from models.actions.reading import action_cursor, read_action_cursor
from models.actions.tables import Origin, ScheduledAction
from models.core.errors import Forbidden, InvalidInput
from models.core.keyset import decode_cursor, encode_cursor
from models.core.policy import Policy
from models.core.time_input import parse_clock, parse_day, parse_local_time, resolve_typed
from models.timing.wall_time import WallTimeShift

ME, SOMEONE_ELSE = 7, 8


def row(origin: Origin, created_by: int | None) -> ScheduledAction:
    return ScheduledAction(id=1, origin=origin.value, created_by_id=created_by,
                           publish_at=datetime(2026, 6, 1, tzinfo=timezone.utc))


@pytest.mark.parametrize("role, origin, created_by, allowed", [
    (Role.OPS, Origin.PERSON, SOMEONE_ELSE, True),
    (Role.ADMIN, Origin.PERSON, None, True),
    (Role.MARKETER, Origin.RECONCILER, None, True),  # a post's row: marketers steer posts
    (Role.MARKETER, Origin.PERSON, ME, True),  # a row they created themselves
    (Role.MARKETER, Origin.PERSON, SOMEONE_ELSE, False),
    (Role.MARKETER, Origin.PERSON, None, False),
])
def test_who_may_cancel_a_row_is_decided_in_one_place(role, origin, created_by, allowed):
    assert may_cancel(role, ME, row(origin, created_by)) is allowed
    if allowed:
        check_may_cancel(role, ME, row(origin, created_by))
    else:
        with pytest.raises(Forbidden, match="ops role to cancel"):
            check_may_cancel(role, ME, row(origin, created_by))


@pytest.mark.parametrize("role, reschedule, retry", [
    (Role.MARKETER, False, False), (Role.OPS, True, False), (Role.ADMIN, True, True),
])
def test_reschedule_is_for_ops_and_retry_for_admins(role, reschedule, retry):
    assert (may_reschedule(role), may_retry(role)) == (reschedule, retry)
    for allowed, check in ((reschedule, check_may_reschedule), (retry, check_may_retry)):
        if allowed:
            check(role)
        else:
            with pytest.raises(Forbidden):
                check(role)


def test_a_typed_date_time_and_local_time_are_read_by_one_module():
    assert parse_day(" 2026-06-30 ") == date(2026, 6, 30)
    assert parse_clock("09:30") == parse_clock("09:30:59") == time(9, 30)
    assert parse_local_time("2026-06-30T09:30") == (date(2026, 6, 30), time(9, 30))


@pytest.mark.parametrize("parse, raw, field, words", [
    (parse_day, "June", "date", "Give a date like 2026-06-30."),
    (parse_day, "2026-02-30", "date", "Give a date like"),
    (parse_day, "20260630", "from", "from must be a date like 2026-06-30"),
    (parse_day, None, "date", "Give a date like"),
    (parse_clock, "25:00", "time", "Give a time like 09:30."),
    (parse_clock, "nine", "time", "Give a time like"),
    (parse_local_time, "2026-06-30 09:30", "local_time", "must look like 2026-05-20T09:00"),
    (parse_local_time, "2026-02-30T09:30", "local_time", "not a real date and time"),
    (parse_local_time, 20260630, "local_time", "must look like"),
])
def test_a_badly_typed_time_is_a_422_naming_its_field(parse, raw, field, words):
    with pytest.raises(InvalidInput) as refused:
        parse(raw, field)
    assert refused.value.field == field and words in refused.value.message


def test_resolving_a_typed_time_maps_a_broken_zone_and_year_9999_to_422s():
    resolved = resolve_typed(date(2026, 3, 8), time(2, 30), "America/New_York")
    assert resolved.shift is WallTimeShift.GAP and resolved.instant == datetime(2026, 3, 8, 7, 30, tzinfo=timezone.utc)
    with pytest.raises(InvalidInput) as zone:
        resolve_typed(date(2026, 3, 8), time(2, 30), "Mars/Olympus")
    assert (zone.value.field, zone.value.code) == ("timezone", "bad_zone")
    with pytest.raises(InvalidInput) as year:
        resolve_typed(date(9999, 12, 31), time(23, 0), "America/New_York", "local_time")
    assert year.value.field == "local_time"


def test_a_cursor_carries_a_rows_key_and_refuses_anything_it_did_not_give_out():
    first = row(Origin.PERSON, None)
    assert read_action_cursor(action_cursor(first)) == (first.publish_at, 1)
    assert decode_cursor(encode_cursor("a", "b"), str.upper, str) == ("A", "b")
    for forged in ("!!!", encode_cursor("2026-06-01T00:00:00", "1"), encode_cursor("2026-06-01T00:00:00+00:00", "0"),
                   encode_cursor("2026-06-01T00:00:00+00:00", str(2**31)), encode_cursor("only-one-part")):
        with pytest.raises(InvalidInput) as refused:
            read_action_cursor(forged)
        assert refused.value.field == "cursor"


def test_rows_due_before_the_next_tick_are_the_ones_handed_over_now():
    now = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
    assert Policy().due_soon_horizon(now) == now + timedelta(minutes=1)
    assert Policy(tick_interval=timedelta(minutes=5)).due_soon_horizon(now) == now + timedelta(minutes=5)


@pytest.mark.parametrize("text, is_a_row_id", [
    ("1", True), ("2147483647", True), ("2147483646", True), ("1999999999", True),
    ("0", False), ("01", False), ("2147483648", False), ("9999999999", False), ("21474836470", False),
])
def test_a_route_id_is_a_32_bit_row_id_or_no_route_at_all(text, is_a_row_id):
    import re

    from webapp.converters import RowIdConverter

    assert bool(re.fullmatch(RowIdConverter.regex, text)) is is_a_row_id


def test_the_route_id_pattern_agrees_with_the_range_for_every_number():
    import re

    from hypothesis import given, strategies

    from webapp.converters import RowIdConverter

    @given(strategies.integers(min_value=0, max_value=2**34))
    def agrees(number):
        assert bool(re.fullmatch(RowIdConverter.regex, str(number))) is (1 <= number <= 2**31 - 1)

    agrees()
