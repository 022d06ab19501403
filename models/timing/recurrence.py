"""Recurring rules: an RFC 5545 RRULE in a workspace's zone, turned into UTC occurrences.

Pure values and functions: no database, no Flask, nothing beyond the standard library,
python-dateutil and the other ``models.timing`` modules.

A rule is what a person wrote (``FREQ=WEEKLY;BYDAY=TU``, an RRULE value without DTSTART),
the wall time of its first occurrence (``starts_local``, which also gives the time of day),
an optional end, skipped dates, and the workspace's zone. :func:`parse_recurrence` reads and
validates all of it within a fixed bound and returns a :class:`RecurrenceRule`, whose queries
answer occurrences in order of their instant.

Time across DST (the brief's "time across wings"):

- ``DAILY`` and coarser keep the wall time. dateutil generates each occurrence as a wall
  time and :func:`~models.timing.wall_time.resolve_wall_time` turns it into an instant: a
  time in the spring gap moves forward by the gap, a repeated time takes its first
  occurrence. The slot is the generated wall time before any shift, ``2026-12-01T09:00``.
- ``HOURLY`` steps in elapsed time: occurrences are exactly INTERVAL hours apart in UTC,
  counted from the first. BYDAY, BYMONTHDAY and BYMONTH are read on the occurrence's date in
  the workspace's zone (a Monday rule fires on the workspace's Mondays). A wall time repeats
  in the fall-back hour, so an hourly slot is the UTC instant, ``2026-11-01T06:00Z``, and an
  hourly occurrence carries no note (its ``local`` shows which offset it has).
- Two occurrences that resolve to one instant are one; the earlier slot is kept.
"""

import calendar
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import MAXYEAR, date, datetime, time, timedelta, timezone
from enum import Enum
from itertools import islice, takewhile

import dateutil.rrule

from models.timing.wall_time import WallTimeShift, load_zone, resolve_wall_time, to_local

__all__ = [
    "Frequency", "Occurrence", "OccurrenceNote", "RecurrenceError", "RecurrenceRule", "parse_recurrence",
    "MAX_CANDIDATES", "SEARCH_SPAN",
]

UTC = timezone.utc

SEARCH_SPAN = timedelta(days=3653)  # ten years: the furthest any search looks past its start
MAX_CANDIDATES = 100_000  # wall times (days, for an hourly rule) one search examines at most
MAX_RULE_LENGTH = 500
MAX_SKIPPED = 1_000
FIRST_YEAR, LAST_YEAR = 1900, 9000  # wall times outside are refused, far from datetime's limits
# Searches stop here, so shifting by centuries and converting to any zone stays in range.
_LAST_INSTANT = datetime(9900, 1, 1, tzinfo=UTC)
# A resolved instant shows at most a day later than its wall time (the longest gap on record
# is Samoa's skipped 30 December 2011) and a fall-back repeats a few hours at most.
_WALL_MARGIN = timedelta(days=2)


class RecurrenceError(ValueError):
    """A rule, or one of its fields, that cannot be accepted.

    ``part`` names the field that is wrong (``rrule``, ``starts_local``, ``ends_local`` or
    ``exdates_local``), ``code`` is a short reason for programs, and the message says what
    to change, naming the RRULE part at fault.
    """

    def __init__(self, part: str, code: str, message: str):
        super().__init__(message)
        self.part = part
        self.code = code
        self.message = message


class Frequency(str, Enum):
    """How often a rule steps; anything finer than hourly is refused."""

    HOURLY = "HOURLY"
    DAILY = "DAILY"
    WEEKLY = "WEEKLY"
    MONTHLY = "MONTHLY"
    YEARLY = "YEARLY"


class OccurrenceNote(str, Enum):
    """What happened to an occurrence's wall time on its way to UTC."""

    SHIFTED_BY_DST_GAP = "shifted_by_dst_gap"  # the wall time did not exist; moved forward
    FIRST_OF_REPEATED_HOUR = "first_of_repeated_hour"  # it happened twice; the first was taken


@dataclass(frozen=True)
class Occurrence:
    """One occurrence: its slot (the key of the row it mints), UTC instant, local time, note."""

    slot: str
    instant: datetime
    local: datetime
    note: OccurrenceNote | None


