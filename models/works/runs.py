"""A run's life outside its pipeline: starting it, and the rules applied when it ends (issue 12, item 4).

Starting (:func:`start_run`), in the transaction of the claim or of Run Now: the work moves
to ``generating``, the run row is written, and a run billed by use writes its usage-ledger
row. The pipeline is then called by the generation task, outside any transaction.

When a run ends (:func:`record_outcome`: the task's answer, a callback, an expiry, a zombie
recovered), in one transaction:

| run                   | the run    | the work   | its schedule                                                                 |
|-----------------------|------------|------------|------------------------------------------------------------------------------|
| scheduled, succeeded  | succeeded  | generated  | nextRunAt = first grid slot after now (``buffer_one``: the latest slot that came due while it ran, due at once); failureCount = 0; scheduledFor kept |
| scheduled, failed     | failed     | error      | failureCount + 1; nextRunAt = :func:`~models.timing.cadence.retry_at` (the earlier of the next slot and now + 15 min × 2^(n−1)); at maxFailureBeforePause: paused, and a notification |
| manual, succeeded     | succeeded  | generated  | failureCount and nextRunAt untouched (FR-10: only a scheduled success resets it) |
| manual, failed        | failed     | error      | failureCount + 1 (FR-9), nextRunAt untouched; at maxFailureBeforePause: paused, and a notification |
| not handed off        | failed     | error      | nothing counted: a scheduled run's claim is released, nextRunAt = the busy retry |
| lost (zombie)         | lost       | error      | as a scheduled failure, when the claim was this run's                        |
| lost, then succeeded  | succeeded  | generated (if nothing started since) | untouched: it was settled when the run was lost |

The schedule is settled only while its claim is still this run's (its ``claim_token``): a
schedule re-enabled or recovered meanwhile has moved on, and is left alone.
"""

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.accounts.tables import Workspace
from models.core.database import write_session
from models.core.errors import Conflict, NotFound, Unavailable
from models.core.moves import Actor
from models.timing.cadence import next_slot, retry_at, slot_at_or_before
from models.timing.wall_time import InvalidTimezone, to_local
from models.works import generation, lifecycle
from models.works.context import WorksContext
from models.works.notify import notify
from models.works.reading import grid_of
from models.works.tables import (
    ACTIVE_RUN_STATUSES,
    BillingMode,
    OverlapPolicy,
    RunKind,
    RunStatus,
    ScheduleStatus,
    Work,
    WorkRun,
    WorkSchedule,
    WorkUsage,
)

log = logging.getLogger("tickwork.works")

# A schedule whose workspace zone is broken cannot read its calendar grid; it waits this long.
_BROKEN_ZONE_WAIT_HOURS = 1


def chosen_providers(work: Work, schedule: WorkSchedule | None) -> tuple[str, dict[str, str]]:
    """The pipeline a run uses and every provider chosen for it (capability -> plugin id)."""
    overrides = dict(schedule.provider_overrides or {}) if schedule is not None else {}
    pipeline = overrides.pop("pipeline", None) or work.pipeline
    return pipeline, {**overrides, "pipeline": pipeline}


def billing_of(schedule: WorkSchedule | None) -> str:
    """A run is billed as its schedule is; without a live schedule, by use."""
    if schedule is None or schedule.status == ScheduleStatus.CANCELED.value:
        return BillingMode.USAGE.value
    return schedule.billing_mode


def _month(now: datetime, zone: str | None) -> str:
    try:
        return to_local(now, zone).strftime("%Y-%m")
    except InvalidTimezone:
        return now.strftime("%Y-%m")


