"""The seven cadences of work schedules and the grid their slots sit on: pure functions.

No database, no Flask. A schedule's slots are never derived from its last run: they are
read off a *grid* fixed when the schedule is enabled or its cadence changes, so a late run,
a retry or an outage never moves them (the second seed's ``scheduledFor`` drift correction).

| cadence          | steps by                 | slot *k* (k = 0, 1, 2, ...)                                       |
|------------------|--------------------------|-------------------------------------------------------------------|
| `hourly`         | 1 hour of elapsed time   | ``anchor_at + k × 1 h``                                           |
| `every_3_hours`  | 3 hours of elapsed time  | ``anchor_at + k × 3 h``                                           |
| `every_8_hours`  | 8 hours of elapsed time  | ``anchor_at + k × 8 h``                                           |
| `every_12_hours` | 12 hours of elapsed time | ``anchor_at + k × 12 h``                                          |
| `daily`          | one local date           | the anchor's wall time on every local date from the anchor's      |
| `weekly`         | seven local dates        | the anchor's wall time on every later date of its weekday         |
| `monthly`        | one local month          | the anchor's day of month, clamped to the month's last day, at    |
|                  |                          | the anchor's wall time (31 Jan → 28/29 Feb → 31 Mar → 30 Apr)     |

The grid (:class:`Grid`), stored by the wing as two columns:
- ``anchor_at``, an aware UTC instant, for the four elapsed cadences. Zone changes and DST do
  not touch their slots (the brief: sub-daily steps are elapsed time).
- ``anchor_local``, a naive wall date and time, for ``daily``, ``weekly`` and ``monthly``, read
  in the workspace's zone each time a slot is computed, so the wall time survives DST and a
  change of the workspace's zone. Every such wall time goes through :func:`resolve_wall_time`:
  in a spring-forward gap it moves forward by the gap, in a fall-back overlap it is the first
  occurrence, and two dates that resolve to one instant give one slot.

Only enabling (re-enabling included) and a change of cadence make a new grid; saving a
schedule otherwise keeps it. A change of the workspace's zone keeps it too: the next slot of a
calendar cadence is then ``next_slot(grid, now, new_zone)``, the same wall time in the new zone.

Choosing the grid on enable (:func:`grid_for`): the first slot is the next whole hour on the
*workspace's wall clock*, strictly after now. "The clock hour" is local, not UTC: in
Pacific/Chatham (+12:45) slots land at hh:15 UTC, which the workspace sees as hh:00. A wall
hour that does not exist (a gap) is skipped for the next one that does, and an ambiguous one
counts by its first occurrence. That first slot is the anchor: ``anchor_at`` for elapsed
cadences, its wall date and time as ``anchor_local`` for calendar ones (a daily schedule
enabled at 14:20 runs at 15:00 today and 15:00 every day; a monthly one enabled on 31 January
runs on the last day of shorter months). Elapsed cadences then keep elapsed time: where DST
moves the clock by a whole hour (almost everywhere, Chatham included) hourly slots stay on the
clock hour; on Lord Howe, whose clocks move by 30 minutes, they land on the half hour from
one shift to the next, unless the schedule is re-enabled.

After a run (issue 12, item 4): success → ``next_slot(grid, now)``; failure number *n* →
:func:`retry_at`, the earlier of the next slot and ``now + 15 min × 2^(n−1)``. Nothing after
a run, retries included, changes the grid: the retry instant is only a ``nextRunAt``, never
an anchor. "A retry keeps the slot it retries" means the run it starts belongs to
``slot_at_or_before(grid, retry instant)``, the slot that failed (or, when the backoff
reached the next slot, that next slot itself), and the slot after it is read off the
unchanged grid, not counted from the retry.

Every instant taken or returned is aware; naive ones are refused with ``ValueError``. A zone
that is not an IANA name raises :class:`InvalidTimezone`, a cadence not among the seven
:class:`CadenceError`; both are ``ValueError``s a shell maps to a 4xx.
"""

import calendar
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from enum import Enum

from models.timing.clock import utc
from models.timing.wall_time import WallTimeShift, load_zone, resolve_wall_time, to_local

# The first retry waits this long, each later one twice the one before (issue 12, item 4).
RETRY_BASE = timedelta(minutes=15)
# 15 min × 2^16 is 682 days, past any cadence's next slot, so a larger exponent cannot change
# the answer; capping it keeps a runaway failure count from overflowing timedelta.
_MAX_RETRY_EXPONENT = 16
# Samoa skipped a whole calendar day in 2011: no real gap is longer than two days of wall hours.
_MAX_WALL_HOURS_SKIPPED = 48


class CadenceError(ValueError):
    """A cadence that is not one of the seven."""


