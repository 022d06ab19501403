"""The works tables: works, their schedules, their runs, one event log, and the usage ledger.

A *work* is something a workspace regenerates on a cadence (a directory site, a digest, a
report) by running a pipeline plugin; each generation is a *run*. A work has at most one
*schedule* (the second seed's ``WorkSchedule``): its cadence, its grid, ``nextRunAt`` and the
``scheduledFor`` anchor. The lifecycles live in :mod:`models.works.lifecycle` (the schedule)
and :mod:`models.works.generation` (the work's generation status and its runs); this module
only declares the shape of the data.

Column names follow the house (snake_case); the API shows the schedule with the seed's
names (``nextRunAt``, ``scheduledFor``, ``billingMode``, ...), see ``webapp/api/works.py``.
"""

import enum
from datetime import datetime

from sqlalchemy import JSON, CheckConstraint, DateTime, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from models.core.base import Base
from models.core.events import StatusEvent
from models.core.types import UTCDateTime
from models.timing.cadence import Cadence


def _check_in(column: str, values) -> str:
    return f"{column} IN ({', '.join(repr(getattr(v, 'value', v)) for v in values)})"


class GenerationStatus(str, enum.Enum):
    """Where a work's latest generation is."""

    IDLE = "idle"  # never generated
    GENERATING = "generating"  # a run is in progress (at most one per work)
    GENERATED = "generated"  # the latest run succeeded
    ERROR = "error"  # the latest run failed, or was recovered as a zombie


class ScheduleStatus(str, enum.Enum):
    """The seed's ``WorkScheduleStatus``, with its spelling (``canceled``, one l).

    ``disabled`` is never stored: it is what a work without a schedule row answers.
    """

    DISABLED = "disabled"  # no schedule row: the work was never scheduled (never stored)
    ACTIVE = "active"  # runs at nextRunAt; the dispatcher claims it when due
    PAUSED = "paused"  # kept, not run: by a person, by auto-pause after failures, or by a plan downgrade
    CANCELED = "canceled"  # deleted (DELETE, or its work deleted); kept with its runs; PUT enable re-activates it


STORED_SCHEDULE_STATUSES = (ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED, ScheduleStatus.CANCELED)


class BillingMode(str, enum.Enum):
    """The seed's ``WorkScheduleBillingMode``."""

    SUBSCRIPTION = "subscription"  # only the cadences of the workspace's plan
    USAGE = "usage"  # any cadence; every generation writes a usage-ledger row


class OverlapPolicy(str, enum.Enum):
    """What a slot does when it comes due while the work's last generation still runs (Temporal's overlap policies)."""

    SKIP = "skip"  # the slot is skipped (outcome skipped, reason still_generating)
    BUFFER_ONE = "buffer_one"  # the slot runs as soon as that generation ends; at most one waits


class RunKind(str, enum.Enum):
    """What started a run."""

    SCHEDULED = "scheduled"  # the dispatcher's claim of a due slot (or Run Now on a due slot)
    MANUAL = "manual"  # Run Now before the slot, or without a schedule


class RunStatus(str, enum.Enum):
    """Where one generation is."""

    RUNNING = "running"  # handed to the works queue, or its pipeline is running
    WAITING = "waiting"  # the pipeline handed the work to an outside system and waits for its callback
    SUCCEEDED = "succeeded"  # generated (terminal; also a lost run whose pipeline later reported success)
    FAILED = "failed"  # the pipeline failed, timed out, or its plugin is gone (terminal)
    LOST = "lost"  # recovered as a zombie after work_stuck_timeout; a late success still wins


ACTIVE_RUN_STATUSES = (RunStatus.RUNNING.value, RunStatus.WAITING.value)
PROVIDER_CAPABILITIES = ("ai", "search", "screenshot", "contentExtractor", "pipeline")
MAX_FAILURES_BEFORE_PAUSE = 10


class Work(Base):
    __tablename__ = "works"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    name: Mapped[str] = mapped_column(String(100))
    # The pipeline plugin it runs (an installed plugin of capability "pipeline") and its settings.
    pipeline: Mapped[str] = mapped_column(String(64))
    settings: Mapped[dict] = mapped_column(JSON, default=dict)
    # The key the webhook pipeline signs with, sealed at rest like a channel secret.
    secret_sealed: Mapped[str | None] = mapped_column(Text)
    generation_status: Mapped[str] = mapped_column(String(16), default=GenerationStatus.IDLE.value)
    # The token of the run that last moved the work to generating: only that run may finish it.
    generation_token: Mapped[str | None] = mapped_column(String(36))
    generation_started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    generation_finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime())  # a soft delete

    __table_args__ = (
        CheckConstraint(_check_in("generation_status", GenerationStatus), name="generation_status"),
        Index("ix_works_workspace", "workspace_id", "id"),
        # Zombie recovery scans generating works only.
        Index("ix_works_generating", "generation_started_at",
              postgresql_where=text("generation_status = 'generating'"),
              sqlite_where=text("generation_status = 'generating'")),
    )


