"""How long a drip step waits after the previous one: ISO 8601 durations, applied in a zone.

Pure functions: no database, no Flask.

A delay has two parts, kept apart because they behave differently across DST (the brief's
"Time across wings"):
- calendar days (``P2D``, ``P1W``): the same local time of day, so many days later in the
  contact's zone; the wall time is resolved by :func:`resolve_wall_time`, so a day delay that
  lands in a spring-forward gap moves forward by the gap, and one that lands in the repeated
  hour takes its first occurrence;
- elapsed time (``PT2H``, ``PT30M``, ``PT45S``): that many real hours, minutes and seconds,
  whatever the clocks do meanwhile.

A mixed delay (``P1DT12H``) counts the calendar days first, then adds the elapsed part. From
Saturday 2026-03-07 20:00 in New York, the night its clocks spring forward, ``P1DT12H`` is
Sunday 20:00, then twelve real hours: Monday 08:00. (Hours first would give Monday 09:00.)

Months and years are refused: a month is 28 to 31 days and a year 365 or 366, so "P1M" would
mean something different for each contact; the API asks for the days instead. Weeks are seven
calendar days. ``PT0S`` and ``P0D`` mean "at once".
"""

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from models.timing.clock import utc
from models.timing.wall_time import load_zone, resolve_wall_time

# A year, leap day included: a campaign is not planned further ahead than that, and a larger
# figure is nearly always a typo (P1000D for P100D) that would park a contact out of sight.
MAX_DELAY = timedelta(days=366)

# Far longer than any delay a person writes ("P52W2DT23H59M59S" is 16 characters); refusing
# longer text first also keeps int() away from thousand-digit numbers.
_MAX_TEXT_LENGTH = 32

_SECONDS_PER_DAY = 24 * 60 * 60

_ISO_DURATION = re.compile(
    r"P(?:(?P<years>\d+)Y)?(?:(?P<months>\d+)M)?(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?=\d)(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+)S)?)?",
    re.ASCII,  # int() would read Arabic-Indic and other digits too; the API takes 0-9 only
)

_TOO_LONG = (
    f"A delay can be at most {MAX_DELAY.days} days; a longer wait is almost always a typo "
    "(P1000D for P100D)."
)

_EXAMPLES = "for example P2D (two days), PT30M (thirty minutes), P1DT12H or PT0S (at once)"


