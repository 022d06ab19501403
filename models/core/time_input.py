"""Dates and times people type, read in one place: a form's date and time fields, the API's
``local_time``, a filter's day; each refusal names its field.

Reading the text is here; turning a wall time into an instant is
:func:`models.timing.wall_time.resolve_wall_time`, which :func:`resolve_typed` calls.
"""

import re
from datetime import date, time

from models.core.errors import InvalidInput
from models.timing.wall_time import InvalidTimezone, ResolvedTime, resolve_wall_time

LOCAL_TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$")
CLOCK_TIME = re.compile(r"^(\d{2}):(\d{2})(:\d{2}(\.\d{1,6})?)?$")
DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def parse_day(raw, field: str = "date") -> date:
    """A date typed as ``2026-06-30``."""
    text = raw.strip() if isinstance(raw, str) else ""
    try:
        if DAY.match(text):
            return date.fromisoformat(text)
    except ValueError:
        pass
    # A form's own date field is beside its label; any other field is named in the message.
    words = "Give a date like 2026-06-30." if field == "date" else f"{field} must be a date like 2026-06-30"
    raise InvalidInput(words, field=field, code="bad_date")


def parse_clock(raw, field: str = "time") -> time:
    """A time of day typed as ``09:30`` (seconds, if any, are dropped)."""
    match = CLOCK_TIME.match(raw.strip()) if isinstance(raw, str) else None
    if match and int(match[1]) < 24 and int(match[2]) < 60:
        return time(int(match[1]), int(match[2]))
    words = "Give a time like 09:30." if field == "time" else f"{field} must be a time like 09:30"
    raise InvalidInput(words, field=field, code="bad_time")


def parse_local_time(raw, field: str = "local_time") -> tuple[date, time]:
    """The API's wall date and time, ``YYYY-MM-DDTHH:MM`` in the workspace's zone."""
    match = LOCAL_TIME.match(raw.strip()) if isinstance(raw, str) else None
    if not match:
        raise InvalidInput(f"{field} must look like 2026-05-20T09:00 (the workspace's zone)", field=field,
                           code="bad_time")
    year, month, day, hour, minute = (int(part) for part in match.groups())
    try:
        return date(year, month, day), time(hour, minute)
    except ValueError:
        raise InvalidInput(f"{field} is not a real date and time", field=field, code="bad_time") from None


def resolve_typed(day: date, at: time, zone: str, field: str = "local_time") -> ResolvedTime:
    """A typed wall time resolved in the workspace's ``zone``; a broken zone or an impossible year is a 422."""
    try:
        return resolve_wall_time(day, at, zone)
    except InvalidTimezone as exc:
        raise InvalidInput(f"the workspace's time zone is not valid: {exc}", field="timezone",
                           code="bad_zone") from None
    except OverflowError:  # the first or last hours of years 1 and 9999, once moved to UTC
        raise InvalidInput(f"{field} is outside the years 1 to 9999 in UTC", field=field, code="bad_time") from None


SHIFT = re.compile(r"^([+-])?\s*(?:(\d{1,4})\s*d)?\s*(?:(\d{1,5})\s*h)?\s*(?:(\d{1,6})\s*m(?:in)?)?$", re.I)
MAX_SHIFT_DAYS = 3660


def parse_shift(raw, field: str = "shift") -> tuple[int, int]:
    """A shift typed as ``+2h``, ``-1d``, ``1d 3h 30m`` or ``90m``: ``(days, minutes)``, both signed.

    Days are calendar days (the local wall time is kept across a clock change); hours and
    minutes are elapsed time, as the brief's "Time across wings" settles it.
    """
    text = raw.strip() if isinstance(raw, str) else ""
    match = SHIFT.match(text) if text else None
    if not match or not any(match.group(n) for n in (2, 3, 4)):
        raise InvalidInput(f"{field} must look like +2h, -1d, 1d 3h or 90m", field=field, code="bad_shift")
    sign = -1 if match.group(1) == "-" else 1
    days = int(match.group(2) or 0)
    minutes = int(match.group(3) or 0) * 60 + int(match.group(4) or 0)
    if days + minutes // 1440 > MAX_SHIFT_DAYS:
        raise InvalidInput(f"{field} is more than 10 years", field=field, code="too_far")
    if days == 0 and minutes == 0:
        raise InvalidInput(f"a {field} of zero moves nothing", field=field, code="bad_shift")
    return sign * days, sign * minutes