_NOTES = {
    WallTimeShift.NONE: None,
    WallTimeShift.GAP: OccurrenceNote.SHIFTED_BY_DST_GAP,
    WallTimeShift.AMBIGUOUS: OccurrenceNote.FIRST_OF_REPEATED_HOUR,
}
_DATEUTIL_FREQUENCY = {
    Frequency.HOURLY: dateutil.rrule.HOURLY,
    Frequency.DAILY: dateutil.rrule.DAILY,
    Frequency.WEEKLY: dateutil.rrule.WEEKLY,
    Frequency.MONTHLY: dateutil.rrule.MONTHLY,
    Frequency.YEARLY: dateutil.rrule.YEARLY,
}
# The largest INTERVAL is ten years between occurrences, the reach of every search.
_MAX_INTERVAL = {
    Frequency.HOURLY: 87_672,
    Frequency.DAILY: 3_653,
    Frequency.WEEKLY: 521,
    Frequency.MONTHLY: 120,
    Frequency.YEARLY: 10,
}
_PERIOD = {
    Frequency.HOURLY: timedelta(hours=1),
    Frequency.DAILY: timedelta(days=1),
    Frequency.WEEKLY: timedelta(weeks=1),
    Frequency.MONTHLY: timedelta(days=31),
    Frequency.YEARLY: timedelta(days=366),
}
_UNITS = {Frequency.HOURLY: "hour", Frequency.DAILY: "day", Frequency.WEEKLY: "week",
          Frequency.MONTHLY: "month", Frequency.YEARLY: "year"}
_SUPPORTED = ("FREQ", "INTERVAL", "COUNT", "UNTIL", "BYDAY", "BYMONTHDAY", "BYMONTH", "BYSETPOS", "WKST")
_WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
_DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_BYDAY_ITEM = re.compile(r"([+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)")
_UNTIL = re.compile(r"(\d{4})(\d{2})(\d{2})(?:T(\d{2})(\d{2})(\d{2})(Z?))?")
_ORDINALS = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", -1: "last", -2: "second to last"}


