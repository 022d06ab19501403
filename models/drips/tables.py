"""The drip tables: campaigns and their versions of steps, contacts, enrollments, sends, and their events.

A campaign is a sequence of steps (a delay, a subject and a body template, an optional
channel and send window) that contacts are enrolled in. Its steps live in a *version*: once
the campaign has been active its steps may change content, delay and window in place, but
inserting, removing or reordering them makes a new version, and every enrollment finishes on
the version it started on.

An enrollment is the playbook's row (section 11): ``current_step``, ``next_send_at``, status
``active`` / ``completed`` / ``exited``. Each step it reaches gets one *send*, the logical send,
keyed ``drip:<enrollment id>:<step index>`` (unique). A send's *attempt* is a
``scheduled_actions`` row (origin ``drip``, ``thing_id`` = the send's dedupe key,
``target_key`` = the address), so it goes through the same tick, claim, providers and
outcome table as every other action. The send points at its current attempt; an attempt
names its send by its ``thing_id``.

The lifecycles (their moves, guards and events) are written in ``campaigns.py``,
``contacts.py`` and ``enrollments.py``; this module only declares the data.
"""

import enum
from datetime import datetime

from sqlalchemy import JSON, CheckConstraint, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from models.core.base import Base
from models.core.events import StatusEvent
from models.core.types import UTCDateTime

MAX_ID = 2**31 - 1  # ids are 32-bit integers on PostgreSQL
DEDUPE_PREFIX = "drip:"


def _check_in(column: str, enum_cls) -> str:
    return f"{column} IN ({', '.join(repr(m.value) for m in enum_cls)})"


class CampaignStatus(str, enum.Enum):
    """Where a campaign is in its life."""

    DRAFT = "draft"  # being written; nobody can be enrolled yet
    ACTIVE = "active"  # enrollments advance and their sends are minted
    PAUSED = "paused"  # enrollments are held: nothing is minted, queued attempts were cancelled (paused)
    ARCHIVED = "archived"  # finished for good: every active enrollment exited (terminal)


class OnFailure(str, enum.Enum):
    """What an enrollment does when a step fails for good or misses its window."""

    EXIT = "exit"  # the enrollment exits with the failure as its reason
    SKIP = "skip"  # the step is skipped and the enrollment goes on to the next


class ContactStatus(str, enum.Enum):
    """Whether a contact may be sent to."""

    SUBSCRIBED = "subscribed"  # may receive drips
    UNSUBSCRIBED = "unsubscribed"  # asked to stop (link, STOP, API, dashboard); never sent to again
    BOUNCED = "bounced"  # a hard bounce was reported for their email; never sent to again


class EnrollmentStatus(str, enum.Enum):
    """Where an enrollment is in its campaign."""

    ACTIVE = "active"  # waiting for its current step's time, or for that step's send to end
    COMPLETED = "completed"  # every step was sent, skipped or settled (terminal)
    EXITED = "exited"  # left early: unsubscribed, bounced, removed, archived, failed (terminal)


class SendStatus(str, enum.Enum):
    """What became of one step's send; decided once, at its attempt's first terminal status."""

    PENDING = "pending"  # its attempt is queued or being sent; the enrollment waits on it
    HELD = "held"  # its attempt was cancelled by a pause; a resume mints a new one
    SENT = "sent"  # the attempt was published
    UNKNOWN = "unknown"  # outcome unknown or worker lost: counted as sent, never sent again
    FAILED = "failed"  # refused for good, its template did not render, or its attempts ran out
    MISSED = "missed"  # its attempt missed its window
    SKIPPED = "skipped"  # cancelled by a person, or the contact has no address for its channel
    EXITED = "exited"  # its attempt was cancelled because the enrollment ended


SETTLED_SEND_STATUSES = tuple(s.value for s in SendStatus if s not in (SendStatus.PENDING, SendStatus.HELD))


class Campaign(Base):
    __tablename__ = "drip_campaigns"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    name: Mapped[str] = mapped_column(String(100))
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id", ondelete="RESTRICT"))
    status: Mapped[str] = mapped_column(String(16), default=CampaignStatus.DRAFT.value)
    # The default send window ({"start", "end", "days"}, in each contact's zone); None: any time.
    send_window: Mapped[dict | None] = mapped_column(JSON)
    on_failure: Mapped[str] = mapped_column(String(8), default=OnFailure.EXIT.value)
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    activated_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    paused_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    archived_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    __table_args__ = (
        CheckConstraint(_check_in("status", CampaignStatus), name="status"),
        CheckConstraint(_check_in("on_failure", OnFailure), name="on_failure"),
        Index("ux_drip_campaigns_workspace_name", "workspace_id", "name", unique=True),
    )


