"""What works tell the floors below them, registered at start-up (see :mod:`models.core.hooks`).

| hook         | works register                                                                    |
|--------------|-----------------------------------------------------------------------------------|
| gauges       | work schedules by state (active, paused, canceled, and the active ones claimed or due); works generating |
| zone changes | the nextRunAt of active daily, weekly and monthly schedules, read again off their wall anchor in the new zone |
"""

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from models.accounts.tables import Workspace
from models.core.hooks import Gauge, Hooks
from models.core.moves import Actor
from models.core.policy import Policy
from models.timing.cadence import Cadence, next_slot
from models.timing.wall_time import InvalidTimezone
from models.works import lifecycle
from models.works.reading import grid_of
from models.works.tables import GenerationStatus, ScheduleStatus, Work, WorkSchedule

CALENDAR_CADENCES = tuple(cadence.value for cadence in Cadence if not cadence.is_elapsed)


def register(hooks: Hooks) -> None:
    """Put the works' parts on every hook they answer."""
    hooks.add_gauge(Gauge("tickwork_work_schedules", "Work schedules by state, all workspaces", schedules_by_state,
                          label="state"))
    hooks.add_gauge(Gauge("tickwork_works", "Works by generation status, all workspaces", works_by_generation,
                          label="status"))
    hooks.add_zone_change("works", move_calendar_schedules)


def schedules_by_state(session: Session, now: datetime) -> dict[str, float]:
    """How many schedules are in each stored status, and of the active ones how many are claimed or due."""
    counts = {status.value: 0.0 for status in ScheduleStatus if status is not ScheduleStatus.DISABLED}
    counts.update({status: float(n) for status, n in session.execute(
        select(WorkSchedule.status, func.count()).group_by(WorkSchedule.status))})
    active = WorkSchedule.status == ScheduleStatus.ACTIVE.value
    counts["claimed"] = float(session.scalar(select(func.count()).select_from(WorkSchedule).where(
        active, WorkSchedule.next_run_at.is_(None))))
    counts["due"] = float(session.scalar(select(func.count()).select_from(WorkSchedule).where(
        active, WorkSchedule.next_run_at <= now)))
    return counts


def works_by_generation(session: Session, now: datetime) -> dict[str, float]:
    """How many works (not deleted) are in each generation status."""
    counts = {status.value: 0.0 for status in GenerationStatus}
    counts.update({status: float(n) for status, n in session.execute(
        select(Work.generation_status, func.count()).where(Work.deleted_at.is_(None))
        .group_by(Work.generation_status))})
    return counts


def move_calendar_schedules(session: Session, workspace_id: int, now: datetime, actor: Actor,
                            policy: Policy) -> dict[str, int]:
    """After a zone change, each active calendar schedule's next slot is its wall anchor in the new zone.

    Elapsed cadences (hourly to every 12 hours) step in elapsed time and are left alone; a
    schedule in its retry backoff (failureCount > 0) keeps its retry instant, and one whose
    claim is running (nextRunAt NULL) is settled by its run, on the same grid.
    """
    zone = session.scalar(select(Workspace.timezone).where(Workspace.id == workspace_id))
    moved = 0
    schedules = session.scalars(select(WorkSchedule).where(
        WorkSchedule.workspace_id == workspace_id, WorkSchedule.status == ScheduleStatus.ACTIVE.value,
        WorkSchedule.cadence.in_(CALENDAR_CADENCES), WorkSchedule.next_run_at.is_not(None),
        WorkSchedule.failure_count == 0))
    for schedule in list(schedules):
        try:
            slot = next_slot(grid_of(schedule), now, zone)
        except InvalidTimezone:
            continue
        if slot != schedule.next_run_at:
            moved += lifecycle.reslot(session, schedule.id, seen_next_run_at=schedule.next_run_at, retry_at=slot,
                                      now=now).ok
    return {"schedules_moved": moved}