class Cadence(str, Enum):
    """How often a work schedule runs; the values are the second seed's spellings."""

    HOURLY = "hourly"  # every hour of elapsed time from anchor_at
    EVERY_3_HOURS = "every_3_hours"  # every 3 hours of elapsed time from anchor_at
    EVERY_8_HOURS = "every_8_hours"  # every 8 hours of elapsed time from anchor_at
    EVERY_12_HOURS = "every_12_hours"  # every 12 hours of elapsed time from anchor_at
    DAILY = "daily"  # anchor_local's wall time on every local date
    WEEKLY = "weekly"  # anchor_local's wall time on anchor_local's weekday
    MONTHLY = "monthly"  # anchor_local's day of month (clamped) and wall time, every month

    @property
    def elapsed_step(self) -> timedelta | None:
        """The elapsed time between slots, or None for the calendar cadences."""
        return _ELAPSED_STEPS.get(self)

    @property
    def is_elapsed(self) -> bool:
        """True for the four cadences that step in elapsed time on ``anchor_at``."""
        return self in _ELAPSED_STEPS


_ELAPSED_STEPS = {
    Cadence.HOURLY: timedelta(hours=1),
    Cadence.EVERY_3_HOURS: timedelta(hours=3),
    Cadence.EVERY_8_HOURS: timedelta(hours=8),
    Cadence.EVERY_12_HOURS: timedelta(hours=12),
}


def parse_cadence(value: object) -> Cadence:
    """Return the cadence spelled ``value``, exactly as the seed spells it.

    Raises :class:`CadenceError`, naming the seven, for anything else (other spellings,
    other case, non-strings).
    """
    if isinstance(value, Cadence):
        return value
    if isinstance(value, str):
        try:
            return Cadence(value)
        except ValueError:
            pass
    known = ", ".join(cadence.value for cadence in Cadence)
    raise CadenceError(f"{value!r} is not a cadence; use one of {known}")


@dataclass(frozen=True)
class Grid:
    """Where a schedule's slots sit: its cadence and the one anchor that cadence reads.

    ``anchor_at`` (aware, kept in UTC) for the elapsed cadences, ``anchor_local`` (naive
    wall date and time in the workspace's zone) for daily, weekly and monthly; the other is
    None. A grid holding the wrong one, or a naive/aware mix-up, raises ``ValueError``.
    """

    cadence: Cadence
    anchor_at: datetime | None = None
    anchor_local: datetime | None = None

    def __post_init__(self):
        """Check that the grid holds exactly the anchor its cadence reads."""
        cadence = parse_cadence(self.cadence)
        object.__setattr__(self, "cadence", cadence)
        if cadence.is_elapsed:
            if self.anchor_at is None or self.anchor_local is not None:
                raise ValueError(f"a {cadence.value} grid needs anchor_at and no anchor_local")
            object.__setattr__(self, "anchor_at", utc(self.anchor_at))
            return
        if self.anchor_local is None or self.anchor_at is not None:
            raise ValueError(f"a {cadence.value} grid needs anchor_local and no anchor_at")
        if self.anchor_local.tzinfo is not None:
            raise ValueError("anchor_local is a wall time and must be naive; the zone is the workspace's")


def grid_for(cadence: Cadence | str, now: datetime, zone: str) -> Grid:
    """The grid of a schedule enabled (or given a new cadence) at ``now`` in ``zone``.

    Its first slot, and so ``next_slot(grid, now, zone)``, is the next whole hour on the
    zone's wall clock strictly after ``now`` (a wall hour lost to a gap is skipped). See the
    module docstring for what that means in zones with half- and quarter-hour offsets.
    """
    cadence = parse_cadence(cadence)
    wall_hour, instant = _next_wall_clock_hour(utc(now), zone)
    if cadence.is_elapsed:
        return Grid(cadence, anchor_at=instant)
    return Grid(cadence, anchor_local=wall_hour)


WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def grid_in_words(grid: Grid) -> str:
    """The grid as a person says it: "Every Monday at 09:00", "Every day at 07:30", "Every 3 hours".

    Calendar cadences name their wall time (in the workspace's zone, which the page states);
    a monthly day past the 28th says that shorter months run on their last day.
    """
    if grid.cadence.is_elapsed:
        hours = grid.cadence.elapsed_step // timedelta(hours=1)
        return "Every hour" if hours == 1 else f"Every {hours} hours"
    anchor = grid.anchor_local
    at = anchor.strftime("%H:%M")
    if grid.cadence is Cadence.DAILY:
        return f"Every day at {at}"
    if grid.cadence is Cadence.WEEKLY:
        return f"Every {WEEKDAYS[anchor.weekday()].title()} at {at}"
    day = anchor.day
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    shorter = " (the last day in shorter months)" if day > 28 else ""
    return f"Every month on the {day}{suffix} at {at}{shorter}"


