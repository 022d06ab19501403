"""The ``scheduled_actions`` table and its event log.

The lifecycle itself (who may move a row from which status to which) lives in
:mod:`models.lifecycle`; this module only declares the shape of the data.
"""

import enum
from datetime import datetime

from sqlalchemy import JSON, CheckConstraint, ForeignKey, Index, Integer, String, Text, and_, literal_column, or_, text
from sqlalchemy.orm import Mapped, mapped_column

from models.core.base import Base
from models.core.events import StatusEvent
from models.core.types import UTCDateTime


class Status(str, enum.Enum):
    """Where a scheduled action is in its life."""

    QUEUED = "queued"  # waiting for its time; the only status a claim starts from
    SUBMITTED = "submitted"  # claimed by one worker, which is talking to the provider
    PUBLISHED = "published"  # the provider accepted it (terminal)
    FAILED = "failed"  # did not go out, or its outcome is unknown (terminal; an admin may retry)
    CANCELLED = "cancelled"  # withdrawn before it was claimed (terminal)


ACTIVE_STATUSES = (Status.QUEUED.value, Status.SUBMITTED.value)


class CancelKind(str, enum.Enum):
    """Why a row was cancelled (the brief's "Decisions for the wings")."""

    PERSON = "person"  # a human, through the dashboard or the API, or by archiving a post; it stands
    RESCHEDULED = "rescheduled"  # replaced by a newer row that points back to it
    ORPHANED = "orphaned"  # withdrawn: its post is no longer approved, or the target was removed
    PAUSED = "paused"  # stopped by a pause that may be lifted (a recurring rule, a drip campaign)
    EXITED = "exited"  # its drip enrollment ended (unsubscribed, bounced, removed)




class Origin(str, enum.Enum):
    """What minted a row."""

    RECONCILER = "reconciler"  # materialised from an approved post
    PERSON = "person"  # created through the API, or Post now
    RECURRING = "recurring"  # materialised from a recurring rule
    DRIP = "drip"  # a drip enrollment's send
    SYSTEM = "system"  # Tickwork's own notifications


class FailureCode(str, enum.Enum):
    """Why a row ended ``failed``; ``last_error`` carries the words for a person."""

    PERMANENT = "permanent"  # the provider refused it for good (bad token, bad recipient)
    OUTCOME_UNKNOWN = "outcome_unknown"  # it may or may not have been sent
    WORKER_LOST = "worker_lost"  # left in submitted by a worker that died; outcome unknown
    MISSED_WINDOW = "missed_window"  # found later than its action type's maximum lateness
    DUPLICATE_OF_PUBLISHED = "duplicate_of_published"  # a sibling already published
    ATTEMPTS_EXHAUSTED = "attempts_exhausted"  # every attempt of its budget was used
    CONTENT_ERROR = "content_error"  # its content could not be built (a template error): refused for good, never sent
    RECONNECT_NEEDED = "reconnect_needed"  # its channel's connected account needs reconnecting: never sent


def _check_in(column: str, enum_cls) -> str:
    return f"{column} IN ({', '.join(repr(m.value) for m in enum_cls)})"