class CampaignVersion(Base):
    """One arrangement of a campaign's steps; a structural change after activation makes the next."""

    __tablename__ = "drip_campaign_versions"

    id: Mapped[int] = mapped_column(primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("drip_campaigns.id", ondelete="RESTRICT"))
    number: Mapped[int] = mapped_column(Integer)  # 1, 2, ...: the highest is the one new enrollments start on
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (Index("ux_drip_campaign_versions_campaign_number", "campaign_id", "number", unique=True),)


class Step(Base):
    __tablename__ = "drip_steps"

    id: Mapped[int] = mapped_column(primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("drip_campaign_versions.id", ondelete="RESTRICT"))
    position: Mapped[int] = mapped_column(Integer)  # 0-based: the step index of its sends' dedupe keys
    delay: Mapped[str] = mapped_column(String(32))  # ISO 8601 duration, from the previous send's end (or enrolment)
    subject: Mapped[str | None] = mapped_column(Text)  # a template; email steps
    body: Mapped[str] = mapped_column(Text)  # a template
    channel_id: Mapped[int | None] = mapped_column(ForeignKey("channels.id", ondelete="RESTRICT"))  # else the campaign's
    send_window: Mapped[dict | None] = mapped_column(JSON)  # else the campaign's
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (Index("ux_drip_steps_version_position", "version_id", "position", unique=True),)


class Contact(Base):
    __tablename__ = "drip_contacts"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    email: Mapped[str | None] = mapped_column(String(254))  # lower-cased
    phone: Mapped[str | None] = mapped_column(String(16))  # E.164
    name: Mapped[str] = mapped_column(String(200), default="")
    timezone: Mapped[str | None] = mapped_column(String(64))  # None: the workspace's zone, whatever it becomes
    attributes: Mapped[dict] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(16), default=ContactStatus.SUBSCRIBED.value)
    unsubscribed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    bounced_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (
        CheckConstraint(_check_in("status", ContactStatus), name="status"),
        CheckConstraint("email IS NOT NULL OR phone IS NOT NULL", name="has_address"),
        # NULLs are distinct in a unique index on both databases: a contact may lack either.
        Index("ux_drip_contacts_workspace_email", "workspace_id", "email", unique=True),
        Index("ux_drip_contacts_workspace_phone", "workspace_id", "phone", unique=True),
    )


class Enrollment(Base):
    __tablename__ = "drip_enrollments"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    campaign_id: Mapped[int] = mapped_column(ForeignKey("drip_campaigns.id", ondelete="RESTRICT"))
    version_id: Mapped[int] = mapped_column(ForeignKey("drip_campaign_versions.id", ondelete="RESTRICT"))
    contact_id: Mapped[int] = mapped_column(ForeignKey("drip_contacts.id", ondelete="RESTRICT"))
    status: Mapped[str] = mapped_column(String(16), default=EnrollmentStatus.ACTIVE.value)
    current_step: Mapped[int] = mapped_column(Integer, default=0)
    # When the current step is due: its delay from anchor_at, pushed into its send window.
    next_send_at: Mapped[datetime] = mapped_column(UTCDateTime())
    anchor_at: Mapped[datetime] = mapped_column(UTCDateTime())  # the previous send's end, or enrolled_at
    schedule_note: Mapped[str | None] = mapped_column(Text)  # why next_send_at is not the bare delay
    held_by_window: Mapped[bool] = mapped_column(default=False)  # next_send_at was pushed into a send window
    # The send of the current step while the enrollment waits on it (no foreign key: sends
    # reference enrollments; the moves in enrollments.py keep the two in step).
    waiting_send_id: Mapped[int | None] = mapped_column(Integer)
    enrolled_at: Mapped[datetime] = mapped_column(UTCDateTime())
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    exited_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    exit_reason: Mapped[str | None] = mapped_column(String(64))
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (
        CheckConstraint(_check_in("status", EnrollmentStatus), name="status"),
        CheckConstraint("current_step >= 0", name="current_step"),
        # A contact is enrolled in a campaign at most once at a time.
        Index("ux_drip_enrollments_active_contact", "campaign_id", "contact_id", unique=True,
              postgresql_where=text("status = 'active'"), sqlite_where=text("status = 'active'")),
        # drip-advance's work list: active enrollments whose current step is not minted yet.
        Index("ix_drip_enrollments_due", "next_send_at", "id",
              postgresql_where=text("status = 'active' AND waiting_send_id IS NULL"),
              sqlite_where=text("status = 'active' AND waiting_send_id IS NULL")),
        Index("ix_drip_enrollments_campaign_status", "campaign_id", "status", "current_step"),
        Index("ix_drip_enrollments_contact", "contact_id", "status"),
        Index("ix_drip_enrollments_workspace_status", "workspace_id", "status"),
    )


