"""When to try again after a send that did not go through: pure functions, no database."""

import random
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime

# A Retry-After further away than this is treated as this: a provider asking for days
# is better answered by an operator than by a row parked out of sight.
MAX_RETRY_AFTER = timedelta(hours=6)


def parse_retry_after(value: str | None, now: datetime) -> timedelta | None:
    """Retry-After as a delay: delta-seconds or an HTTP-date; None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    if value.isdecimal():
        return min(timedelta(seconds=int(value)), MAX_RETRY_AFTER)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return min(max(when - now, timedelta(0)), MAX_RETRY_AFTER)


def backoff_delay(
    attempt: int,
    *,
    base: timedelta,
    cap: timedelta,
    retry_after: timedelta | None = None,
    rng: random.Random | None = None,
) -> timedelta:
    """The wait before the next attempt after ``attempt`` attempts (1 = the first one failed).

    Exponential (base, 2×base, 4×base, ...) up to ``cap``, with "equal jitter" (between
    half and all of it) so rows that failed together do not come back together; never
    sooner than the provider's Retry-After.
    """
    if attempt < 1:
        raise ValueError("attempt counts from 1")
    ceiling = min(base * (2 ** (attempt - 1)), cap)
    half = ceiling / 2
    delay = half + half * (rng or random).random()
    if retry_after is not None and retry_after > delay:
        return retry_after
    return delay