class InvalidDelay(ValueError):
    """A step delay the API cannot take; ``part`` is the field that is wrong (``delay``)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.part = "delay"
        self.message = message


@dataclass(frozen=True)
class Delay:
    """A step's wait: whole calendar days in the contact's zone, then elapsed time.

    ``calendar_days`` keep the local time of day across DST; ``elapsed`` is real time.
    Build one with :func:`parse_delay`; :attr:`iso` and :attr:`in_words` render it back.
    """

    calendar_days: int = 0
    elapsed: timedelta = timedelta(0)

    def __post_init__(self):
        if self.calendar_days < 0 or self.elapsed < timedelta(0):
            raise InvalidDelay("A delay cannot be negative: it counts forward from the previous step.")
        if self.elapsed % timedelta(seconds=1):
            raise InvalidDelay("A delay is counted in whole seconds.")
        if timedelta(days=self.calendar_days) + self.elapsed > MAX_DELAY:
            raise InvalidDelay(_TOO_LONG)

    @property
    def is_immediate(self) -> bool:
        """True for ``PT0S``: the step goes as soon as it may."""
        return self.calendar_days == 0 and not self.elapsed

    @property
    def iso(self) -> str:
        """The delay as an ISO 8601 duration: days, then hours, minutes and seconds (``P1DT12H``)."""
        if self.is_immediate:
            return "PT0S"
        hours, minutes, seconds = _hours_minutes_seconds(self.elapsed)
        date_part = f"{self.calendar_days}D" if self.calendar_days else ""
        time_part = "".join(f"{n}{unit}" for n, unit in ((hours, "H"), (minutes, "M"), (seconds, "S")) if n)
        return "P" + date_part + ("T" + time_part if time_part else "")

    @property
    def in_words(self) -> str:
        """A short phrase for a person: "2 days", "30 minutes", "1 day and 12 hours", "at once"."""
        if self.is_immediate:
            return "at once"
        hours, minutes, seconds = _hours_minutes_seconds(self.elapsed)
        if self.calendar_days and self.calendar_days % 7 == 0:
            counts = [(self.calendar_days // 7, "week")]
        else:
            counts = [(self.calendar_days, "day")]
        counts += [(hours, "hour"), (minutes, "minute"), (seconds, "second")]
        phrases = [f"{n} {unit}" + ("" if n == 1 else "s") for n, unit in counts if n]
        if len(phrases) == 1:
            return phrases[0]
        return ", ".join(phrases[:-1]) + " and " + phrases[-1]


def _hours_minutes_seconds(elapsed: timedelta) -> tuple[int, int, int]:
    """Split elapsed time into whole hours (not carried into days), minutes and seconds."""
    total = elapsed // timedelta(seconds=1)
    return total // 3600, total % 3600 // 60, total % 60


def parse_delay(text: object) -> Delay:
    """Read a step delay as the API takes it: an ISO 8601 duration such as ``P2D`` or ``PT30M``.

    Accepted: weeks (``P1W``, seven calendar days), days, hours, minutes and whole seconds,
    alone or mixed (``P1DT12H``); ``PT0S`` or ``P0D`` for "at once". Hours are not carried into
    days: ``PT36H`` stays 36 elapsed hours. Raises :class:`InvalidDelay`, with a message a
    person can act on, for anything else: months or years, a sign, fractions, an empty
    duration, a delay over :data:`MAX_DELAY`, or text that is not a duration at all.
    """
    if not isinstance(text, str):
        raise InvalidDelay(f"A delay is an ISO 8601 duration written as text, {_EXAMPLES}.")
    if text.startswith(("-", "+")) or text.startswith("P-"):
        raise InvalidDelay("A delay cannot be negative: it counts forward from the previous step.")
    if len(text) > _MAX_TEXT_LENGTH:
        raise InvalidDelay(f"{text[:_MAX_TEXT_LENGTH]}... is not an ISO 8601 duration; {_EXAMPLES}.")
    if re.search(r"[0-9][.,][0-9]", text):
        raise InvalidDelay(f"{text!r} has a fraction; use whole units, for example PT90M instead of PT1.5H.")
    found = _ISO_DURATION.fullmatch(text)
    if found is None or not any(found.groupdict().values()):
        raise InvalidDelay(f"{text!r} is not an ISO 8601 duration; {_EXAMPLES}.")
    if found["years"] or found["months"]:
        # P5M is a classic slip for PT5M; say so rather than leave the reader puzzled.
        minutes_hint = f"; PT{found['months']}M would be minutes" if text == f"P{found['months']}M" else ""
        raise InvalidDelay(
            f"{text!r} counts in months or years, which are not a fixed number of days (a month is "
            f"28 to 31); give the days instead, for example P30D{minutes_hint}."
        )
    weeks, days, hours, minutes, seconds = (
        int(found[unit] or 0) for unit in ("weeks", "days", "hours", "minutes", "seconds")
    )
    calendar_days = 7 * weeks + days
    elapsed_seconds = 3600 * hours + 60 * minutes + seconds
    # Checked on plain integers first: timedelta() overflows on the figures a typo can produce.
    if calendar_days * _SECONDS_PER_DAY + elapsed_seconds > MAX_DELAY.total_seconds():
        raise InvalidDelay(_TOO_LONG)
    return Delay(calendar_days=calendar_days, elapsed=timedelta(seconds=elapsed_seconds))


def apply_delay(start: datetime, delay: Delay, zone_name: str) -> datetime:
    """The UTC instant ``delay`` after ``start``, for a contact in ``zone_name``.

    Calendar days first: the same local time of day, ``delay.calendar_days`` later in the zone,
    resolved by :func:`resolve_wall_time` (a gap moves it forward, a repeated hour takes its
    first occurrence). Then the elapsed part, in real time. ``start`` must be aware; a naive
    datetime raises ValueError and an unknown zone :class:`InvalidTimezone`, even when the
    delay has no days and the zone would not be consulted.
    """
    zone = load_zone(zone_name)
    start = utc(start)
    moved = start
    if delay.calendar_days:
        local = start.astimezone(zone)
        day = local.date() + timedelta(days=delay.calendar_days)
        moved = resolve_wall_time(day, local.time(), zone_name).instant
    return (moved + delay.elapsed).astimezone(timezone.utc)
