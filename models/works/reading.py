"""Reading works: one work, a page of them, a work's schedule and grid, its runs, the usage ledger."""

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from models.accounts.tables import Workspace
from models.core.egress import url_refusal
from models.core.errors import InvalidInput, NotFound
from models.timing.cadence import Grid, next_slot, slots_between
from models.timing.wall_time import InvalidTimezone
from models.works.tables import RunKind, RunStatus, Work, WorkRun, WorkSchedule, WorkUsage

MAX_ID = 2**31 - 1


def _locked(session: Session, query):
    """``query`` with its row lock on PostgreSQL (SQLite's writer lock is already held by a write transaction)."""
    if session.get_bind().dialect.name == "postgresql":
        return query.with_for_update()
    return query


def get_work(session: Session, workspace_id: int, work_id: int, *, lock: bool = False,
             include_deleted: bool = False) -> Work:
    """The work, or :class:`NotFound` (a deleted work is not found unless asked for)."""
    query = select(Work).where(Work.id == work_id, Work.workspace_id == workspace_id)
    if not include_deleted:
        query = query.where(Work.deleted_at.is_(None))
    if lock:
        query = _locked(session, query).execution_options(populate_existing=True)
    work = session.scalar(query)
    if work is None:
        raise NotFound(f"no work #{work_id} in this workspace")
    return work


def schedule_of(session: Session, work_id: int, *, lock: bool = False) -> WorkSchedule | None:
    """The work's schedule row, if it has one (none reads as ``disabled``)."""
    query = select(WorkSchedule).where(WorkSchedule.work_id == work_id)
    if lock:
        query = _locked(session, query).execution_options(populate_existing=True)
    return session.scalar(query)


def grid_of(schedule: WorkSchedule) -> Grid:
    """The schedule's grid as the pure cadence functions take it."""
    return Grid(schedule.cadence, anchor_at=schedule.anchor_at, anchor_local=schedule.anchor_local_naive)


def last_generation_at(session: Session, work_id: int) -> datetime | None:
    """When the work's last successful generation was: a scheduled run's slot, else its start; None if never."""
    run = session.scalar(select(WorkRun).where(WorkRun.work_id == work_id, WorkRun.status == RunStatus.SUCCEEDED.value)
                         .order_by(WorkRun.started_at.desc(), WorkRun.id.desc()).limit(1))
    if run is None:
        return None
    return run.slot if run.kind == RunKind.SCHEDULED.value and run.slot is not None else run.started_at


def workspace_of(session: Session, workspace_id: int) -> Workspace:
    return session.get(Workspace, workspace_id)


def upcoming_slots(schedule: WorkSchedule, zone: str, now: datetime, *, limit: int = 5) -> list[datetime]:
    """The grid slots that follow the schedule's next run (or now), a few of them; none when the zone is broken."""
    try:
        start = next_slot(grid_of(schedule), max(now, schedule.next_run_at or now), zone)
        return slots_between(grid_of(schedule), start, datetime.max.replace(tzinfo=start.tzinfo), zone, limit=limit)
    except (InvalidTimezone, OverflowError):
        return []


def list_works(session: Session, workspace_id: int, *, after: int | None = None,
               limit: int = 50) -> list[tuple[Work, WorkSchedule | None]]:
    """The workspace's works (not deleted) by id, each with its schedule; ``after`` an id continues a page."""
    query = (select(Work, WorkSchedule).outerjoin(WorkSchedule, WorkSchedule.work_id == Work.id)
             .where(Work.workspace_id == workspace_id, Work.deleted_at.is_(None)).order_by(Work.id).limit(limit))
    if after is not None:
        query = query.where(Work.id > after)
    return [(work, schedule) for work, schedule in session.execute(query)]


def read_works_cursor(cursor: str) -> int:
    """The id a works cursor carries (it is the last id shown), or a 422."""
    if not cursor.isdecimal() or not 0 < int(cursor) <= MAX_ID:
        raise InvalidInput("cursor is not one this API gave out", field="cursor", code="bad_cursor")
    return int(cursor)


def runs_of(session: Session, work_id: int, *, limit: int = 20) -> list[WorkRun]:
    """The work's latest runs, newest first."""
    return list(session.scalars(select(WorkRun).where(WorkRun.work_id == work_id)
                                .order_by(WorkRun.id.desc()).limit(limit)))


def live_run_of(session: Session, work_id: int) -> WorkRun | None:
    """The work's run in progress, if any (at most one, by the database's index)."""
    return session.scalar(select(WorkRun).where(WorkRun.work_id == work_id,
                                                WorkRun.status.in_((RunStatus.RUNNING.value, RunStatus.WAITING.value))))


@dataclass(frozen=True)
class UsageMonth:
    month: str  # 2026-06, in the workspace's zone
    generations: int
    scheduled: int
    manual: int


def usage_by_month(session: Session, workspace_id: int, *, months: int = 12) -> list[UsageMonth]:
    """The usage ledger of a workspace, summed per month, newest first."""
    rows = session.execute(
        select(WorkUsage.month, WorkUsage.kind, func.count())
        .where(WorkUsage.workspace_id == workspace_id)
        .group_by(WorkUsage.month, WorkUsage.kind)
    ).all()
    per_month: dict[str, dict[str, int]] = {}
    for month, kind, count in rows:
        per_month.setdefault(month, {})[kind] = count
    return [UsageMonth(month, sum(kinds.values()), kinds.get("scheduled", 0), kinds.get("manual", 0))
            for month, kinds in sorted(per_month.items(), reverse=True)[:months]]


def refused_works(session: Session) -> list[tuple[Work, str]]:
    """Every work whose webhook pipeline's ``settings.url`` the egress policy refuses now: ``(work, why)``."""
    found = []
    for work in session.scalars(select(Work).where(Work.pipeline == "webhook", Work.deleted_at.is_(None))
                                .order_by(Work.workspace_id, Work.id)):
        url = (work.settings or {}).get("url")
        why = url_refusal(url) if url else None
        if why is not None:
            found.append((work, why))
    return found