def start_run(session: Session, work: Work, schedule: WorkSchedule | None, *, kind: RunKind, token: str,
              slot: datetime | None, now: datetime, actor: Actor, reason: str) -> WorkRun:
    """Move the work to generating and write its run (and its usage row when billed by use).

    A work already generating is a 409 ``already_generating``; the caller's transaction
    has changed nothing then.
    """
    moved = generation.start(session, work, token=token, now=now, actor=actor, reason=reason)
    if not moved.ok:
        raise Conflict(f"work #{work.id} is {moved.status}; a generation is already running" if
                       moved.status == "generating" else f"work #{work.id} cannot start: it is {moved.status}",
                       code="already_generating" if moved.status == "generating" else "wrong_state")
    pipeline, providers = chosen_providers(work, schedule)
    billing = billing_of(schedule)
    run = generation.insert_run(session, work, token=token, kind=kind, schedule_id=schedule.id if schedule else None,
                                slot=slot, pipeline=pipeline, providers=providers, billing_mode=billing, now=now,
                                actor=actor)
    if billing == BillingMode.USAGE.value:
        zone = session.scalar(select(Workspace.timezone).where(Workspace.id == work.workspace_id))
        session.add(WorkUsage(workspace_id=work.workspace_id, work_id=work.id, run_id=run.id, kind=kind.value,
                              cadence=schedule.cadence if schedule else None, at=now, month=_month(now, zone)))
        session.flush()
    return run


@dataclass
class Ended:
    """What ending a run did: the run as it is now, whether the schedule paused, actions to announce."""

    run: WorkRun | None
    recorded: bool  # False: the run had already ended (a repeated callback, a task after recovery)
    paused: bool = False
    actions: list = field(default_factory=list)


def run_by_token(session: Session, token: str, *, lock: bool = True) -> WorkRun | None:
    query = select(WorkRun).where(WorkRun.token == token).execution_options(populate_existing=True)
    if lock and session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update()
    return session.scalar(query)


def _work_locked(session: Session, work_id: int) -> Work:
    query = select(Work).where(Work.id == work_id).execution_options(populate_existing=True)
    if session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update()
    return session.scalar(query)


def record_outcome(session: Session, token: str, *, succeeded: bool, error: str | None, now: datetime,
                   actor: Actor, context: WorksContext, counted: bool = True) -> Ended:
    """End the run ``token`` as generated or failed, and apply this module's table to its work and schedule.

    ``counted=False`` is a run that never reached the works queue: it fails, and its
    schedule is released without counting a failure (a hand-off is not a generation).
    """
    # Locks are taken in one order everywhere: the work, then its run, then its schedule.
    run = run_by_token(session, token, lock=False)
    if run is None:
        raise NotFound("no run with this token")
    work = _work_locked(session, run.work_id)
    run = run_by_token(session, token)
    if run.status == RunStatus.LOST.value and succeeded:
        moved = generation.late_succeed(session, run, now=now, actor=actor)
        generation.late_success(session, work, token=token, now=now, actor=actor)
        return Ended(moved.row if moved.ok else run, moved.ok)
    if run.status not in ACTIVE_RUN_STATUSES:
        return Ended(run, False)
    error = (error or "the pipeline failed without saying why")[:2000]
    if succeeded:
        moved = generation.succeed(session, run, now=now, actor=actor)
        if moved.ok:
            generation.finish(session, work, token=token, now=now, actor=actor)
    else:
        moved = generation.fail_run(session, run, error=error, now=now, actor=actor)
        if moved.ok:
            generation.fail(session, work, token=token, error=error, now=now, actor=actor)
    if not moved.ok:
        return Ended(run, False)
    ended = Ended(moved.row, True)
    if counted:
        _settle_schedule(session, moved.row, work, succeeded=succeeded, error=error, now=now, actor=actor,
                         context=context, ended=ended)
    else:
        _release_schedule(session, moved.row, now=now, context=context)
    return ended


def _release_schedule(session: Session, run: WorkRun, *, now: datetime, context: WorksContext) -> None:
    """A scheduled run that was never handed over gives its claim back: due again after the busy retry."""
    if run.schedule_id is None or run.kind != RunKind.SCHEDULED.value:
        return
    schedule = session.get(WorkSchedule, run.schedule_id, populate_existing=True)
    if schedule.claim_token != run.token:
        return
    zone = _zone(session, schedule.workspace_id)
    retry = min(now + context.policy.work_busy_retry, next_after(schedule, zone, now))
    lifecycle.release_claim(session, schedule, token=run.token, next_run_at=retry, now=now)


