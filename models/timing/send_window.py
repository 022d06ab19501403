"""Send windows (quiet hours) in a contact's zone: when a drip step may go out.

Pure functions: no database, no Flask.

A window opens at ``start`` on each of its days and closes at ``end``, in the contact's zone.
An instant inside it is sent as it is; any other waits for the next opening:
a step due at 03:10 with a 09:00–20:00 window goes at 09:00 that morning, and one due on
Saturday with a Monday-to-Friday window goes at 09:00 on Monday.

How the edges are read:
- Open at ``start``, closed at ``end``: a step due at 20:00 sharp with a 09:00–20:00 window
  waits for the next morning.
- Both edges are wall times, resolved by :func:`resolve_wall_time` like every other: a window
  opening at 02:30 on a spring-forward day opens at 03:30; an edge inside the repeated hour of
  a fall-back night is its first occurrence. A window whose opening is pushed by the gap to its
  closing or past it (02:30–03:15 in New York: it would open at 03:30) does not open that day.
- An ``end`` earlier than ``start`` closes the next day (``22:00``–``06:00``, for night-shift
  audiences). The whole night belongs to the day the window opens: a Friday-only 22:00–06:00
  window runs from Friday 22:00 to Saturday 06:00, so Saturday 03:00 is inside it and Friday
  03:00 is not (that would be Thursday's night).
- ``"24:00"`` may end a window: it closes at midnight. ``00:00``–``24:00`` is open all day, for
  a window that only leaves out days of the week.
- A ``start`` equal to ``end`` is refused: it could mean "never" or "all day", and a quiet-hours
  setting that silently means "any time" defeats its purpose; ``00:00``–``24:00`` says all day.
"""

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from enum import IntEnum
from typing import NamedTuple

from models.timing.clock import utc
from models.timing.wall_time import ResolvedTime, WallTimeShift, load_zone, resolve_wall_time

# How far ahead the next opening is looked for. A week finds every allowed day; the second
# week is for a window that the spring-forward gap keeps shut on its one allowed day that
# week (see above). No zone springs forward twice seven days apart.
LOOK_AHEAD_DAYS = 14

_EXAMPLE = '{"start": "09:00", "end": "20:00", "days": ["mon", "tue", "wed", "thu", "fri"]}'
_WALL_TIME = re.compile(r"(?P<hour>[01][0-9]|2[0-3]):(?P<minute>[0-5][0-9])", re.ASCII)
_MIDNIGHT_AT_THE_END = "24:00"
_NO_DAYS = "A send window needs at least one day it is open on."
_SAME_START_AND_END = (
    "The window opens and closes at {at}, which could mean never or always; "
    "for any time of day write 00:00 to 24:00."
)
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")


class InvalidSendWindow(ValueError):
    """A send window the API cannot take; ``part`` names the field that is wrong.

    ``part`` is ``start``, ``end``, ``days``, an unknown key, or None when the value is not a
    window at all.
    """

    def __init__(self, part: str | None, message: str):
        super().__init__(message)
        self.part = part
        self.message = message


class Weekday(IntEnum):
    """A day of the week, numbered as :meth:`date.weekday` numbers them."""

    MON = 0
    TUE = 1
    WED = 2
    THU = 3
    FRI = 4
    SAT = 5
    SUN = 6

    @property
    def code(self) -> str:
        """The API's spelling: ``mon``."""
        return self.name.lower()

    @property
    def in_words(self) -> str:
        """The day's English name: ``Monday``."""
        return ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")[self]