class WorkSchedule(Base):
    """The seed's ``WorkSchedule``: one per work."""

    __tablename__ = "work_schedules"

    id: Mapped[int] = mapped_column(primary_key=True)
    work_id: Mapped[int] = mapped_column(ForeignKey("works.id", ondelete="RESTRICT"), unique=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    cadence: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16))
    # nextRunAt: when the dispatcher runs it next; NULL while a claimed run is in flight.
    next_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # scheduledFor: the nextRunAt the claim took (the seed's drift-correction anchor).
    scheduled_for: Mapped[datetime | None] = mapped_column(UTCDateTime())
    claimed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # The token of the run the claim started: only that run settles the schedule.
    claim_token: Mapped[str | None] = mapped_column(String(36))
    # The grid (models/timing/cadence.py): anchor_at for the hourly cadences, anchor_local
    # (a wall date and time in the workspace's zone) for daily, weekly and monthly.
    anchor_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    anchor_local: Mapped[datetime | None] = mapped_column(DateTime(timezone=False))
    billing_mode: Mapped[str] = mapped_column(String(16), default=BillingMode.SUBSCRIPTION.value)
    max_failure_before_pause: Mapped[int] = mapped_column(Integer, default=3)
    overlap_policy: Mapped[str] = mapped_column(String(16), default=OverlapPolicy.SKIP.value,
                                                server_default=OverlapPolicy.SKIP.value)
    failure_count: Mapped[int] = mapped_column(Integer, default=0)
    provider_overrides: Mapped[dict] = mapped_column(JSON, default=dict)
    last_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_run_status: Mapped[str | None] = mapped_column(String(16))
    paused_reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (
        CheckConstraint(_check_in("status", STORED_SCHEDULE_STATUSES), name="status"),
        # Additive: a new cadence is a migration that adds it here, never a rewrite of rows.
        CheckConstraint(_check_in("cadence", Cadence), name="cadence"),
        CheckConstraint(_check_in("billing_mode", BillingMode), name="billing_mode"),
        CheckConstraint(_check_in("overlap_policy", OverlapPolicy), name="overlap_policy"),
        CheckConstraint(f"max_failure_before_pause BETWEEN 1 AND {MAX_FAILURES_BEFORE_PAUSE}",
                        name="max_failure_before_pause"),
        CheckConstraint("failure_count >= 0", name="failure_count"),
        CheckConstraint("(anchor_at IS NULL) <> (anchor_local IS NULL)", name="one_anchor"),
        # The dispatcher's hot path: active schedules by (nextRunAt, id).
        Index("ix_work_schedules_due", "next_run_at", "id",
              postgresql_where=text("status = 'active'"), sqlite_where=text("status = 'active'")),
        Index("ix_work_schedules_workspace", "workspace_id", "id"),
    )

    @property
    def anchor_local_naive(self) -> datetime | None:
        """The wall anchor as a naive datetime (PostgreSQL hands it back naive already)."""
        value = self.anchor_local
        return value.replace(tzinfo=None) if value is not None else None


class WorkRun(Base):
    """One generation of one work."""

    __tablename__ = "work_runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    work_id: Mapped[int] = mapped_column(ForeignKey("works.id", ondelete="RESTRICT"))
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    schedule_id: Mapped[int | None] = mapped_column(ForeignKey("work_schedules.id", ondelete="RESTRICT"))
    kind: Mapped[str] = mapped_column(String(16))
    # The grid slot a scheduled run belongs to (a retry keeps the slot it retries).
    slot: Mapped[datetime | None] = mapped_column(UTCDateTime())
    token: Mapped[str] = mapped_column(String(36), unique=True)
    status: Mapped[str] = mapped_column(String(16), default=RunStatus.RUNNING.value)
    pipeline: Mapped[str] = mapped_column(String(64))
    providers: Mapped[dict] = mapped_column(JSON, default=dict)  # capability -> plugin id, as chosen
    billing_mode: Mapped[str] = mapped_column(String(16))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # Set when the pipeline hands the work to an outside system: no callback by then is a failure.
    deadline_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    error: Mapped[str | None] = mapped_column(Text)
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    clock_run_id: Mapped[int | None] = mapped_column(ForeignKey("clock_runs.id", ondelete="RESTRICT"))

    __table_args__ = (
        CheckConstraint(_check_in("kind", RunKind), name="kind"),
        CheckConstraint(_check_in("status", RunStatus), name="status"),
        CheckConstraint(_check_in("billing_mode", BillingMode), name="billing_mode"),
        Index("ix_work_runs_work", "work_id", "id"),
        # At most one generation of a work at a time, in the database.
        Index("ux_work_runs_one_active_per_work", "work_id", unique=True,
              postgresql_where=text("status IN ('running', 'waiting')"),
              sqlite_where=text("status IN ('running', 'waiting')")),
        # Expiry scans the runs waiting on a callback only.
        Index("ix_work_runs_waiting", "deadline_at",
              postgresql_where=text("status = 'waiting'"), sqlite_where=text("status = 'waiting'")),
    )

    @property
    def duration(self):
        return self.finished_at - self.started_at if self.finished_at else None


class WorkEvent(StatusEvent, Base):
    """One status change of a schedule, a work's generation, or a run: from, to, when, who, why."""

    __tablename__ = "work_events"

    work_id: Mapped[int] = mapped_column(ForeignKey("works.id", ondelete="RESTRICT"))
    lifecycle: Mapped[str] = mapped_column(String(16))  # schedule, generation, run
    subject_id: Mapped[int] = mapped_column(Integer)  # the schedule, work or run that moved

    __table_args__ = (
        CheckConstraint("lifecycle IN ('schedule', 'generation', 'run')", name="lifecycle"),
        Index("ix_work_events_work", "work_id", "id"),
    )


class WorkUsage(Base):
    """One generation billed by use: the usage ledger. Never pruned."""

    __tablename__ = "work_usage"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    work_id: Mapped[int] = mapped_column(ForeignKey("works.id", ondelete="RESTRICT"))
    run_id: Mapped[int] = mapped_column(ForeignKey("work_runs.id", ondelete="RESTRICT"), unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    cadence: Mapped[str | None] = mapped_column(String(32))
    at: Mapped[datetime] = mapped_column(UTCDateTime())
    # The month in the workspace's zone when it was written, "2026-06": what the bill groups by.
    month: Mapped[str] = mapped_column(String(7))

    __table_args__ = (Index("ix_work_usage_workspace_month", "workspace_id", "month"),)
