"""When a step goes out: its delay from the anchor, in the contact's zone, pushed into its send window.

Pure functions over the pure time logic of :mod:`models.timing` (``apply_delay``,
``push_into_window``): no database, no Flask.

- A step's delay counts from the previous send's final time, or from ``enrolled_at`` for the
  first step. Days are calendar days in the contact's zone (the same local time across DST);
  hours and minutes are elapsed time.
- The result is pushed into the step's send window (or the campaign's) in the contact's zone:
  a step due at 03:10 for a 09:00–20:00 window waits until 09:00 local.
- The contact's zone is theirs, or the workspace's when they have none. A zone stored broken
  (written around the app, or dropped from the zone database) falls back to the workspace's,
  then to UTC, and the note says so: a clock job never crashes on a zone.
"""

from dataclasses import dataclass
from datetime import datetime

from models.timing.delay import apply_delay, parse_delay
from models.timing.send_window import SendWindow, parse_send_window, push_into_window
from models.timing.wall_time import InvalidTimezone, load_zone

FALLBACK_ZONE = "UTC"


@dataclass(frozen=True)
class Planned:
    """A step's time: the instant, whether a send window moved it, and a note for the people who ask why."""

    instant: datetime
    held_by_window: bool = False
    note: str | None = None


def _valid(zone: str | None) -> bool:
    try:
        load_zone(zone)
        return True
    except InvalidTimezone:
        return False


def contact_zone(own: str | None, workspace_zone: str | None) -> tuple[str, str | None]:
    """The zone a contact's steps are timed in, and a note when it is not the one they should have."""
    if own is not None:
        if _valid(own):
            return own, None
        if _valid(workspace_zone):
            return workspace_zone, (f"The contact's time zone {own!r} is not valid; the workspace's zone "
                                    f"{workspace_zone} was used.")
        return FALLBACK_ZONE, f"Neither the contact's zone {own!r} nor the workspace's is valid; UTC was used."
    if _valid(workspace_zone):
        return workspace_zone, None
    return FALLBACK_ZONE, f"The workspace's time zone {workspace_zone!r} is not valid; UTC was used."


def window_of(step_window: dict | None, campaign_window: dict | None) -> SendWindow | None:
    """The window a step obeys: its own, else its campaign's, else none (any time)."""
    chosen = step_window if step_window is not None else campaign_window
    return parse_send_window(chosen) if chosen is not None else None


def into_window(instant: datetime, window: SendWindow | None, zone: str) -> Planned:
    """``instant`` if it is inside ``window`` (or there is none), else the window's next opening."""
    if window is None:
        return Planned(instant)
    pushed = push_into_window(instant, window, zone)
    return Planned(pushed.instant, pushed.note is not None, pushed.note)


def plan_step(anchor: datetime, delay: str, window: SendWindow | None, zone: str, *,
              zone_note: str | None = None, not_before: datetime | None = None) -> Planned:
    """When a step is due: ``delay`` after ``anchor`` in ``zone``, no earlier than ``not_before``, inside ``window``."""
    due = apply_delay(anchor, parse_delay(delay), zone)
    if not_before is not None and due < not_before:
        due = not_before
    planned = into_window(due, window, zone)
    if zone_note:
        note = f"{zone_note} {planned.note}" if planned.note else zone_note
        return Planned(planned.instant, planned.held_by_window, note)
    return planned