@dataclass(frozen=True)
class SendWindow:
    """When a contact may receive a step: from ``start`` to ``end`` on ``days``, in their zone.

    ``end`` at or before ``start`` closes the next day, and the night belongs to the day the
    window opened. ``end == start`` is refused, except at midnight: ``00:00``–``24:00`` is held
    as start and end both ``time(0)``, all day.
    Build one from the API's shape with :func:`parse_send_window`; :meth:`as_dict` gives it back.
    """

    start: time
    end: time
    days: frozenset[Weekday]

    def __post_init__(self):
        object.__setattr__(self, "days", frozenset(Weekday(day) for day in self.days))
        if not self.days:
            raise InvalidSendWindow("days", _NO_DAYS)
        for part, edge in (("start", self.start), ("end", self.end)):
            if edge.second or edge.microsecond or edge.tzinfo is not None:
                raise InvalidSendWindow(
                    part, f"A send window's {part} is a wall time in whole minutes, such as 09:00."
                )
        if self.start == self.end != time(0):
            raise InvalidSendWindow("end", _SAME_START_AND_END.format(at=f"{self.start:%H:%M}"))

    @property
    def closes_next_day(self) -> bool:
        """True when the window runs past midnight (or until it)."""
        return self.end <= self.start

    def as_dict(self) -> dict:
        """The API's shape: ``{"start": "09:00", "end": "20:00", "days": ["mon", ...]}``."""
        return {
            "start": f"{self.start:%H:%M}",
            "end": _MIDNIGHT_AT_THE_END if self.end == time(0) else f"{self.end:%H:%M}",
            "days": [day.code for day in sorted(self.days)],
        }

    @property
    def in_words(self) -> str:
        """A short description for a person: ``Mon–Fri 09:00–20:00``, ``Sat, Sun all day``."""
        shape = self.as_dict()
        hours = f"{shape['start']}–{shape['end']}"
        if self.end == self.start == time(0):
            hours = "all day"
        elif self.closes_next_day and self.end != time(0):
            hours += " the next day"
        return f"{_days_in_words(self.days)} {hours}"


class PushedInstant(NamedTuple):
    """Where :func:`push_into_window` put an instant, and why, for the people who will ask."""

    instant: datetime
    note: str | None  # None when the instant was already inside the window


def _days_in_words(days: frozenset[Weekday]) -> str:
    """``every day``, ``Mon–Fri``, ``Mon, Wed, Fri``: runs of three or more days as ranges."""
    if len(days) == 7:
        return "every day"
    runs: list[list[Weekday]] = []
    for day in sorted(days):
        if runs and runs[-1][-1] == day - 1:
            runs[-1].append(day)
        else:
            runs.append([day])
    names = []
    for run in runs:
        first, last = run[0].code.title(), run[-1].code.title()
        names += [f"{first}–{last}"] if len(run) >= 3 else [day.code.title() for day in run]
    return ", ".join(names)


def _parse_wall_time(value: object, part: str) -> time:
    """``"09:00"`` as a time; ``"24:00"`` only as an end, where it is midnight."""
    if part == "end" and value == _MIDNIGHT_AT_THE_END:
        return time(0)
    found = _WALL_TIME.fullmatch(value) if isinstance(value, str) else None
    if found is None:
        hint = "; a window that opens at midnight starts at 00:00" if value == _MIDNIGHT_AT_THE_END else ""
        raise InvalidSendWindow(
            part, f"{value!r} is not a time of day; write it as HH:MM on a 24-hour clock, for example 09:00{hint}."
        )
    return time(int(found["hour"]), int(found["minute"]))


def _parse_days(value: object) -> frozenset[Weekday]:
    """The list of day codes, each known and listed once."""
    codes = {day.code: day for day in Weekday}
    spelled = ", ".join(codes)
    if not isinstance(value, list):
        raise InvalidSendWindow("days", f"days is a list of days of the week, each one of {spelled}.")
    if not value:
        raise InvalidSendWindow("days", _NO_DAYS)
    days: set[Weekday] = set()
    for item in value:
        if not isinstance(item, str) or item not in codes:
            raise InvalidSendWindow("days", f"{item!r} is not a day of the week; write each as one of {spelled}.")
        if codes[item] in days:
            raise InvalidSendWindow("days", f"{item!r} is listed twice.")
        days.add(codes[item])
    return frozenset(days)


def parse_send_window(value: object) -> SendWindow:
    """Read a send window in the API's shape: ``{"start": "09:00", "end": "20:00", "days": [...]}``.

    ``start`` and ``end`` are ``HH:MM`` on a 24-hour clock (``end`` may be ``24:00``, midnight);
    an end earlier than the start closes the next day; equal ones are refused. ``days`` lists
    at least one of ``mon`` ... ``sun``, each once. Raises :class:`InvalidSendWindow` naming the
    part that is wrong, for a missing or unknown key, a bad time, or bad days.
    """
    if not isinstance(value, dict):
        raise InvalidSendWindow(None, f"A send window is an object such as {_EXAMPLE}.")
    for key in value:
        if key not in ("start", "end", "days"):
            raise InvalidSendWindow(
                str(key), f"{key!r} is not part of a send window; it takes start, end and days."
            )
    for key in ("start", "end", "days"):
        if key not in value:
            raise InvalidSendWindow(
                key, f"The send window has no {key}; it needs start, end and days, as in {_EXAMPLE}."
            )
    start = _parse_wall_time(value["start"], "start")
    end = _parse_wall_time(value["end"], "end")
    if value["start"] == value["end"]:  # "00:00" twice, which the dataclass would take as all day
        raise InvalidSendWindow("end", _SAME_START_AND_END.format(at=value["start"]))
    return SendWindow(start=start, end=end, days=_parse_days(value["days"]))


