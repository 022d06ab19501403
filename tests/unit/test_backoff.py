"""Backoff and Retry-After: pure time arithmetic."""

import random
from datetime import datetime, timedelta, timezone

import pytest

from models.timing.backoff import MAX_RETRY_AFTER, backoff_delay, parse_retry_after

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
BASE, CAP = timedelta(seconds=30), timedelta(minutes=30)


@pytest.mark.parametrize("attempt,low,high", [(1, 15, 30), (2, 30, 60), (3, 60, 120), (4, 120, 240), (9, 900, 1800)])
def test_backoff_doubles_per_attempt_with_jitter_between_half_and_all_up_to_the_cap(attempt, low, high):
    rng = random.Random(7)
    delays = [backoff_delay(attempt, base=BASE, cap=CAP, rng=rng).total_seconds() for _ in range(200)]
    assert low <= min(delays) and max(delays) <= high
    assert len(set(delays)) > 100  # jittered, so rows that failed together spread out


def test_retry_after_is_a_floor_never_a_ceiling():
    assert backoff_delay(1, base=BASE, cap=CAP, retry_after=timedelta(minutes=10)) == timedelta(minutes=10)
    assert backoff_delay(4, base=BASE, cap=CAP, retry_after=timedelta(seconds=1)) >= timedelta(seconds=120)


def test_attempts_count_from_one():
    with pytest.raises(ValueError):
        backoff_delay(0, base=BASE, cap=CAP)


@pytest.mark.parametrize("header,expected", [
    ("120", timedelta(seconds=120)),
    ("  7 ", timedelta(seconds=7)),
    ("Mon, 01 Jun 2026 12:05:00 GMT", timedelta(minutes=5)),
    ("Mon, 01 Jun 2026 11:00:00 GMT", timedelta(0)),
    ("999999", MAX_RETRY_AFTER),
    ("soon", None),
    ("", None),
    (None, None),
    ("-5", None),
])
def test_retry_after_reads_seconds_or_an_http_date_and_ignores_garbage(header, expected):
    assert parse_retry_after(header, NOW) == expected


def test_an_http_date_without_a_zone_is_read_as_utc():
    # RFC 5322's "-0000" means "no zone given": parsedate_to_datetime answers a naive datetime, read here as UTC.
    assert parse_retry_after("Mon, 01 Jun 2026 12:05:00 -0000", NOW) == timedelta(minutes=5)


def test_attempts_count_from_one_and_the_refusal_says_so():
    with pytest.raises(ValueError, match="^attempt counts from 1$"):
        backoff_delay(0, base=BASE, cap=CAP)