@dataclass(frozen=True)
class RecurrenceRule:
    """A validated recurring rule: build it with :func:`parse_recurrence`, then ask for occurrences.

    Every query answers occurrences in order of their instant, none twice, none skipped by
    ``exdates_local``, none past the rule's end; the instants it takes must be timezone-aware.
    """

    text: str  # the RRULE as read: upper case, its parts in the order given
    frequency: Frequency
    interval: int
    count: int | None
    zone: str
    starts_local: datetime
    ends_local: datetime | None  # the inclusive end as a wall time, however it was given
    end_instant: datetime | None  # the last instant an occurrence may have
    skipped_dates: frozenset[date] = frozenset()
    skipped_instants: frozenset[datetime] = frozenset()
    by_weekday: tuple[tuple[int, int | None], ...] = ()  # (0 = Monday, ordinal such as -1 or None)
    by_month_day: tuple[int, ...] = ()
    by_month: tuple[int, ...] = ()
    by_set_pos: tuple[int, ...] = ()
    week_start: int = 0

    def first_occurrence(self) -> Occurrence | None:
        """The rule's first occurrence, or None when it has none in the ten years from its start."""
        begins = self._starts_instant()
        return next(self._occurrences(None, min(begins + SEARCH_SPAN, _LAST_INSTANT)), None)

    def occurrences_between(self, start: datetime, end: datetime) -> list[Occurrence]:
        """Every occurrence whose instant lies in ``[start, end)``, in order.

        This is the expander's window, and its cost follows the window, not the rule's age:
        a rule without COUNT is expanded from a period just before ``start`` on the rule's own
        grid of periods. COUNT counts from the first occurrence, so such a rule is walked from
        its start (cheaply: wall times long before ``start`` are not resolved).
        """
        _require_aware(start=start, end=end)
        if end <= start or start > _LAST_INSTANT:
            return []
        found = self._occurrences(start, min(end, _LAST_INSTANT))
        return list(takewhile(lambda occurrence: occurrence.instant < end, found))

    def next_occurrences(self, after: datetime, count: int) -> list[Occurrence]:
        """Up to ``count`` occurrences strictly after ``after``, looking ten years past it (or past the start)."""
        _require_aware(after=after)
        if after > _LAST_INSTANT:
            return []
        reach = min(max(after, self._starts_instant()), _LAST_INSTANT - SEARCH_SPAN) + SEARCH_SPAN
        later = self._occurrences(after, reach)
        return list(islice((o for o in later if o.instant > after), max(count, 0)))

    def last_occurrences(self, before: datetime, count: int) -> list[Occurrence]:
        """Up to ``count`` occurrences strictly before ``before``, oldest first, looking ten years back."""
        _require_aware(before=before)
        begins = self._starts_instant()
        if count < 1 or before <= begins:
            return []
        before = min(before, _LAST_INSTANT)
        floor = max(before - SEARCH_SPAN, begins)
        lookback = _PERIOD[self.frequency] * self.interval * count * 2
        while True:
            since = max(before - lookback, floor)
            found = self.occurrences_between(since, before)
            if len(found) >= count or since == floor:
                return found[-count:]
            lookback *= 4  # sparse filters: widen until enough are found or the floor is reached

    def has_occurrence_after(self, after: datetime) -> bool:
        """Whether the rule has an occurrence after ``after`` in the next ten years (if not, it has ended)."""
        return bool(self.next_occurrences(after, 1))

    def describe(self) -> str:
        """The rule in words, such as "every Tuesday at 09:00" (the RRULE itself where words fall short)."""
        start, every = self.starts_local, self.interval
        weekdays = [day for day, _ in self.by_weekday]
        coarse = self.frequency in (Frequency.MONTHLY, Frequency.YEARLY)
        if (self.by_set_pos or (self.by_weekday and self.by_month_day) or (self.by_month_day and not coarse)
                or (self.frequency is Frequency.YEARLY and (self.by_weekday or self.by_month_day))):
            words = f"{self.text} at {start:%H:%M}"  # shapes these words do not cover
        else:
            unit = _UNITS[self.frequency]
            words = f"every {unit}" if every == 1 else f"every {every} {unit}s"
            if self.frequency is Frequency.WEEKLY:
                days = sorted(weekdays or [start.weekday()])
                named = "weekday" if days == [0, 1, 2, 3, 4] else _and([_DAY_NAMES[d] for d in days])
                words = f"every {named}" if every == 1 else f"{words} on {named}"
            elif self.frequency is Frequency.MONTHLY:
                words += f" on {self._describe_days_of_month()}"
            elif self.frequency is Frequency.YEARLY:
                words += f" on {start.day} " + _and([calendar.month_name[m] for m in self.by_month or [start.month]])
            elif weekdays:
                words += " on " + _and([_DAY_NAMES[d] for d in weekdays])
            if self.by_month and self.frequency is not Frequency.YEARLY:
                words += " in " + _and([calendar.month_name[m] for m in self.by_month])
            words += f" from {start:%Y-%m-%d %H:%M}" if self.frequency is Frequency.HOURLY else f" at {start:%H:%M}"
        if self.count is not None:
            words += f", {self.count} times" if self.count > 1 else ", once"
        if self.ends_local is not None:
            words += f", until {self.ends_local:%Y-%m-%d %H:%M}"
        return words

    def _describe_days_of_month(self) -> str:
        """Which days of the month a monthly rule takes, in words."""
        if self.by_weekday:
            return _and([f"the {_ORDINALS.get(n, f'number {n}')} {_DAY_NAMES[d]}" if n else f"every {_DAY_NAMES[d]}"
                         for d, n in self.by_weekday])
        days = self.by_month_day or (self.starts_local.day,)
        return _and(["the last day" if d == -1 else f"day {d}" for d in days])

    def _starts_instant(self) -> datetime:
        """The instant of ``starts_local`` in the rule's zone."""
        return resolve_wall_time(self.starts_local.date(), self.starts_local.time(), self.zone).instant

    def _occurrences(self, since: datetime | None, horizon: datetime) -> Iterator[Occurrence]:
        """Occurrences with an instant from ``since`` (None: the first) to ``horizon``, inclusive."""
        if since is not None and since <= self._starts_instant():
            since = None  # no occurrence comes before the start: walk from it
        if self.frequency is Frequency.HOURLY:
            return self._hourly_occurrences(since, horizon)
        return self._calendar_occurrences(since, horizon)

    def _calendar_occurrences(self, since: datetime | None, horizon: datetime) -> Iterator[Occurrence]:
        """A DAILY-or-coarser rule's occurrences: wall times from dateutil, each resolved in the zone."""
        earliest = None if since is None else to_local(since, self.zone).replace(tzinfo=None) - _WALL_MARGIN
        last_wall = to_local(horizon, self.zone).replace(tzinfo=None) + _WALL_MARGIN
        previous = None
        for wall in self._wall_times(earliest, last_wall):
            if (earliest is not None and wall < earliest) or wall.date() in self.skipped_dates:
                continue
            resolved = resolve_wall_time(wall.date(), wall.time(), self.zone)
            instant = resolved.instant
            # One wall time a day at most, and no gap longer than a day: instants never go back.
            if instant > horizon or (self.end_instant is not None and instant > self.end_instant):
                return
            if instant == previous or instant in self.skipped_instants or (since is not None and instant < since):
                continue
            previous = instant
            yield Occurrence(wall.isoformat(timespec="minutes"), instant, resolved.local, _NOTES[resolved.shift])

    def _hourly_occurrences(self, since: datetime | None, horizon: datetime) -> Iterator[Occurrence]:
        """An HOURLY rule's occurrences: elapsed-time steps from the first, filtered on local dates."""
        zone = load_zone(self.zone)
        first = self._starts_instant()
        step = timedelta(hours=self.interval)
        filtered = bool(self.by_weekday or self.by_month_day or self.by_month)
        # COUNT counts the occurrences the filters let through, so a filtered rule with COUNT
        # is counted day by day from its first day; any other rule jumps straight to ``since``.
        counting = filtered and self.count is not None
        day = to_local(first if since is None or counting else max(since, first), self.zone).date()
        day_start = resolve_wall_time(day, time(0), self.zone).instant
        counted = 0
        for _ in range(MAX_CANDIDATES):
            if day_start > horizon or (self.end_instant is not None and day_start > self.end_instant):
                return
            next_day = day + timedelta(days=1)
            next_start = resolve_wall_time(next_day, time(0), self.zone).instant
            if not filtered or self._passes_day_filters(day):
                low, high = max(0, _steps_until(first, day_start, step)), _steps_until(first, next_start, step)
                if counting and since is not None and next_start <= since:
                    counted += max(0, high - low)  # a whole day before ``since``: count it, build nothing
                    low = high
                for k in range(low, high):
                    if self.count is not None and (counted if counting else k) >= self.count:
                        return
                    counted += 1
                    instant = first + k * step
                    if instant > horizon or (self.end_instant is not None and instant > self.end_instant):
                        return
                    if (since is not None and instant < since) or day in self.skipped_dates:
                        continue
                    if instant not in self.skipped_instants:
                        slot = instant.replace(tzinfo=None).isoformat(timespec="minutes") + "Z"
                        yield Occurrence(slot, instant, instant.astimezone(zone), None)
            if counting and counted >= self.count:
                return
            day, day_start = next_day, next_start

    def _passes_day_filters(self, day: date) -> bool:
        """Whether ``day`` passes BYMONTH, BYMONTHDAY and BYDAY's weekdays (ordinals and BYSETPOS aside)."""
        if self.by_month and day.month not in self.by_month:
            return False
        if self.by_weekday and day.weekday() not in {weekday for weekday, _ in self.by_weekday}:
            return False
        if self.by_month_day:
            days_in_month = calendar.monthrange(day.year, day.month)[1]
            return day.day in self.by_month_day or day.day - days_in_month - 1 in self.by_month_day
        return True

    def _wall_times(self, earliest: datetime | None, last_wall: datetime) -> Iterator[datetime]:
        """The wall times dateutil generates from about ``earliest`` (None: the start) to ``last_wall``."""
        anchor = self._anchor(earliest)
        if anchor > last_wall:
            return
        # dateutil walks period after period until a wall time matches, and gives up only at
        # year 9999: a rule whose parts never meet (30 February) would spin through thousands
        # of years. The calendar repeats exactly every 400 years (weekdays and leap days alike),
        # so expanding the rule a multiple of 400 years later and shifting the results back is
        # exact, and it puts year 9999 less than 400 years past ``last_wall``.
        shift = 400 * ((MAXYEAR - last_wall.year) // 400)
        expansion = dateutil.rrule.rrule(dtstart=_years_later(anchor, shift), **self._dateutil_parts())
        for examined, shifted in enumerate(expansion):
            wall = _years_later(shifted, -shift)
            if wall > last_wall or examined >= MAX_CANDIDATES:
                return
            yield wall

    def _anchor(self, earliest: datetime | None) -> datetime:
        """Where to expand from: ``starts_local``, or a later period start on the rule's grid.

        Without COUNT, a rule's occurrences in one period do not depend on earlier periods,
        and dateutil builds each period's set whole (BYSETPOS picks from the whole set), so
        starting at the first day of a period that is a whole number of INTERVALs after the
        first one gives the same occurrences from there on. The anchor stays at least one
        INTERVAL before ``earliest``.
        """
        start = self.starts_local
        if earliest is None or self.count is not None or earliest <= start:
            return start
        if self.frequency is Frequency.DAILY:
            periods, first_period = (earliest.date() - start.date()).days, start.date()
        elif self.frequency is Frequency.WEEKLY:
            first_period = start.date() - timedelta(days=(start.weekday() - self.week_start) % 7)
            periods = (earliest.date() - first_period).days // 7
        elif self.frequency is Frequency.MONTHLY:
            periods, first_period = (earliest.year - start.year) * 12 + earliest.month - start.month, None
        else:
            periods, first_period = earliest.year - start.year, None
        jumps = (periods // self.interval - 1) * self.interval
        if jumps <= 0:
            return start
        if self.frequency is Frequency.DAILY:
            return start + timedelta(days=jumps)
        if self.frequency is Frequency.WEEKLY:
            return datetime.combine(first_period + timedelta(weeks=jumps), start.time())
        if self.frequency is Frequency.MONTHLY:
            year, month = divmod(start.year * 12 + start.month - 1 + jumps, 12)
            return start.replace(year=year, month=month + 1, day=1)
        return start.replace(year=start.year + jumps, month=1, day=1)

    def _dateutil_parts(self) -> dict:
        """The rule as dateutil's keyword arguments (all but dtstart)."""
        weekdays = [dateutil.rrule.weekdays[day](n) if n else dateutil.rrule.weekdays[day]
                    for day, n in self.by_weekday]
        month_days, months = list(self.by_month_day), list(self.by_month)
        # Without BYDAY or BYMONTHDAY, dateutil takes the day from DTSTART. Expansions may
        # start from a later anchor (see _anchor), so the first occurrence's day is written out.
        if not weekdays and not month_days:
            if self.frequency is Frequency.WEEKLY:
                weekdays = [self.starts_local.weekday()]
            elif self.frequency in (Frequency.MONTHLY, Frequency.YEARLY):
                month_days = [self.starts_local.day]
            if self.frequency is Frequency.YEARLY and not months:
                months = [self.starts_local.month]
        frequency = _DATEUTIL_FREQUENCY[self.frequency]
        # A daily rule that filters days is the same set of days as a yearly one with the same
        # filters, and dateutil checks a year at a time much faster than a day at a time: a
        # daily rule that never matches is refused in milliseconds instead of a tenth of a second.
        if self.frequency is Frequency.DAILY and self.interval == 1 and (weekdays or month_days):
            frequency = dateutil.rrule.YEARLY
        return {
            "freq": frequency,
            "interval": self.interval,
            "count": self.count,
            "wkst": self.week_start,
            "byweekday": weekdays or None,
            "bymonthday": month_days or None,
            "bymonth": months or None,
            "bysetpos": list(self.by_set_pos) or None,
        }


def parse_recurrence(
    rrule: str,
    *,
    starts_local: datetime,
    zone: str,
    ends_local: datetime | None = None,
    exdates_local: Iterable[date | datetime] = (),
    max_per_day: int = 24,
) -> RecurrenceRule:
    """Read and validate a recurring rule, or raise :class:`RecurrenceError` naming the part at fault.

    ``rrule`` is an RFC 5545 RRULE value without DTSTART, such as ``FREQ=WEEKLY;BYDAY=TU``
    (a leading ``RRULE:`` is allowed), made of FREQ (HOURLY, DAILY, WEEKLY, MONTHLY or
    YEARLY), INTERVAL, COUNT, UNTIL, BYDAY (``-1FR`` with MONTHLY or YEARLY), BYMONTHDAY
    (``-1`` is the last day; 29 to 31 skip the months without that day), BYMONTH, BYSETPOS and
    WKST. The time of day comes from ``starts_local``, so BYHOUR, BYMINUTE and BYSECOND are
    refused; so is every other part.

    ``starts_local`` is a naive wall datetime, to the minute, in ``zone``: the earliest
    occurrence (itself when the rule matches it, else the rule's first match after it).
    ``ends_local`` is an optional naive wall datetime, inclusive; it cannot be given beside
    UNTIL or COUNT. An UNTIL ending in ``Z`` is a UTC instant, shown in the zone as the rule's
    ``ends_local``; one without ``Z`` is a wall time; a bare date ends with that day.
    ``exdates_local`` skips occurrences: a ``date`` every occurrence on that date (the slot's
    date, or an hourly occurrence's local date), a naive ``datetime`` the occurrence at that
    wall time (resolved like any wall time), an aware one the occurrence at that instant.
    ``max_per_day`` is the most occurrences allowed in any 24 hours (only an hourly rule can
    have more than one; a local day of 25 hours in the fall is not held against it).

    Validation is bounded whatever the text: at most 500 characters, INTERVAL at most ten
    years, and the search for a first occurrence looks ten years past ``starts_local`` (or
    100,000 candidates) and no further. A rule with no occurrence there is refused
    (``no_occurrences``). An unknown ``zone`` raises
    :class:`~models.timing.wall_time.InvalidTimezone`.
    """
    if not isinstance(max_per_day, int) or max_per_day < 1:
        raise ValueError("max_per_day must be a whole number of at least 1")
    load_zone(zone)
    parts = _split_rule(rrule)
    frequency = _read_frequency(parts["FREQ"])
    fields = _read_filters(parts, frequency)
    interval = _whole_number("INTERVAL", parts.get("INTERVAL", "1"), 1, _MAX_INTERVAL[frequency],
                             f"from 1 to {_MAX_INTERVAL[frequency]} with FREQ={frequency.value} (ten years)")
    count = None
    if "COUNT" in parts:
        count = _whole_number("COUNT", parts["COUNT"], 1, 10**12 - 1, "of at least 1")
        if "UNTIL" in parts:
            raise RecurrenceError("rrule", "count_and_until", "COUNT and UNTIL cannot both be given; keep one")
    starts = _wall_minute("starts_local", starts_local)
    ends, end_instant = _read_end(parts.get("UNTIL"), ends_local, count is not None, zone)
    rule = RecurrenceRule(
        text=";".join(f"{name}={value}" for name, value in parts.items()),
        frequency=frequency, interval=interval, count=count, zone=zone, starts_local=starts,
        ends_local=ends, end_instant=end_instant, **fields, **_read_skipped(exdates_local, zone),
    )
    if end_instant is not None and end_instant < rule._starts_instant():
        part = "rrule" if ends_local is None else "ends_local"
        raise RecurrenceError(part, "ends_before_start", f"The rule ends ({ends:%Y-%m-%d %H:%M}) before "
                              f"starts_local ({starts:%Y-%m-%d %H:%M})")
    if frequency is Frequency.HOURLY and -(-24 // interval) > max_per_day:
        raise RecurrenceError(
            "rrule", "too_many_per_day",
            f"FREQ=HOURLY;INTERVAL={interval} fires up to {-(-24 // interval)} times a day; at most "
            f"{max_per_day} are allowed (use INTERVAL={-(-24 // max_per_day)} or more)")
    # A cheap necessary condition first: the BY parts must meet on some day in reach. It turns
    # the usual impossible rule (30 February) away in milliseconds, before dateutil looks.
    first_day = starts.date()
    if not any(rule._passes_day_filters(first_day + timedelta(days=n)) for n in range(SEARCH_SPAN.days)):
        _explain_no_occurrence(rule, ends_local is not None, search=False)
    if rule.first_occurrence() is None:
        _explain_no_occurrence(rule, ends_local is not None)
    return rule


def _explain_no_occurrence(rule: RecurrenceRule, end_is_ends_local: bool, search: bool = True) -> None:
    """Raise the error for a rule with no occurrence, blaming its end or its skipped dates if they are why."""
    unlimited = replace(rule, end_instant=None, skipped_dates=frozenset(), skipped_instants=frozenset())
    first = unlimited.first_occurrence() if search else None
    if first is None:
        raise RecurrenceError("rrule", "no_occurrences", f"{rule.text} has no occurrence in the ten years "
                              "from starts_local; check that its BY parts can all be met")
    if rule.end_instant is not None and first.instant > rule.end_instant:
        raise RecurrenceError("ends_local" if end_is_ends_local else "rrule", "ends_before_first",
                              f"The rule ends before its first occurrence ({first.local:%Y-%m-%d %H:%M})")
    raise RecurrenceError("exdates_local", "all_skipped", "The skipped dates leave the rule no occurrence "
                          "in the ten years from starts_local")


def _split_rule(text: object) -> dict[str, str]:
    """The rule's NAME=VALUE parts, upper case, each one Tickwork supports, FREQ among them."""
    if not isinstance(text, str):
        raise RecurrenceError("rrule", "unparsable", "The rule must be text such as FREQ=WEEKLY;BYDAY=TU")
    if len(text) > MAX_RULE_LENGTH:
        raise RecurrenceError("rrule", "too_long", f"The rule is {len(text)} characters long; "
                              f"the most is {MAX_RULE_LENGTH}")
    # An iCalendar snippet pasted whole ("DTSTART:...\nRRULE:FREQ=...") says so, not "DTSTART:...RRULE:FREQ".
    lines = [line.strip() for line in text.splitlines() if line.strip()] or [""]
    if any(line[:7].upper() == "DTSTART" for line in lines):
        raise RecurrenceError("rrule", "dtstart_in_rule", "DTSTART does not belong in the rule: the first "
                              "occurrence (starts_local) sets the date and time; keep only the RRULE line")
    if len(lines) > 1:
        raise RecurrenceError("rrule", "unparsable", "The rule is one line, such as FREQ=WEEKLY;BYDAY=TU")
    body = lines[0]
    if body[:6].upper() == "RRULE:":
        body = body[6:]
    parts: dict[str, str] = {}
    for piece in filter(str.strip, body.split(";")):
        name, equals, value = ("".join(side.split()).upper() for side in piece.partition("="))
        if not equals or not name or not value:
            raise RecurrenceError("rrule", "unparsable", f"{_quote(piece.strip())} is not NAME=VALUE, "
                                  "as in FREQ=WEEKLY;BYDAY=TU")
        if name in ("BYHOUR", "BYMINUTE", "BYSECOND"):
            raise RecurrenceError("rrule", "time_of_day_part", f"{name} is not supported: the time of day "
                                  "comes from starts_local (make one rule per time of day)")
        if name == "DTSTART":
            raise RecurrenceError("rrule", "dtstart_in_rule", "DTSTART does not belong in the rule: "
                                  "the first occurrence is starts_local")
        if name not in _SUPPORTED:
            raise RecurrenceError("rrule", "unsupported_part", f"{_quote(name)} is not supported; "
                                  f"use {', '.join(_SUPPORTED[:-1])} or WKST")
        if name in parts:
            raise RecurrenceError("rrule", "repeated_part", f"{name} is given twice; keep one")
        parts[name] = value
    if not parts:
        raise RecurrenceError("rrule", "empty", "The rule is empty; write one such as FREQ=WEEKLY;BYDAY=TU")
    if "FREQ" not in parts:
        raise RecurrenceError("rrule", "missing_freq", "The rule needs a FREQ, as in FREQ=WEEKLY;BYDAY=TU")
    return parts


def _read_frequency(value: str) -> Frequency:
    """FREQ's value, refusing anything finer than hourly."""
    if value in ("MINUTELY", "SECONDLY"):
        raise RecurrenceError("rrule", "too_frequent", f"FREQ={value} is finer than hourly; "
                              "the finest is FREQ=HOURLY")
    if value not in Frequency.__members__:
        raise RecurrenceError("rrule", "bad_freq", f"FREQ={_quote(value)} is not a frequency; "
                              "use HOURLY, DAILY, WEEKLY, MONTHLY or YEARLY")
    return Frequency(value)


def _read_filters(parts: dict[str, str], frequency: Frequency) -> dict:
    """BYDAY, BYMONTHDAY, BYMONTH, BYSETPOS and WKST, checked alone and against FREQ."""
    by_weekday = _read_weekdays(parts["BYDAY"]) if "BYDAY" in parts else ()
    if any(n for _, n in by_weekday) and frequency not in (Frequency.MONTHLY, Frequency.YEARLY):
        raise RecurrenceError("rrule", "ordinal_needs_month", f"BYDAY={_quote(parts['BYDAY'])} numbers a day "
                              "(like -1FR); that needs FREQ=MONTHLY or FREQ=YEARLY")
    by_month_day = _numbers("BYMONTHDAY", parts.get("BYMONTHDAY"), 31,
                            "days of the month run from 1 to 31, or from -1 (the last) to -31")
    if by_month_day and frequency is Frequency.WEEKLY:
        raise RecurrenceError("rrule", "monthday_with_weekly", "BYMONTHDAY does not go with FREQ=WEEKLY; "
                              "use FREQ=MONTHLY")
    by_month = _numbers("BYMONTH", parts.get("BYMONTH"), 12, "months run from 1 to 12", negative=False)
    by_set_pos = _numbers("BYSETPOS", parts.get("BYSETPOS"), 366,
                          "positions run from 1 to 366, or from -1 (the last) to -366")
    if by_set_pos and frequency in (Frequency.HOURLY, Frequency.DAILY):
        raise RecurrenceError("rrule", "setpos_needs_period", "BYSETPOS picks among a week's, a month's or "
                              "a year's occurrences; it needs FREQ=WEEKLY, MONTHLY or YEARLY")
    if by_set_pos and not (by_weekday or by_month_day or by_month):
        raise RecurrenceError("rrule", "setpos_alone", "BYSETPOS needs BYDAY, BYMONTHDAY or BYMONTH to pick from")
    week_size = len({day for day, _ in by_weekday}) or 1
    if frequency is Frequency.WEEKLY and by_set_pos and all(abs(p) > week_size for p in by_set_pos):
        raise RecurrenceError("rrule", "setpos_out_of_reach", f"BYSETPOS={_quote(parts['BYSETPOS'])} asks for "
                              f"more than the {week_size} occurrence(s) a week of this rule has")
    week_start = parts.get("WKST", "MO")
    if week_start not in _WEEKDAYS:
        raise RecurrenceError("rrule", "bad_wkst", f"WKST={_quote(week_start)} is not a day; "
                              "use MO, TU, WE, TH, FR, SA or SU")
    return {"by_weekday": by_weekday, "by_month_day": by_month_day, "by_month": by_month,
            "by_set_pos": by_set_pos, "week_start": _WEEKDAYS.index(week_start)}


def _read_weekdays(value: str) -> tuple[tuple[int, int | None], ...]:
    """BYDAY's days: (0 = Monday, ordinal or None) for each of ``MO``, ``-1FR``, ``+2TU``..."""
    days = []
    for item in value.split(","):
        match = _BYDAY_ITEM.fullmatch(item.strip())
        ordinal = int(match.group(1)) if match and match.group(1) else None
        if not match or (ordinal is not None and not 1 <= abs(ordinal) <= 53):
            raise RecurrenceError("rrule", "bad_byday", f"BYDAY={_quote(value)}: {_quote(item)} is not a day; "
                                  "use MO, TU, WE, TH, FR, SA or SU, numbered like -1FR if need be")
        days.append((_WEEKDAYS.index(match.group(2)), ordinal))
    return tuple(days)


def _numbers(name: str, value: str | None, limit: int, expected: str, *, negative: bool = True) -> tuple[int, ...]:
    """A comma-separated list of whole numbers in ``1..limit`` (or ``-limit..-1`` when ``negative``)."""
    if value is None:
        return ()
    numbers = []
    for item in value.split(","):
        number = int(item) if re.fullmatch(r"[+-]?\d{1,4}", item.strip()) else 0
        if not (1 <= number <= limit or (negative and -limit <= number <= -1)):
            raise RecurrenceError("rrule", f"bad_{name.lower()}", f"{name}={_quote(value)}: {expected}")
        numbers.append(number)
    return tuple(numbers)


def _whole_number(name: str, value: str, low: int, high: int, expected: str) -> int:
    """One whole number in ``low..high``, or an error naming the part."""
    number = int(value) if re.fullmatch(r"\+?\d{1,12}", value) else low - 1
    if not low <= number <= high:
        raise RecurrenceError("rrule", f"bad_{name.lower()}", f"{name}={_quote(value)} must be a whole number {expected}")
    return number


def _read_end(until: str | None, ends_local: object, has_count: bool, zone: str) -> tuple[datetime | None, datetime | None]:
    """The rule's end as (inclusive wall time, last instant), from UNTIL or ``ends_local``."""
    if ends_local is not None:
        if until is not None or has_count:
            raise RecurrenceError("ends_local", "end_given_twice", "ends_local cannot be given when the rule "
                                  "has UNTIL or COUNT; keep one end")
        wall = _wall_minute("ends_local", ends_local)
        return wall, resolve_wall_time(wall.date(), wall.time(), zone).instant
    if until is None:
        return None, None
    match = _UNTIL.fullmatch(until)
    try:
        numbers = [int(group) for group in match.groups()[:6] if group is not None] if match else []
        moment = datetime(*numbers) if len(numbers) == 6 else date(*numbers)
    except (TypeError, ValueError):
        moment = None
    if moment is None or not FIRST_YEAR <= moment.year <= LAST_YEAR:
        raise RecurrenceError("rrule", "bad_until", f"UNTIL={_quote(until)} is not a date (YYYYMMDD) or a time "
                              f"(YYYYMMDDTHHMMSSZ) between {FIRST_YEAR} and {LAST_YEAR}")
    if not isinstance(moment, datetime):  # a bare date: the rule runs through that whole day
        next_day = resolve_wall_time(moment + timedelta(days=1), time(0), zone).instant
        return datetime.combine(moment, time(23, 59)), next_day - timedelta(microseconds=1)
    if match.group(7):  # UTC: the instant is exact; people see it as a wall time in the zone
        instant = moment.replace(tzinfo=UTC)
        return to_local(instant, zone).replace(tzinfo=None), instant
    return moment, resolve_wall_time(moment.date(), moment.time(), zone).instant


def _read_skipped(exdates: object, zone: str) -> dict[str, frozenset]:
    """``exdates_local`` as skipped dates and skipped instants."""
    if isinstance(exdates, (str, bytes)) or not isinstance(exdates, Iterable):
        raise RecurrenceError("exdates_local", "bad_exdates", "exdates_local must be a list of dates and wall times")
    values = list(islice(exdates, MAX_SKIPPED + 1))
    if len(values) > MAX_SKIPPED:
        raise RecurrenceError("exdates_local", "too_many_exdates", f"At most {MAX_SKIPPED} dates can be skipped")
    dates, instants = set(), set()
    for value in values:
        if not isinstance(value, date) or not FIRST_YEAR <= value.year <= LAST_YEAR:
            raise RecurrenceError("exdates_local", "bad_exdates", f"{_quote(repr(value))} is not a date or a "
                                  f"date and time between {FIRST_YEAR} and {LAST_YEAR}")
        if not isinstance(value, datetime):
            dates.add(value)
        elif value.tzinfo is not None:
            instants.add(value.astimezone(UTC))
        else:
            instants.add(resolve_wall_time(value.date(), value.time(), zone).instant)
    return {"skipped_dates": frozenset(dates), "skipped_instants": frozenset(instants)}


def _wall_minute(part: str, value: object) -> datetime:
    """A naive wall datetime to the minute, or an error naming ``part``."""
    if not isinstance(value, datetime):
        raise RecurrenceError(part, "bad_value", f"{part} must be a date and time such as 2026-12-01T09:00")
    if value.tzinfo is not None:
        raise RecurrenceError(part, "bad_value", f"{part} is a wall time in the workspace's zone; "
                              "give it without an offset")
    if value.second or value.microsecond:
        raise RecurrenceError(part, "bad_value", f"{part} is to the minute; drop the seconds")
    if not FIRST_YEAR <= value.year <= LAST_YEAR:
        raise RecurrenceError(part, "out_of_range", f"{part} must fall between {FIRST_YEAR} and {LAST_YEAR}")
    return value.replace(fold=0)


def _steps_until(first: datetime, moment: datetime, step: timedelta) -> int:
    """How many steps from ``first`` reach ``moment`` or just past it (ceil, possibly negative)."""
    return -((first - moment) // step)


def _years_later(wall: datetime, years: int) -> datetime:
    """``wall`` moved by a multiple of 400 years, where the calendar repeats (29 February included)."""
    return wall.replace(year=wall.year + years)


def _require_aware(**moments: datetime) -> None:
    """Refuse naive datetimes where an instant is expected."""
    for name, moment in moments.items():
        if not isinstance(moment, datetime) or moment.tzinfo is None or moment.utcoffset() is None:
            raise ValueError(f"{name} must be a timezone-aware datetime")


def _quote(text: str) -> str:
    """``text`` cut short enough to echo in a message."""
    return text if len(text) <= 40 else text[:37] + "..."


def _and(words: list[str]) -> str:
    """``["a", "b", "c"]`` as "a, b and c"."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
