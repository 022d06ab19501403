"""The clocks domain code and jobs read the time from: every test moves a FrozenClock, so it moves exactly as told."""

import time
from datetime import datetime, timedelta, timezone, tzinfo

import pytest

from models.timing.clock import FrozenClock, SystemClock, utc

UTC = timezone.utc
PARIS_SUMMER = timezone(timedelta(hours=2))


class _NoOffset(tzinfo):
    """A zone that knows no offset: Python counts a datetime carrying it as naive."""

    def utcoffset(self, dt):
        return None


def test_utc_keeps_the_instant_and_reads_it_in_utc():
    converted = utc(datetime(2026, 6, 1, 14, 0, tzinfo=PARIS_SUMMER))
    assert converted == datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    assert converted.tzinfo is UTC


def test_utc_reads_in_utc_whatever_the_hosts_zone(host_zone_kolkata):
    assert datetime(2026, 6, 1, 12, 0).astimezone().utcoffset() == timedelta(hours=5, minutes=30)  # the host moved
    converted = utc(datetime(2026, 6, 1, 14, 0, tzinfo=PARIS_SUMMER))
    assert converted.utcoffset() == timedelta(0)
    assert converted.isoformat() == "2026-06-01T12:00:00+00:00"


def test_a_naive_instant_is_refused_naming_it():
    with pytest.raises(ValueError) as refused:
        utc(datetime(2026, 6, 1, 12, 0))
    assert str(refused.value) == "naive datetime 2026-06-01T12:00:00 has no zone"


def test_an_instant_whose_zone_knows_no_offset_is_naive_and_refused():
    # It has a tzinfo, but astimezone() would read it as the host's local time, a different instant on every box.
    with pytest.raises(ValueError, match="has no zone"):
        utc(datetime(2026, 6, 1, 12, 0, tzinfo=_NoOffset()))


def test_the_real_clock_tells_the_current_instant_in_utc():
    before = datetime.now(UTC)
    now = SystemClock().now()
    after = datetime.now(UTC)
    assert now.tzinfo is UTC
    assert before <= now <= after


def test_the_real_clock_tells_utc_whatever_the_hosts_zone(host_zone_kolkata):
    assert SystemClock().now().utcoffset() == timedelta(0)


def test_the_real_clock_waits_in_real_time():
    started = time.monotonic()
    SystemClock().sleep(0.05)
    assert time.monotonic() - started >= 0.05


def test_a_frozen_clock_stands_still_at_the_instant_it_was_given_read_in_utc():
    clock = FrozenClock(datetime(2026, 6, 1, 14, 0, tzinfo=PARIS_SUMMER))
    assert clock.now() == datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    assert clock.now().tzinfo is UTC
    assert clock.now() == clock.now()
    assert clock.slept == []


def test_a_frozen_clock_given_no_instant_starts_at_the_real_one_in_utc():
    before = datetime.now(UTC)
    clock = FrozenClock()
    after = datetime.now(UTC)
    assert clock.now().tzinfo is UTC
    assert before <= clock.now() <= after


def test_a_frozen_clock_refuses_a_naive_instant():
    with pytest.raises(ValueError, match="has no zone"):
        FrozenClock(datetime(2026, 6, 1, 12, 0))
    clock = FrozenClock(datetime(2026, 6, 1, 12, 0, tzinfo=UTC))
    with pytest.raises(ValueError, match="has no zone"):
        clock.set(datetime(2026, 6, 2, 12, 0))
    assert clock.now() == datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def test_setting_a_frozen_clock_moves_it_to_that_instant_in_utc():
    clock = FrozenClock(datetime(2026, 6, 1, 12, 0, tzinfo=UTC))
    clock.set(datetime(2026, 5, 1, 9, 30, tzinfo=PARIS_SUMMER))  # backwards too: a test may rewind
    assert clock.now() == datetime(2026, 5, 1, 7, 30, tzinfo=UTC)
    assert clock.now().tzinfo is UTC


def test_advancing_a_frozen_clock_adds_to_where_it_stands_and_returns_the_new_instant():
    clock = FrozenClock(datetime(2026, 6, 1, 12, 0, tzinfo=UTC))
    assert clock.advance(minutes=90) == datetime(2026, 6, 1, 13, 30, tzinfo=UTC)
    assert clock.advance(days=1, seconds=5) == datetime(2026, 6, 2, 13, 30, 5, tzinfo=UTC)
    assert clock.now() == datetime(2026, 6, 2, 13, 30, 5, tzinfo=UTC)


def test_a_frozen_clock_sleeps_in_no_real_time_moving_on_and_recording_each_wait():
    clock = FrozenClock(datetime(2026, 6, 1, 12, 0, tzinfo=UTC))
    started = time.monotonic()
    clock.sleep(30)
    clock.sleep(0.5)
    assert time.monotonic() - started < 1
    assert clock.now() == datetime(2026, 6, 1, 12, 0, 30, 500000, tzinfo=UTC)
    assert clock.slept == [30, 0.5]