class ScheduledAction(Base):
    __tablename__ = "scheduled_actions"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    action_type: Mapped[str] = mapped_column(String(64))
    thing_id: Mapped[str | None] = mapped_column(String(128))
    target_key: Mapped[str] = mapped_column(String(255))
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id", ondelete="RESTRICT"))
    payload: Mapped[dict] = mapped_column(JSON)
    publish_at: Mapped[datetime] = mapped_column(UTCDateTime())
    status: Mapped[str] = mapped_column(String(16), default=Status.QUEUED.value, server_default="queued")
    last_error: Mapped[str | None] = mapped_column(Text)
    failure_code: Mapped[str | None] = mapped_column(String(32))
    attempt_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    provider_id: Mapped[str | None] = mapped_column(String(255))
    claim_token: Mapped[str | None] = mapped_column(String(36))
    submitted_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    origin: Mapped[str] = mapped_column(String(16), default=Origin.PERSON.value)
    cancel_kind: Mapped[str | None] = mapped_column(String(16))
    rescheduled_from_id: Mapped[int | None] = mapped_column(
        ForeignKey("scheduled_actions.id", ondelete="RESTRICT")
    )
    # The recurring rule that minted this row; its table arrives with recurring schedules.
    recurring_schedule_id: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (
        CheckConstraint(_check_in("status", Status), name="status"),
        CheckConstraint(_check_in("origin", Origin), name="origin"),
        CheckConstraint(f"cancel_kind IS NULL OR {_check_in('cancel_kind', CancelKind)}", name="cancel_kind"),
        CheckConstraint("(status = 'cancelled') = (cancel_kind IS NOT NULL)", name="cancel_kind_iff_cancelled"),
        CheckConstraint("attempt_count >= 0", name="attempt_count"),
        # Calendar and list queries: a workspace's rows by time.
        Index("ix_scheduled_actions_ws_publish_at", "workspace_id", "publish_at", "id"),
        # The tick's hot path: due rows in (publish_at, id) order, queued only.
        Index(
            "ix_scheduled_actions_queued_due",
            "publish_at",
            "id",
            postgresql_where=text("status = 'queued'"),
            sqlite_where=text("status = 'queued'"),
        ),
        # At most one active row per (thing, target).
        Index(
            "ux_scheduled_actions_active_thing_target",
            "workspace_id",
            "action_type",
            "thing_id",
            "target_key",
            unique=True,
            postgresql_where=text("status IN ('queued', 'submitted')"),
            sqlite_where=text("status IN ('queued', 'submitted')"),
        ),
        # The publish guard's and the terminal-history gate's lookup: by key, then status.
        Index(
            "ix_scheduled_actions_thing_target_status",
            "workspace_id",
            "action_type",
            "thing_id",
            "target_key",
            "status",
        ),
        # Dead-worker recovery scans submitted rows only.
        Index(
            "ix_scheduled_actions_submitted",
            "submitted_at",
            postgresql_where=text("status = 'submitted'"),
            sqlite_where=text("status = 'submitted'"),
        ),
        Index("ix_scheduled_actions_rescheduled_from", "rescheduled_from_id"),
    )

    @property
    def due_at(self) -> datetime:
        """The instant lateness is measured from: the next attempt when set, else publish_at."""
        return self.next_attempt_at or self.publish_at


def blocks_minting_again(row: "ScheduledAction") -> bool:
    """The terminal-history gate's test: a published, failed or person-cancelled row means its key
    (a post's target, a rule's slot) is never minted again. Rows cancelled as rescheduled,
    orphaned, paused or exited do not count: moves, re-approvals and resumes mint again."""
    return row.status in (Status.PUBLISHED.value, Status.FAILED.value) or (
        row.status == Status.CANCELLED.value and row.cancel_kind == CancelKind.PERSON.value)


def due_by(at):
    """The rows whose time has come by ``at``: ``publish_at`` passed, and the next attempt too when one is set.

    ``at`` is a datetime or a bound parameter. The status is not part of it: a claim names
    its own statuses; :func:`queued_and_due_by` is the tick's and the health page's question.
    """
    return and_(ScheduledAction.publish_at <= at,
                or_(ScheduledAction.next_attempt_at.is_(None), ScheduledAction.next_attempt_at <= at))


def queued_and_due_by(at):
    """Queued rows due by ``at``; the status is a literal, so SQLite sees its partial index applies."""
    return and_(ScheduledAction.status == literal_column("'queued'"), due_by(at))


class ActionHold(Base):
    """A queued row its channel's limit held back (``lifecycle.hold``): when it may go, and how late it already was.

    The hold is current while the row is queued and its ``next_attempt_at`` is ``held_until``.
    Lateness is then measured from ``late_from`` (``held_until`` less the lateness the row
    had when it was held), so time spent waiting for the channel never counts against the
    row's misfire window, and time before or after the hold still does. A row that moves on
    (claimed, retried, backed off) leaves a stale hold behind, which the tick clears.
    """

    __tablename__ = "action_holds"

    action_id: Mapped[int] = mapped_column(ForeignKey("scheduled_actions.id", ondelete="RESTRICT"), primary_key=True)
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id", ondelete="RESTRICT"))
    held_until: Mapped[datetime] = mapped_column(UTCDateTime())
    late_from: Mapped[datetime] = mapped_column(UTCDateTime())
    cause: Mapped[str] = mapped_column(String(16))  # rate, concurrency or paused
    held_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (
        CheckConstraint("cause IN ('rate', 'concurrency', 'paused')", name="cause"),
        CheckConstraint("late_from <= held_until", name="late_from_before_held_until"),
        Index("ix_action_holds_channel_held_until", "channel_id", "held_until"),
    )


class ActionEvent(StatusEvent, Base):
    """One status change of one row: from, to, when, who or which job, and why."""

    __tablename__ = "action_events"

    action_id: Mapped[int] = mapped_column(ForeignKey("scheduled_actions.id", ondelete="RESTRICT"))

    __table_args__ = (
        Index("ix_action_events_action_id", "action_id", "id"),
        Index("ix_action_events_clock_run_id", "clock_run_id"),
        # The per-minute rollup reads one minute of events; appended in time order, so cheap to keep.
        Index("ix_action_events_at", "at"),
    )