def round_up(instant: datetime, interval: timedelta) -> datetime:
    """``instant`` rounded up to the dispatcher's grid (whole multiples of ``interval`` from the UTC hour)."""
    instant = utc(instant)
    hour = instant.replace(minute=0, second=0, microsecond=0)
    return hour + interval * -(-(instant - hour) // interval)


def first_grid(cadence: Cadence | str, *, last_generation: datetime | None, now: datetime, zone: str,
               dispatch_interval: timedelta) -> tuple[Grid, datetime]:
    """The grid of a schedule newly enabled at ``now``, and its first slot (the second seed's first scenario).

    The grid is anchored on the work's last successful generation (``last_generation``,
    rounded up to the dispatcher's grid), or on ``now`` when the work was never generated;
    the first slot is one cadence after that anchor (``monthly`` clamps), so "a week passes
    since my last generation" is when a weekly schedule runs. A first slot already past is
    due at the dispatcher's next pass; the grid keeps its anchor.
    """
    cadence = parse_cadence(cadence)
    now = utc(now)
    anchor = round_up(last_generation if last_generation is not None else now, dispatch_interval)
    if cadence.is_elapsed:
        grid = Grid(cadence, anchor_at=anchor)
    else:
        grid = Grid(cadence, anchor_local=to_local(anchor, zone).replace(tzinfo=None, fold=0))
    first = next_slot(grid, anchor, zone)
    if first <= now:
        first = round_up(now, dispatch_interval)
    return grid, first


def named_grid(cadence: Cadence | str, *, now: datetime, zone: str, default_wall: datetime,
               weekday: int | None = None, day_of_month: int | None = None, wall_time=None) -> Grid:
    """A daily, weekly or monthly grid on a named weekday (0 = Monday), day of month or wall time.

    What is not named comes from ``default_wall`` (the anchor the rule would have chosen). The anchor is the last such date on or before today in ``zone``, so the first slot,
    ``next_slot(grid, now, zone)``, is the first named one after now; ``day_of_month`` 29 to 31
    clamps in shorter months and returns to itself after them (31 Jan → 28 Feb → 31 Mar).
    """
    cadence = parse_cadence(cadence)
    if cadence.is_elapsed:
        raise ValueError(f"a {cadence.value} schedule steps in elapsed time; it names no day or wall time")
    today = to_local(utc(now), zone).date()
    clock_time = wall_time if wall_time is not None else default_wall.time()
    if cadence is Cadence.WEEKLY:
        wanted = default_wall.weekday() if weekday is None else weekday
        day = today - timedelta(days=(today.weekday() - wanted) % 7)
    elif cadence is Cadence.MONTHLY:
        wanted = default_wall.day if day_of_month is None else day_of_month
        day = _last_date_with_day(today, wanted)
    else:
        day = today
    return Grid(cadence, anchor_local=datetime.combine(day, clock_time))


def _last_date_with_day(today: date, day_of_month: int) -> date:
    """The last date on or before ``today`` whose day of month is exactly ``day_of_month``."""
    month_index = today.year * 12 + today.month - 1
    for back in range(0, 13):
        year, month_zero = divmod(month_index - back, 12)
        if day_of_month <= calendar.monthrange(year, month_zero + 1)[1]:
            candidate = date(year, month_zero + 1, day_of_month)
            if candidate <= today:
                return candidate
    raise ValueError(f"day of month {day_of_month} is not from 1 to 31")


def next_slot(grid: Grid, after: datetime, zone: str) -> datetime:
    """The grid's first slot strictly after ``after``, in UTC.

    Computed in a bounded number of steps whatever the anchor's age. ``zone`` is the
    workspace's current zone: calendar cadences read ``anchor_local`` in it.
    """
    after = utc(after)
    load_zone(zone)  # a garbage zone is refused the same way for every cadence
    step = grid.cadence.elapsed_step
    if step is not None:
        if after < grid.anchor_at:
            return grid.anchor_at
        return grid.anchor_at + step * ((after - grid.anchor_at) // step + 1)
    for instant in _calendar_slots_near(grid, after, zone):
        if instant > after:
            return instant
    # Unreachable: the candidate dates always reach two periods past ``after``.
    raise ValueError(f"no {grid.cadence.value} slot found after {after.isoformat()}")


def slot_at_or_before(grid: Grid, at: datetime, zone: str) -> datetime | None:
    """The grid's last slot at or before ``at`` (UTC), or None when ``at`` precedes the first.

    The slot a run started at ``at`` belongs to: a retry claimed at its retry instant
    retries this slot, and a late run still counts as its slot's.
    """
    at = utc(at)
    load_zone(zone)
    step = grid.cadence.elapsed_step
    if step is not None:
        if at < grid.anchor_at:
            return None
        return grid.anchor_at + step * ((at - grid.anchor_at) // step)
    for instant in reversed(_calendar_slots_near(grid, at, zone)):
        if instant <= at:
            return instant
    return None


def retry_at(grid: Grid, now: datetime, failures: int, zone: str) -> datetime:
    """When to try again after consecutive failure number ``failures`` (1 for the first), at ``now``.

    The earlier of the grid's next slot after ``now`` and ``now + 15 min × 2^(failures − 1)``
    (15, 30, 60, 120 minutes, ...). The grid is not touched: the instant is a ``nextRunAt``,
    never a new anchor, so the retry belongs to the slot it retries and later slots stay put.
    """
    if isinstance(failures, bool) or not isinstance(failures, int) or failures < 1:
        raise ValueError(f"failures counts consecutive failures from 1, not {failures!r}")
    now = utc(now)
    backoff = RETRY_BASE * 2 ** min(failures - 1, _MAX_RETRY_EXPONENT)
    return min(next_slot(grid, now, zone), now + backoff)


def slots_between(grid: Grid, start: datetime, end: datetime, zone: str, *, limit: int) -> list[datetime]:
    """The grid's slots in ``[start, end)``, in order, at most ``limit`` of them (for previews).

    Each slot costs one bounded :func:`next_slot`, so the work is proportional to ``limit``,
    never to the anchor's age or the window's width.
    """
    start, end = utc(start), utc(end)
    if limit < 0:
        raise ValueError(f"limit must not be negative, not {limit}")
    slots: list[datetime] = []
    # One microsecond is datetime's resolution: the first slot strictly after it is the
    # first slot at or after start.
    slot = next_slot(grid, start - timedelta(microseconds=1), zone)
    while slot < end and len(slots) < limit:
        slots.append(slot)
        slot = next_slot(grid, slot, zone)
    return slots


def _next_wall_clock_hour(now: datetime, zone: str) -> tuple[datetime, datetime]:
    """The next whole hour on ``zone``'s wall clock after ``now``: (naive wall time, UTC instant)."""
    wall_hour = to_local(now, zone).replace(minute=0, second=0, microsecond=0, tzinfo=None, fold=0)
    for _ in range(_MAX_WALL_HOURS_SKIPPED):
        wall_hour += timedelta(hours=1)
        resolved = resolve_wall_time(wall_hour.date(), wall_hour.time(), zone)
        # A gap hour would resolve off the hour (Lord Howe's 02:00 becomes 02:30); the first
        # occurrence of an ambiguous hour can lie before now when clocks fall back 2 hours.
        if resolved.shift is not WallTimeShift.GAP and resolved.instant > now:
            return wall_hour, resolved.instant
    raise ValueError(f"{zone} shows no whole hour within two days after {now.isoformat()}")


def _calendar_slots_near(grid: Grid, instant: datetime, zone: str) -> list[datetime]:
    """The calendar slots of a few periods around ``instant``'s local date, ascending."""
    anchor = grid.anchor_local
    wall_time = anchor.time()
    slots: list[datetime] = []
    # Before the grid starts, look around its first date: every earlier date is off the grid.
    local_day = max(to_local(instant, zone).date(), anchor.date())
    for day in _candidate_days(grid, local_day):
        if day < anchor.date():
            continue  # the grid starts at its anchor
        # Two dates may resolve to one instant (a skipped day); callers compare strictly,
        # so such a pair is one slot.
        slots.append(resolve_wall_time(day, wall_time, zone).instant)
    return slots


def _candidate_days(grid: Grid, local_day: date) -> list[date]:
    """The grid's dates from two periods before ``local_day`` to two after, ascending.

    A slot's instant lies within a gap's length of its wall date, so the first slot after
    (or the last at or before) any instant is among these.
    """
    anchor_day = grid.anchor_local.date()
    if grid.cadence is Cadence.DAILY:
        return [local_day + timedelta(days=offset) for offset in range(-2, 3)]
    if grid.cadence is Cadence.WEEKLY:
        same_weekday = local_day - timedelta(days=(local_day - anchor_day).days % 7)
        return [same_weekday + timedelta(weeks=offset) for offset in range(-2, 3)]
    month_index = local_day.year * 12 + local_day.month - 1
    return [_day_in_month(month_index + offset, anchor_day.day) for offset in range(-2, 3)]


def _day_in_month(month_index: int, day_of_month: int) -> date:
    """The ``day_of_month`` of month ``month_index`` (year × 12 + month − 1), clamped to its last day."""
    year, month_zero = divmod(month_index, 12)
    last_day = calendar.monthrange(year, month_zero + 1)[1]
    return date(year, month_zero + 1, min(day_of_month, last_day))
