"""The recurring-rules tables, a rule's statuses, and the keys of the rows minted from a rule.

A rule is "every Tuesday at 9:00" in its workspace's zone: an RFC 5545 RRULE value, the wall
time of its first occurrence, an optional end, skipped dates, what each occurrence sends
(action type, channel, target, payload) and what to do with occurrences missed during an
outage. The expander materializes its next 14 days into ``scheduled_actions``::

    active ──pause──▶ paused ──resume──▶ active
    active / paused ──end──▶ ended
    active ──run out──▶ ended

| status | meaning                                                                              |
|--------|--------------------------------------------------------------------------------------|
| active | the expander keeps the occurrences of the next ``recurring_window`` queued            |
| paused | stopped by a person (with a note), its queued future rows cancelled ``paused``; may resume |
| ended  | stopped for good, by a person or because the rule has no more occurrences (terminal)  |

Rows minted from rule ``R`` carry ``origin = 'recurring'``, ``recurring_schedule_id = R``,
``thing_id = "rule:R:<slot>"`` (the slot is the occurrence's wall date and time as the rule
generates it, ``2026-12-01T09:00``; an hourly rule's is its UTC instant, ``2026-11-01T06:00Z``)
and the rule's ``target_key``, so the dedupe index allows one active row per occurrence and
the publish guard refuses a second send of it. Run Now mints ``rule:R:manual:<instant>``.
"""

import enum
from datetime import datetime

from sqlalchemy import JSON, CheckConstraint, DateTime, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from models.core.base import Base
from models.core.events import StatusEvent
from models.core.types import UTCDateTime

MAX_ID = 2**31 - 1  # ids are 32-bit integers on PostgreSQL


class RuleStatus(str, enum.Enum):
    """Where a recurring rule is in its life."""

    ACTIVE = "active"  # the expander keeps its next occurrences materialized
    PAUSED = "paused"  # stopped by a person, who may resume it; its queued future rows were cancelled
    ENDED = "ended"  # stopped for good, by a person or because it ran out of occurrences (terminal)


class Misfire(str, enum.Enum):
    """What becomes of occurrences found later than ``recurring_grace`` (an outage, a stuck queue)."""

    SKIP = "skip"  # none of them goes: each is failed missed_window; the next on-time one goes
    FIRE_ONCE = "fire_once"  # the most recent of them goes, once; older ones are failed as superseded


def _check_in(column: str, enum_cls) -> str:
    return f"{column} IN ({', '.join(repr(m.value) for m in enum_cls)})"


class RecurringSchedule(Base):
    """A recurring rule (the playbook's ``recurring_schedules``)."""

    __tablename__ = "recurring_schedules"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    action_type: Mapped[str] = mapped_column(String(64))
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id", ondelete="RESTRICT"))
    target_key: Mapped[str] = mapped_column(String(255))
    # Copied into every occurrence, {{ occurrence.local_date }} and {{ occurrence.local_time }} filled in.
    payload: Mapped[dict] = mapped_column(JSON)
    rrule: Mapped[str] = mapped_column(String(500))
    # Wall times in the workspace's zone, naive on purpose: the zone may change, the wall time
    # stays. The instants beside them are derived (for display and indexes), and recomputed
    # when the zone changes.
    starts_local: Mapped[datetime] = mapped_column(DateTime())
    starts_at: Mapped[datetime] = mapped_column(UTCDateTime())
    ends_local: Mapped[datetime | None] = mapped_column(DateTime())
    ends_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # Skipped occurrences as typed: "2026-12-25" (every occurrence that day) or "2026-12-25T09:00".
    exdates_local: Mapped[list] = mapped_column(JSON, default=list)
    misfire: Mapped[str] = mapped_column(String(16), default=Misfire.SKIP.value)
    status: Mapped[str] = mapped_column(String(16), default=RuleStatus.ACTIVE.value)
    # Why it is paused or ended, as the person wrote it (or the expander's words).
    status_note: Mapped[str | None] = mapped_column(Text)
    # Bumped by every edit, so a pass that read an older version mints nothing for it.
    revision: Mapped[int] = mapped_column(Integer, default=1)
    # Every occurrence before this instant has been materialized (or was not owed: paused, created later).
    last_materialized_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    paused_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    __table_args__ = (
        CheckConstraint(_check_in("status", RuleStatus), name="status"),
        CheckConstraint(_check_in("misfire", Misfire), name="misfire"),
        CheckConstraint("revision >= 1", name="revision"),
        # The dashboard's and the API's list: a workspace's rules by id.
        Index("ix_recurring_schedules_workspace_id", "workspace_id", "id"),
        # The expander's work list: active rules only, however many ended ones there are.
        Index(
            "ix_recurring_schedules_active",
            "id",
            postgresql_where=text("status = 'active'"),
            sqlite_where=text("status = 'active'"),
        ),
    )


class RecurringScheduleEvent(StatusEvent, Base):
    """One change of one rule: a status move, an edit (the same status, the next revision) or a Run Now.

    From, to, when, who or which clock run, why (the pause note), and for a Run Now the row it minted.
    """

    __tablename__ = "recurring_schedule_events"

    schedule_id: Mapped[int] = mapped_column(ForeignKey("recurring_schedules.id", ondelete="RESTRICT"))
    revision: Mapped[int] = mapped_column(Integer)
    action_id: Mapped[int | None] = mapped_column(ForeignKey("scheduled_actions.id", ondelete="RESTRICT"))

    __table_args__ = (Index("ix_recurring_schedule_events_schedule_id", "schedule_id", "id"),)


def slot_thing_id(rule_id: int, slot: str) -> str:
    """The ``thing_id`` of the row minted for ``slot`` of rule ``rule_id``."""
    return f"rule:{rule_id}:{slot}"


def manual_thing_id(rule_id: int, instant: datetime) -> str:
    """The ``thing_id`` of a Run Now of rule ``rule_id`` at ``instant`` (aware UTC)."""
    return f"rule:{rule_id}:manual:{instant.strftime('%Y-%m-%dT%H:%M:%SZ')}"


def rule_id_of(thing_id: str | None) -> int | None:
    """The rule a row's ``thing_id`` names, or None when it names none."""
    if not thing_id or not thing_id.startswith("rule:"):
        return None
    number = thing_id[5:].split(":", 1)[0]
    return int(number) if number.isdecimal() and 0 < int(number) <= MAX_ID else None


def slot_of(thing_id: str | None) -> str | None:
    """The slot a row's ``thing_id`` names (``manual:<instant>`` for a Run Now), or None."""
    if rule_id_of(thing_id) is None:
        return None
    parts = thing_id.split(":", 2)
    return parts[2] if len(parts) == 3 else None