class Send(Base):
    """One step of one enrollment, sent at most once: its dedupe key is unique."""

    __tablename__ = "drip_sends"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    enrollment_id: Mapped[int] = mapped_column(ForeignKey("drip_enrollments.id", ondelete="RESTRICT"))
    step_index: Mapped[int] = mapped_column(Integer)
    step_id: Mapped[int] = mapped_column(ForeignKey("drip_steps.id", ondelete="RESTRICT"))
    dedupe_key: Mapped[str] = mapped_column(String(64))  # drip:<enrollment id>:<step index>
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id", ondelete="RESTRICT"))
    address: Mapped[str | None] = mapped_column(String(254))  # where it goes; None when the contact has none
    status: Mapped[str] = mapped_column(String(16), default=SendStatus.PENDING.value)
    attempt_id: Mapped[int | None] = mapped_column(ForeignKey("scheduled_actions.id", ondelete="RESTRICT"))
    reason: Mapped[str | None] = mapped_column(Text)  # why it settled as it did, in words
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())  # the attempt's end: the next delay's start
    settled_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (
        CheckConstraint(_check_in("status", SendStatus), name="status"),
        Index("ux_drip_sends_dedupe_key", "dedupe_key", unique=True),
        Index("ix_drip_sends_enrollment", "enrollment_id", "step_index"),
        Index("ix_drip_sends_attempt", "attempt_id"),
        # drip-advance settles pending sends and re-mints held ones: short lists, whatever the history.
        Index("ix_drip_sends_pending", "id", postgresql_where=text("status = 'pending'"),
              sqlite_where=text("status = 'pending'")),
        Index("ix_drip_sends_held", "id", postgresql_where=text("status = 'held'"),
              sqlite_where=text("status = 'held'")),
    )


class CampaignEvent(StatusEvent, Base):
    """One status change of one campaign."""

    __tablename__ = "drip_campaign_events"

    campaign_id: Mapped[int] = mapped_column(ForeignKey("drip_campaigns.id", ondelete="RESTRICT"))

    __table_args__ = (Index("ix_drip_campaign_events_campaign", "campaign_id", "id"),)


class ContactEvent(StatusEvent, Base):
    """One status change of one contact (unsubscribed, bounced)."""

    __tablename__ = "drip_contact_events"

    contact_id: Mapped[int] = mapped_column(ForeignKey("drip_contacts.id", ondelete="RESTRICT"))

    __table_args__ = (Index("ix_drip_contact_events_contact", "contact_id", "id"),)


class EnrollmentEvent(StatusEvent, Base):
    """One move of one enrollment or of one of its sends: the enrollment's timeline. The statuses are
    the enrollment's, or the send's for a send move."""

    __tablename__ = "drip_enrollment_events"

    enrollment_id: Mapped[int] = mapped_column(ForeignKey("drip_enrollments.id", ondelete="RESTRICT"))
    move: Mapped[str] = mapped_column(String(16))  # enroll, mint, settle, hold, remint, advance, complete, exit
    step: Mapped[int | None] = mapped_column(Integer)  # the step the move concerns
    send_id: Mapped[int | None] = mapped_column(ForeignKey("drip_sends.id", ondelete="RESTRICT"))

    __table_args__ = (Index("ix_drip_enrollment_events_enrollment", "enrollment_id", "id"),)


def dedupe_key_of(enrollment_id: int, step_index: int) -> str:
    """The dedupe key of an enrollment's send for a step, which is also its attempts' ``thing_id``."""
    return f"{DEDUPE_PREFIX}{enrollment_id}:{step_index}"


def enrollment_of(thing_id: str | None) -> tuple[int, int] | None:
    """(enrollment id, step index) from a drip attempt's ``thing_id``, or None when it names none."""
    if not thing_id or not thing_id.startswith(DEDUPE_PREFIX):
        return None
    parts = thing_id[len(DEDUPE_PREFIX):].split(":")
    if len(parts) != 2 or not all(part.isdecimal() for part in parts):
        return None
    return int(parts[0]), int(parts[1])
