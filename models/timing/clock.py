"""The one place domain code and jobs read the time from.

Production uses :class:`SystemClock`; tests install a :class:`FrozenClock` and move it,
so no test ever waits in real time.
"""

import time
from datetime import datetime, timedelta, timezone
from typing import Protocol


class Clock(Protocol):
    """Anything that tells the time: :class:`SystemClock` in production, :class:`FrozenClock` in tests."""

    def now(self) -> datetime:
        """The current instant, aware UTC."""


def utc(dt: datetime) -> datetime:
    """Return ``dt`` as aware UTC; a naive value is refused."""
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError(f"naive datetime {dt.isoformat()} has no zone")
    return dt.astimezone(timezone.utc)


class SystemClock:
    """The host's clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(timezone.utc)

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of real time (a provider between polls)."""
        time.sleep(seconds)


class FrozenClock:
    """A clock that moves only when told to."""

    def __init__(self, at: datetime | None = None):
        self._now = utc(at) if at else datetime.now(timezone.utc)
        self.slept: list[float] = []  # every wait asked of :meth:`sleep`, in order

    def now(self) -> datetime:
        return self._now

    def set(self, at: datetime) -> None:
        self._now = utc(at)

    def advance(self, **delta) -> datetime:
        self._now += timedelta(**delta)
        return self._now

    def sleep(self, seconds: float) -> None:
        """A wait that takes no real time: the clock moves on by ``seconds`` and the wait is recorded."""
        self.slept.append(seconds)
        self._now += timedelta(seconds=seconds)
