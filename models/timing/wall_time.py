"""Wall time in a workspace's zone to a UTC instant, and back.

Pure functions: no database, no Flask. Every place that turns a date and time a person
typed into an instant calls :func:`resolve_wall_time`.

Rules (the brief's invariant 1):
- a wall time that does not exist (spring forward) moves forward by the gap:
  02:30 in New York on a spring-forward day becomes 03:30 EDT;
- an ambiguous wall time (fall back) resolves to its first occurrence;
- a zone that is not a real IANA name is refused with :class:`InvalidTimezone`.
"""

from dataclasses import dataclass
from datetime import date, datetime, time, timezone
from enum import Enum
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones


class InvalidTimezone(ValueError):
    """The name is not an IANA time zone this system knows."""


class WallTimeShift(str, Enum):
    """What happened to a wall time on its way to UTC."""

    NONE = "none"  # the wall time exists exactly once
    GAP = "gap"  # it does not exist; moved forward by the gap
    AMBIGUOUS = "ambiguous"  # it exists twice; the first occurrence was taken


@dataclass(frozen=True)
class ResolvedTime:
    """A UTC instant, the wall time it shows in its zone, and whether it shifted."""

    instant: datetime
    local: datetime
    shift: WallTimeShift

    @property
    def note(self) -> str | None:
        """A sentence for the person who typed the time, or None when nothing shifted."""
        if self.shift is WallTimeShift.GAP:
            return (
                f"That time does not exist on {self.local:%Y-%m-%d} in {self.local.tzinfo} "
                f"(clocks spring forward); it was moved to {self.local:%H:%M %Z}."
            )
        if self.shift is WallTimeShift.AMBIGUOUS:
            return (
                f"That time happens twice on {self.local:%Y-%m-%d} in {self.local.tzinfo} "
                f"(clocks fall back); the first one, {self.local:%H:%M %Z}, was used."
            )
        return None


# In the system's list but no IANA zone: the host's own zone (a symlink that differs per box)
# and tzdata's placeholder for "zone not set" ("-00").
NOT_ZONES = frozenset({"localtime", "Factory", "posixrules"})


@lru_cache(maxsize=1)
def _known_zones() -> frozenset[str]:
    return frozenset(available_timezones()) - NOT_ZONES


def is_known_zone(name: object) -> bool:
    """True when ``name`` is an IANA zone this system knows (what :func:`load_zone` accepts)."""
    return isinstance(name, str) and name in _known_zones()


def load_zone(name: str) -> ZoneInfo:
    """Return the zone called ``name``, or raise :class:`InvalidTimezone` with a clear message."""
    if not isinstance(name, str) or not name or name not in _known_zones():
        raise InvalidTimezone(f"{name!r} is not an IANA time zone name (for example Europe/Paris)")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:  # pragma: no cover - listed but unreadable
        raise InvalidTimezone(f"{name!r} is not an IANA time zone name") from exc


def resolve_wall_time(day: date, at: time, zone_name: str) -> ResolvedTime:
    """Turn a wall date and time in ``zone_name`` into a UTC instant, by the brief's rules."""
    zone = load_zone(zone_name)
    naive = datetime.combine(day, at.replace(tzinfo=None, fold=0))
    first = naive.replace(tzinfo=zone, fold=0)
    second = naive.replace(tzinfo=zone, fold=1)
    first_utc = first.astimezone(timezone.utc)
    second_utc = second.astimezone(timezone.utc)
    if first_utc == second_utc:
        return ResolvedTime(first_utc, first, WallTimeShift.NONE)
    # Offsets differ between fold=0 and fold=1: the wall time is in a gap or an overlap.
    if first.utcoffset() > second.utcoffset():
        # Overlap (fall back): fold=0 carries the earlier, larger offset, the first occurrence.
        return ResolvedTime(first_utc, first, WallTimeShift.AMBIGUOUS)
    # Gap (spring forward): fold=0 applies the offset from before the gap, which lands the
    # instant exactly "gap" later on the wall clock, as the brief's rule asks.
    return ResolvedTime(first_utc, first_utc.astimezone(zone), WallTimeShift.GAP)


def to_local(instant: datetime, zone_name: str) -> datetime:
    """Show a UTC instant as wall time in ``zone_name``."""
    return instant.astimezone(load_zone(zone_name))
