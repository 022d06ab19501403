"""A workspace's actions laid out on local days, for the month and week calendars.

A day is a local day in the workspace's zone: its bounds are the UTC instants of two local
midnights (23 or 25 hours apart around a clock change), computed by
:func:`~models.wall_time.resolve_wall_time`. Counting happens in SQL, one ``CASE`` over
those bounds, so a busy month costs one grouped scan of its own range and never loads
its rows; only quiet days fetch their chips.
"""

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

from sqlalchemy import and_, case, func, or_, select
from sqlalchemy.orm import Session

from models.actions.tables import Origin, ScheduledAction
from models.core.hooks import CalendarEntry, CalendarSource
from models.posts.tables import post_id_of
from models.timing.wall_time import resolve_wall_time

# A day with more than this many rows shows counts per type instead of chips.
BUSY_DAY = 8


@dataclass
class CalendarDay:
    day: date
    start: datetime
    end: datetime
    counts: dict[str, int] = field(default_factory=dict)  # action_type -> rows that day
    actions: list[ScheduledAction] = field(default_factory=list)
    entries: list[CalendarEntry] = field(default_factory=list)  # what the wings put beside the actions
    # For a busy day in the week view: each busy hour's counts per type (its rows are not loaded);
    # the rows of its quiet hours are in ``actions``.
    hour_counts: dict[int, dict[str, int]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def busy(self) -> bool:
        return self.total > BUSY_DAY


def day_bounds(first: date, days: int, zone: str) -> list[datetime]:
    """``days + 1`` UTC instants: the local midnight starting each day, then the end of the last."""
    return [resolve_wall_time(first + timedelta(days=n), time(0, 0), zone).instant for n in range(days + 1)]


def lay_out(session: Session, workspace_id: int, first: date, days: int, zone: str,
            statuses: tuple[str, ...], sources: list[CalendarSource] = (), *, hourly: bool = False,
            where: tuple = ()) -> list[CalendarDay]:
    """The days from ``first``: per-type counts for all, the rows themselves for quiet days, and
    each day's entries from the wings' calendar ``sources`` (see :mod:`models.core.hooks`).

    With ``hourly`` (the week's hour grid), a busy day is counted again per local hour: the rows
    of its quiet hours are loaded, its busy hours keep counts, so no row is left off the grid.

    ``where`` narrows the rows (and so the counts) by further conditions: the calendar's filters."""
    bounds = day_bounds(first, days, zone)
    calendar = [CalendarDay(first + timedelta(days=n), bounds[n], bounds[n + 1]) for n in range(days)]
    by_day = {day.day: day for day in calendar}
    for source in sources:
        for entry in source(session, workspace_id, first, first + timedelta(days=days - 1), zone):
            if entry.day in by_day:
                by_day[entry.day].entries.append(entry)
    for day in calendar:
        day.entries.sort(key=lambda entry: (entry.at, entry.kind, entry.ref))
    in_range = (
        ScheduledAction.workspace_id == workspace_id,
        ScheduledAction.publish_at >= bounds[0],
        ScheduledAction.publish_at < bounds[-1],
        ScheduledAction.status.in_(statuses),
        *where,
    )
    day_index = case(*[(ScheduledAction.publish_at < bound, n) for n, bound in enumerate(bounds[1:])])
    grouped = session.execute(
        select(day_index.label("day"), ScheduledAction.action_type, func.count())
        .where(*in_range).group_by(day_index, ScheduledAction.action_type)
    )
    for index, action_type, count in grouped:
        if index is not None:
            calendar[index].counts[action_type] = count
    quiet = _spans([d for d in calendar if d.total and not d.busy])
    if hourly:
        quiet += _count_hours(session, [d for d in calendar if d.busy], in_range, zone)
    if quiet:
        rows = session.scalars(
            select(ScheduledAction).where(
                *in_range,
                or_(*[and_(ScheduledAction.publish_at >= start, ScheduledAction.publish_at < end)
                      for start, end in quiet]),
            ).order_by(ScheduledAction.publish_at, ScheduledAction.id)
        )
        by_start = iter(calendar)
        current = next(by_start)
        for row in rows:
            while row.publish_at >= current.end:
                current = next(by_start)
            current.actions.append(row)
    return calendar


def _count_hours(session: Session, busy: list[CalendarDay], in_range, zone: str) -> list[tuple[datetime, datetime]]:
    """Count each busy day's rows per local hour and type; the spans of the hours quiet enough to show."""
    quiet: list[tuple[datetime, datetime]] = []
    for day in busy:
        bounds = [resolve_wall_time(day.day, time(hour, 0), zone).instant for hour in range(24)] + [day.end]
        bounds[0] = day.start
        hour_index = case(*[(ScheduledAction.publish_at < bound, n) for n, bound in enumerate(bounds[1:])])
        counts: dict[int, dict[str, int]] = {}
        for index, action_type, count in session.execute(
            select(hour_index.label("hour"), ScheduledAction.action_type, func.count())
            .where(*in_range, ScheduledAction.publish_at >= day.start, ScheduledAction.publish_at < day.end)
            .group_by(hour_index, ScheduledAction.action_type)
        ):
            if index is not None:
                counts.setdefault(index, {})[action_type] = count
        for hour, per_type in counts.items():
            if sum(per_type.values()) > BUSY_DAY:
                day.hour_counts[hour] = per_type
            elif bounds[hour] < bounds[hour + 1]:
                quiet.append((bounds[hour], bounds[hour + 1]))
    return sorted(quiet)


def _spans(days: list[CalendarDay]) -> list[tuple[datetime, datetime]]:
    """Merge adjacent days into as few ``[start, end)`` ranges as possible."""
    spans: list[list[datetime]] = []
    for day in days:
        if spans and spans[-1][1] == day.start:
            spans[-1][1] = day.end
        else:
            spans.append([day.start, day.end])
    return [(start, end) for start, end in spans]


# What a chip says when it cannot be dragged, by the origin of its row. A post's rows move
# through their post; every other row follows something else, or a person's own decision.
NOT_DRAGGED_BY_ORIGIN = {
    Origin.RECURRING.value: "A recurring occurrence: edit the rule to move it.",
    Origin.DRIP.value: "A drip send follows its enrollment; it cannot be moved here.",
    Origin.SYSTEM.value: "One of Tickwork's own notifications; it cannot be moved.",
    Origin.PERSON.value: "Scheduled by a person or sent now, not by its post: reschedule it from the queue.",
}


@dataclass(frozen=True)
class HowToMove:
    """How a calendar chip moves: through its post (``post_id``), or not at all (``refusal`` says why)."""

    post_id: int | None
    refusal: str | None


def how_to_move(row: ScheduledAction) -> HowToMove:
    """Decided by the row's origin: rows the reconciler minted from a post move with their post."""
    post_id = post_id_of(row.thing_id) if row.origin == Origin.RECONCILER.value else None
    if post_id is not None:
        return HowToMove(post_id, None)
    return HowToMove(None, NOT_DRAGGED_BY_ORIGIN.get(row.origin, "This action cannot be moved from the calendar."))
