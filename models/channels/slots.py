"""A channel's posting times: the weekly wall times, in the workspace's zone, a queued post may take.

Stored on the channel (``channels.posting_slots``) as ``[{"days": ["mon", ...], "time": "09:00"}, ...]``,
the shape ``PUT /api/v1/channels/NAME/slots`` takes and answers. Days are written in week order,
times as ``HH:MM``, entries by time; a day and time named twice is refused rather than merged, so
what a person typed is what is stored. Which slot a post takes is the posts wing's
(:mod:`models.posts.queue`); the walk over the weeks is :mod:`models.timing.slot_grid`'s.
"""

from datetime import time

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.channels.tables import CHANNEL_NAME, Channel
from models.core.errors import InvalidInput, NotFound
from models.core.time_input import CLOCK_TIME
from models.timing.slot_grid import WEEKDAYS

MAX_SLOT_ENTRIES = 50
MAX_SLOTS_A_WEEK = 7 * 48  # every half hour of every day
SLOT_FIELDS = {"days", "time"}


def check_slots(raw) -> list[dict]:
    """The posting times in their stored shape, or a 422 naming the entry and what is wrong with it."""
    if not isinstance(raw, list):
        raise InvalidInput('slots must be a list like [{"days": ["mon", "wed"], "time": "09:00"}]', field="slots",
                           code="wrong_type")
    if len(raw) > MAX_SLOT_ENTRIES:
        raise InvalidInput(f"a channel has at most {MAX_SLOT_ENTRIES} slot entries", field="slots", code="too_many")
    seen: dict[tuple[str, time], int] = {}
    entries = []
    for number, entry in enumerate(raw, start=1):
        where = f"slots[{number - 1}]"
        if not isinstance(entry, dict):
            raise InvalidInput(f'{where} must be an object like {{"days": ["mon"], "time": "09:00"}}', field="slots",
                               code="wrong_type")
        unknown = sorted(set(entry) - SLOT_FIELDS)
        if unknown:
            raise InvalidInput(f"{where} has an unknown field {str(unknown[0])[:40]!r}; expected days and time",
                               field="slots", code="unknown_field")
        at = _slot_time(entry.get("time"), where)
        days = _slot_days(entry.get("days"), where)
        for day in days:
            if (day, at) in seen:
                raise InvalidInput(f"{where} names {day} {at:%H:%M} again (entry {seen[(day, at)]} has it)",
                                   field="slots", code="duplicate")
            seen[(day, at)] = number
        entries.append({"days": days, "time": f"{at:%H:%M}"})
    if len(seen) > MAX_SLOTS_A_WEEK:
        raise InvalidInput(f"a channel has at most {MAX_SLOTS_A_WEEK} posting times a week", field="slots",
                           code="too_many")
    return sorted(entries, key=lambda e: (e["time"], [WEEKDAYS.index(d) for d in e["days"]]))


def _slot_time(raw, where: str) -> time:
    match = CLOCK_TIME.match(raw.strip()) if isinstance(raw, str) else None
    if not match or match.group(3) or int(match[1]) > 23 or int(match[2]) > 59:
        raise InvalidInput(f"{where}: time must be a wall time like 09:00, not {str(raw)[:20]!r}", field="slots",
                           code="bad_time")
    return time(int(match[1]), int(match[2]))


def _slot_days(raw, where: str) -> list[str]:
    if not isinstance(raw, list) or not raw:
        raise InvalidInput(f"{where}: days must be a non-empty list of {', '.join(WEEKDAYS)}", field="slots",
                           code="bad_day")
    days = []
    for day in raw:
        name = day.strip().lower() if isinstance(day, str) else None
        if name not in WEEKDAYS:
            raise InvalidInput(f"{where}: {str(day)[:20]!r} is not a day; one of {', '.join(WEEKDAYS)}",
                               field="slots", code="bad_day")
        if name in days:
            raise InvalidInput(f"{where} names {name} twice", field="slots", code="duplicate")
        days.append(name)
    return sorted(days, key=WEEKDAYS.index)


def slot_grid(channel: Channel) -> dict[int, frozenset[time]]:
    """The channel's posting times by weekday (Monday = 0); empty when it has none."""
    grid: dict[int, set[time]] = {}
    for entry in channel.posting_slots or []:
        at = time.fromisoformat(entry["time"])
        for day in entry["days"]:
            grid.setdefault(WEEKDAYS.index(day), set()).add(at)
    return {day: frozenset(times) for day, times in grid.items()}


def find_channel(session: Session, workspace_id: int, name, *, lock: bool = False) -> Channel:
    """The workspace's channel called ``name``, or a 404 (another workspace's channel is not found either)."""
    if not isinstance(name, str) or not CHANNEL_NAME.match(name):
        raise NotFound(f"no channel named {str(name)[:63]!r} in this workspace")
    query = select(Channel).where(Channel.workspace_id == workspace_id, Channel.name == name)
    channel = session.scalar(query.with_for_update() if lock else query)
    if channel is None:
        raise NotFound(f"no channel named {name!r} in this workspace")
    return channel


def save_slots(session: Session, workspace_id: int, name: str, raw) -> Channel:
    """Replace the channel's posting times with ``raw`` once checked; an empty list clears them.

    Posts already placed keep their wall times: a slot is only where a post goes when it is queued.
    """
    slots = check_slots(raw)
    channel = find_channel(session, workspace_id, name, lock=True)
    channel.posting_slots = slots or None
    session.flush()
    return channel
