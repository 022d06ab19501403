"""A channel's weekly posting times as wall times: pure, no database, no Flask.

A grid maps a weekday (Monday = 0) to the wall times of that day. Walking it yields wall
dates and times in order; turning one into an instant is
:func:`models.timing.wall_time.resolve_wall_time`'s, so a slot at 09:00 stays at 09:00 on the
wall across a clock change (its UTC instant moves by the change instead).
"""

from datetime import date, time, timedelta
from typing import Iterator, Mapping

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")

Grid = Mapping[int, frozenset[time]]


def common_grid(grids: list[Grid]) -> dict[int, frozenset[time]]:
    """The wall times that are a slot on every grid: where a post to all those targets may sit."""
    if not grids:
        return {}
    return {day: frozenset.intersection(*(frozenset(grid.get(day, ())) for grid in grids)) for day in range(7)}


def walk_grid(grid: Grid, start: date, end: date) -> Iterator[tuple[date, time]]:
    """Every slot of ``grid`` from ``start`` to ``end`` (both included), in wall-time order."""
    day = start
    while day <= end:
        for at in sorted(grid.get(day.weekday(), ())):
            yield day, at
        day += timedelta(days=1)