def _openings(window: SendWindow, zone_name: str, first_day: date, last_day: date):
    """Each opening from ``first_day`` to ``last_day`` in order, as (opening, closing instant)."""
    day = first_day
    while day <= last_day:
        if Weekday(day.weekday()) in window.days:
            opening = resolve_wall_time(day, window.start, zone_name)
            closing_day = day + timedelta(days=1) if window.closes_next_day else day
            closing = resolve_wall_time(closing_day, window.end, zone_name).instant
            # Empty only when the gap pushed the opening to the closing or past it: shut that day.
            if closing > opening.instant:
                yield opening, closing
        day += timedelta(days=1)


def is_inside_window(instant: datetime, window: SendWindow, zone_name: str) -> bool:
    """True when ``instant`` falls between an opening and its closing, in ``zone_name``.

    ``instant`` must be aware (a naive one raises ValueError); an unknown zone raises
    :class:`InvalidTimezone`.
    """
    zone = load_zone(zone_name)
    instant = utc(instant)
    today = instant.astimezone(zone).date()
    # Yesterday's night may still be open; tomorrow's opening is never before today ends.
    openings = _openings(window, zone_name, today - timedelta(days=1), today)
    return any(opening.instant <= instant < closing for opening, closing in openings)


def push_into_window(instant: datetime, window: SendWindow, zone_name: str) -> PushedInstant:
    """The earliest moment at or after ``instant`` inside ``window``, in ``zone_name``, and why.

    An instant already inside comes back unchanged with note None. Any other moves to the next
    opening: the next allowed day's ``start``, resolved by :func:`resolve_wall_time` (02:30 on a
    spring-forward day opens at 03:30), with a note for the marketer such as "held until the
    send window opens at 09:00 on Monday 9 March". Looks at most :data:`LOOK_AHEAD_DAYS` ahead,
    so it ends for every window. ``instant`` must be aware (a naive one raises ValueError); an
    unknown zone raises :class:`InvalidTimezone`. The result is in UTC.
    """
    zone = load_zone(zone_name)
    instant = utc(instant)
    today = instant.astimezone(zone).date()
    last_day = today + timedelta(days=LOOK_AHEAD_DAYS)
    # Openings come in time order and so do their closings: the first that has not closed yet
    # either holds the instant or is the next to open.
    for opening, closing in _openings(window, zone_name, today - timedelta(days=1), last_day):
        if closing <= instant:
            continue
        if opening.instant <= instant:
            return PushedInstant(instant, None)
        return PushedInstant(opening.instant, _held_note(instant, opening, window, zone_name))
    raise RuntimeError(f"{window.in_words} does not open within {LOOK_AHEAD_DAYS} days of {instant.isoformat()}")


def _held_note(due: datetime, opening: ResolvedTime, window: SendWindow, zone_name: str) -> str:
    """Why a step waits, in a marketer's words: when it was due and when it will go."""
    due_local = due.astimezone(load_zone(zone_name))
    note = (
        f"Due {due_local:%H:%M} on {_day_in_words(due_local.date())}, outside the send window "
        f"({window.in_words}): held until the send window opens at {opening.local:%H:%M} on "
        f"{_day_in_words(opening.local.date())}"
    )
    if opening.shift is WallTimeShift.GAP:
        note += f" ({window.start:%H:%M} does not exist that day: the clocks spring forward)"
    # The window is kept in the contact's zone, which may not be the page's: say which it is.
    return note + f", {zone_name} time."


def _day_in_words(day: date) -> str:
    """``Monday 9 March``, whatever the host's locale."""
    return f"{Weekday(day.weekday()).in_words} {day.day} {_MONTHS[day.month - 1]}"