def lose_run(session: Session, run: WorkRun, *, cutoff: datetime, now: datetime, actor: Actor,
             context: WorksContext) -> Ended:
    """A zombie: its work has generated since before ``cutoff``. The run is lost, the work in error, the
    schedule settled as failed; a late success from the pipeline still records the truth."""
    work = _work_locked(session, run.work_id)
    minutes = int(context.policy.work_stuck_timeout.total_seconds() // 60)
    error = (f"recovered as a zombie: generating since {work.generation_started_at:%Y-%m-%d %H:%M:%S}Z, "
             f"no result within {minutes} min")
    recovered = generation.recover(session, work, token=run.token, cutoff=cutoff, error=error, now=now, actor=actor)
    if not recovered.ok:
        return Ended(run, False)
    moved = generation.lose(session, run, error=error, now=now, actor=actor)
    if not moved.ok:
        return Ended(run, False)
    ended = Ended(moved.row, True)
    _settle_schedule(session, moved.row, work, succeeded=False, error=error, now=now, actor=actor, context=context,
                     ended=ended)
    return ended


def expire_run(session: Session, run: WorkRun, *, now: datetime, actor: Actor, context: WorksContext) -> Ended:
    """A run waiting for its callback past its deadline: failed, like any other failure."""
    work = _work_locked(session, run.work_id)
    minutes = int(context.policy.work_pipeline_timeout.total_seconds() // 60)
    error = f"no callback within the pipeline timeout ({minutes} min)"
    moved = generation.expire(session, run, error=error, now=now, actor=actor)
    if not moved.ok:
        return Ended(run, False)
    generation.fail(session, work, token=run.token, error=error, now=now, actor=actor)
    ended = Ended(moved.row, True)
    _settle_schedule(session, moved.row, work, succeeded=False, error=error, now=now, actor=actor, context=context,
                     ended=ended)
    return ended


def _zone(session: Session, workspace_id: int) -> str | None:
    return session.scalar(select(Workspace.timezone).where(Workspace.id == workspace_id))


def next_after(schedule: WorkSchedule, zone: str | None, now: datetime, *, failures: int = 0) -> datetime:
    """The next nextRunAt: the first grid slot after now, or the failure's retry (the grid never moves).

    A broken zone cannot place a calendar slot: the schedule then waits an hour, and the
    dispatcher reports it ``bad_zone`` until the zone is fixed.
    """
    try:
        if failures:
            return retry_at(grid_of(schedule), now, failures, zone)
        return next_slot(grid_of(schedule), now, zone)
    except InvalidTimezone:
        return now + timedelta(hours=_BROKEN_ZONE_WAIT_HOURS)


def _settle_schedule(session: Session, run: WorkRun, work: Work, *, succeeded: bool, error: str, now: datetime,
                     actor: Actor, context: WorksContext, ended: Ended) -> None:
    if run.schedule_id is None:
        return
    query = select(WorkSchedule).where(WorkSchedule.id == run.schedule_id).execution_options(populate_existing=True)
    if session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update()
    schedule = session.scalar(query)
    if run.kind == RunKind.MANUAL.value:
        recorded = lifecycle.record_manual_run(session, schedule, succeeded=succeeded, now=now)
        if recorded.ok and not succeeded:
            ended.paused, ended.actions = auto_pause_if_due(session, recorded.row, work, error=error, now=now,
                                                            actor=actor)
        return
    if schedule.claim_token != run.token:
        return  # re-enabled or recovered since the claim: the schedule has moved on
    zone = _zone(session, work.workspace_id)
    failures = 0 if succeeded else schedule.failure_count + 1
    next_run_at = next_after(schedule, zone, now, failures=failures)
    if succeeded and schedule.overlap_policy == OverlapPolicy.BUFFER_ONE.value:
        next_run_at = _buffered_slot(schedule, run, zone, now) or next_run_at
    settled = lifecycle.settle(session, schedule, token=run.token, failure_count=failures,
                               next_run_at=next_run_at,
                               run_status="generated" if succeeded else "error", now=now)
    if settled.ok and failures:
        ended.paused, ended.actions = auto_pause_if_due(session, settled.row, work, error=error, now=now, actor=actor)


def _buffered_slot(schedule: WorkSchedule, run: WorkRun, zone: str | None, now: datetime) -> datetime | None:
    """``buffer_one``: the latest slot that came due while ``run`` ran (it runs next, at once), or None."""
    try:
        latest = slot_at_or_before(grid_of(schedule), now, zone)
    except InvalidTimezone:
        return None
    if latest is None or run.slot is None or latest <= run.slot:
        return None
    return latest


def auto_pause_if_due(session: Session, schedule: WorkSchedule, work: Work, *, error: str, now: datetime,
                      actor: Actor) -> tuple[bool, list]:
    """FR-9: at maxFailureBeforePause consecutive failures an active schedule pauses, and the workspace is told.

    Only the transaction whose pause moved the schedule notifies, so the notification (and
    its send) happens at most once per pause.
    """
    if schedule.status != ScheduleStatus.ACTIVE.value or schedule.failure_count < schedule.max_failure_before_pause:
        return False, []
    reason = (f"paused after {schedule.failure_count} consecutive failures "
              f"(the schedule pauses at {schedule.max_failure_before_pause} in a row); last error: {error}")
    paused = lifecycle.pause(session, schedule, now=now, actor=actor, reason=reason[:2000])
    if not paused.ok:
        return False, []
    notified = notify(session, work.workspace_id, kind="work_auto_paused",
                      title=f"Schedule of {work.name!r} paused after {schedule.failure_count} failures",
                      body=reason, subject=f"work:{work.id}",
                      dedupe_key=f"work_auto_paused:schedule:{schedule.id}:{now.isoformat()}", now=now, actor=actor)
    return True, notified.actions


def recover_lost_claim(session: Session, schedule: WorkSchedule, *, cutoff: datetime, now: datetime, actor: Actor,
                       context: WorksContext) -> Ended:
    """A claim older than the stuck timeout with no generation behind it (its task was lost): a failure."""
    work = _work_locked(session, schedule.work_id)
    if work is not None and work.generation_status == "generating":
        return Ended(None, False)  # a generation is running: zombie recovery will see to it
    zone = _zone(session, schedule.workspace_id)
    failures = schedule.failure_count + 1
    moved = lifecycle.recover_claim(session, schedule, cutoff=cutoff, failure_count=failures,
                                    next_run_at=next_after(schedule, zone, now, failures=failures), now=now)
    ended = Ended(None, moved.ok)
    if moved.ok and work is not None:
        minutes = int(context.policy.work_stuck_timeout.total_seconds() // 60)
        ended.paused, ended.actions = auto_pause_if_due(
            session, moved.row, work, now=now, actor=actor,
            error=f"claimed at {schedule.claimed_at:%Y-%m-%d %H:%M:%S}Z and no generation within {minutes} min")
    return ended


def hand_off_or_release(context: WorksContext, runs: list[WorkRun], *, actor: Actor) -> None:
    """Hand started runs to the works queue; when it cannot take them, fail them uncounted and answer 503.

    Both shells' Run Now call this after their transaction committed, as the dispatcher does
    for its claims: a run the queue never got must not leave its work ``generating`` until
    zombie recovery, and is not a generation failure (FR-9 counts generations).
    """
    try:
        context.hand_off([run.id for run in runs])
    except Exception as exc:  # the queue's storage is unreachable: settle now, tell the caller
        error = release_unhanded(context, runs, exc, actor=actor)
        raise Unavailable(f"The works queue cannot take the generation now ({error}); nothing was started and "
                          "no failure counted. Try again in a moment.", code="queue_unavailable") from None


def release_unhanded(context: WorksContext, runs: list[WorkRun], exc: Exception, *, actor: Actor) -> str:
    """Fail runs the works queue refused, without counting a failure; returns the error in words."""
    error = f"could not be handed to the works queue: {type(exc).__name__}: {exc}"[:2000]
    log.error("runs %s %s", [run.id for run in runs], error)
    for run in runs:
        with write_session(context.engine) as session:
            ended = record_outcome(session, run.token, succeeded=False, error=error, now=context.clock.now(),
                                   actor=actor, context=context, counted=False)
        context.announce(ended.actions)
    return error
