"""The work-schedule dispatcher (FR-3 to FR-8): one pass, as the ``dispatch-works`` clock job runs it.

In this order, each step in short transactions of its own:

1. **Expiry.** A run waiting for its callback past its deadline (the pipeline timeout) has
   failed: the after-run rules apply (:mod:`models.works.runs`).
2. **Zombie recovery (FR-6).** A work ``generating`` for longer than ``work_stuck_timeout``
   is flipped to ``error`` and its run to ``lost``, a failure like any other (FR-9 counts
   it; the schedule gets its retry; auto-pause may follow). A schedule whose ``nextRunAt``
   is NULL with no work generating and a ``claimed_at`` older than the timeout (a claim
   whose task was lost) is recovered the same way.
3. **Due schedules.** ``active`` and ``nextRunAt <= now``, in ``(nextRunAt, id)`` order, at
   most ``work_max_batch`` of them (the rest wait for the next pass), handled one after
   another (FR-7), each in its own write transaction that locks its work first:

   | found                                   | outcome      | reason                | and                                               |
   |-----------------------------------------|--------------|-----------------------|---------------------------------------------------|
   | the work deleted since the query        | `skipped`    | `work_not_found`      | the schedule is canceled                          |
   | the work still generating, ``skip``     | `skipped`    | `still_generating`    | nextRunAt = the earlier of now + ``work_busy_retry`` and the next slot; no failure counted |
   | the work still generating, ``buffer_one`` | `skipped`  | `buffered`            | nextRunAt kept: the slot runs at the first pass after that generation ends (at most one waits) |
   | the workspace's zone is broken          | `skipped`    | `bad_zone`            | nothing changes; the other schedules run          |
   | a subscription cadence outside the plan | `skipped`    | `cadence_not_in_plan` | the schedule is paused and the workspace notified |
   | the claim updates nothing               | `skipped`    | `already_claimed`     | another dispatcher (or an edit) got there first   |
   | claimed                                 | `dispatched` |                       | the work generating, the run written, handed to the ``works`` queue after commit |
   | the queue refused the hand-off, or the transaction failed | `failed` | the error | a refused hand-off fails its run uncounted; the claim is released, due again after ``work_busy_retry`` |

   The claim is the seed's single statement (FR-4, FR-5)::

       UPDATE work_schedules SET scheduled_for = next_run_at, next_run_at = NULL, claimed_at = :now,
              claim_token = :token
        WHERE id = :id AND status = 'active' AND next_run_at = :seen AND next_run_at <= :now

It returns (and the clock run stores) the seed's ``WorkScheduleDispatchSummary``:
``dueCount``, ``dispatched``, ``skipped``, ``failed``, and one entry per schedule with its
``outcome`` and ``reason``; plus what recovery did.
"""

import logging
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from models.accounts.tables import Workspace
from models.clock.runs import run_recorded
from models.core.database import read_session, write_session
from models.core.moves import Actor
from models.timing.cadence import Cadence, slot_at_or_before
from models.timing.wall_time import InvalidTimezone, load_zone
from models.works import generation, lifecycle
from models.works.context import WorksContext
from models.works.operations import pause_outside_plan
from models.works.reading import grid_of
from models.works.runs import (
    expire_run,
    lose_run,
    next_after,
    recover_lost_claim,
    release_unhanded,
    start_run,
)
from models.works.tables import OverlapPolicy, RunKind, RunStatus, ScheduleStatus, Work, WorkRun, WorkSchedule

log = logging.getLogger("tickwork.works.dispatcher")

JOB_KIND = "dispatch-works"
_SWEEP_BATCH = 200


class Outcome:
    DISPATCHED = "dispatched"
    SKIPPED = "skipped"
    FAILED = "failed"


@dataclass
class Entry:
    """One schedule's fate in a pass."""

    schedule_id: int
    work_id: int
    outcome: str
    reason: str | None = None
    run_id: int | None = None
    scheduled_for: datetime | None = None
    overlap_policy: str | None = None

    def as_json(self) -> dict:
        return {"scheduleId": self.schedule_id, "workId": self.work_id, "outcome": self.outcome,
                "reason": self.reason, "runId": self.run_id, "overlapPolicy": self.overlap_policy,
                "scheduledFor": self.scheduled_for.strftime("%Y-%m-%dT%H:%M:%SZ") if self.scheduled_for else None}


def _announce(context: WorksContext, actions: list) -> None:
    if actions:
        context.announce(actions)


# -- 1 and 2: expiry and recovery -------------------------------------------------------------


def expire_waiting_runs(context: WorksContext, actor: Actor) -> int:
    """Fail every run whose callback did not come by its deadline; returns how many."""
    now = context.clock.now()
    with read_session(context.engine) as session:
        runs = list(session.scalars(select(WorkRun).where(WorkRun.status == RunStatus.WAITING.value,
                                                          WorkRun.deadline_at <= now)
                                    .order_by(WorkRun.deadline_at, WorkRun.id).limit(_SWEEP_BATCH)))
        session.expunge_all()
    expired = 0
    for run in runs:
        with write_session(context.engine) as session:
            ended = expire_run(session, run, now=context.clock.now(), actor=actor, context=context)
        expired += ended.recorded
        _announce(context, ended.actions)
    return expired


def recover_zombies(context: WorksContext, actor: Actor) -> int:
    """Flip works generating past the stuck timeout to error, their runs to lost; returns how many."""
    now = context.clock.now()
    cutoff = now - context.policy.work_stuck_timeout
    with read_session(context.engine) as session:
        runs = list(session.scalars(
            select(WorkRun).join(Work, Work.id == WorkRun.work_id)
            .where(Work.generation_status == "generating", Work.generation_started_at <= cutoff,
                   WorkRun.token == Work.generation_token, WorkRun.status.in_((RunStatus.RUNNING.value,
                                                                               RunStatus.WAITING.value)))
            .order_by(Work.generation_started_at, Work.id).limit(_SWEEP_BATCH)))
        session.expunge_all()
    recovered = 0
    for run in runs:
        with write_session(context.engine) as session:
            ended = lose_run(session, run, cutoff=cutoff, now=now, actor=actor, context=context)
        recovered += ended.recorded
        _announce(context, ended.actions)
    return recovered


def recover_lost_claims(context: WorksContext, actor: Actor) -> int:
    """Free active schedules whose claim is older than the stuck timeout with nothing generating."""
    now = context.clock.now()
    cutoff = now - context.policy.work_stuck_timeout
    with read_session(context.engine) as session:
        schedules = list(session.scalars(
            select(WorkSchedule).where(WorkSchedule.status == ScheduleStatus.ACTIVE.value,
                                       WorkSchedule.next_run_at.is_(None), WorkSchedule.claimed_at <= cutoff)
            .order_by(WorkSchedule.claimed_at, WorkSchedule.id).limit(_SWEEP_BATCH)))
        session.expunge_all()
    freed = 0
    for schedule in schedules:
        with write_session(context.engine) as session:
            ended = recover_lost_claim(session, schedule, cutoff=cutoff, now=now, actor=actor, context=context)
        freed += ended.recorded
        _announce(context, ended.actions)
    return freed


# -- 3: the due schedules ---------------------------------------------------------------------


def due_schedules(session, now: datetime, limit: int) -> list[tuple[int, int, datetime]]:
    """Active schedules due by ``now`` in ``(nextRunAt, id)`` order: (id, work id, nextRunAt)."""
    return [tuple(row) for row in session.execute(
        select(WorkSchedule.id, WorkSchedule.work_id, WorkSchedule.next_run_at)
        .where(WorkSchedule.status == ScheduleStatus.ACTIVE.value, WorkSchedule.next_run_at <= now)
        .order_by(WorkSchedule.next_run_at, WorkSchedule.id).limit(limit))]


def _work_locked(session, work_id: int) -> Work | None:
    query = select(Work).where(Work.id == work_id).execution_options(populate_existing=True)
    if session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update()
    return session.scalar(query)


def dispatch_schedule(schedule_id: int, work_id: int, seen: datetime, context: WorksContext, actor: Actor) -> Entry:
    """Claim one due schedule and start its run, or say why not (this module's table)."""
    entry = Entry(schedule_id, work_id, Outcome.SKIPPED, scheduled_for=seen)
    actions: list = []
    run_id = token = None
    with write_session(context.engine) as session:
        now = context.clock.now()
        work = _work_locked(session, work_id)
        schedule = session.get(WorkSchedule, schedule_id, populate_existing=True)
        entry.overlap_policy = schedule.overlap_policy
        if work is None or work.deleted_at is not None:
            if schedule.status != ScheduleStatus.CANCELED.value:
                lifecycle.cancel(session, schedule, now=now, actor=actor, reason="its work was deleted")
            entry.reason = "work_not_found"
            return entry
        workspace = session.get(Workspace, work.workspace_id)
        try:
            load_zone(workspace.timezone)
        except InvalidTimezone:
            entry.reason = "bad_zone"
            return entry
        if work.generation_status == "generating":
            if schedule.overlap_policy == OverlapPolicy.BUFFER_ONE.value:
                entry.reason = "buffered" if schedule.next_run_at == seen else "already_claimed"
                return entry  # nextRunAt stays due: the first pass after the generation ends claims it
            retry = min(now + context.policy.work_busy_retry, next_after(schedule, workspace.timezone, now))
            deferred = lifecycle.reslot(session, schedule_id, seen_next_run_at=seen, retry_at=retry, now=now)
            entry.reason = "still_generating" if deferred.ok else "already_claimed"
            return entry
        why = context.plans.refusal(workspace.plan, Cadence(schedule.cadence), schedule.billing_mode)
        if why is not None and schedule.status == ScheduleStatus.ACTIVE.value and schedule.next_run_at == seen:
            _, actions = pause_outside_plan(session, schedule, why=why, now=now, actor=actor)
            entry.reason = "cadence_not_in_plan"
        else:
            token = generation.new_token()
            claimed = lifecycle.claim(session, schedule_id, seen_next_run_at=seen, token=token, now=now)
            if not claimed.ok:
                entry.reason = "already_claimed"
                return entry
            schedule = claimed.row
            slot = slot_at_or_before(grid_of(schedule), schedule.scheduled_for, workspace.timezone)
            run = start_run(session, work, schedule, kind=RunKind.SCHEDULED, token=token,
                            slot=slot or schedule.scheduled_for, now=now, actor=actor,
                            reason=f"dispatched for {seen:%Y-%m-%d %H:%M:%S}Z")
            run_id, started = run.id, run
    _announce(context, actions)
    if run_id is None:
        return entry
    entry.outcome, entry.run_id = Outcome.DISPATCHED, run_id
    try:
        context.hand_off([run_id])
    except Exception as exc:  # the queue is down: the run fails now, uncounted, instead of waiting for recovery
        log.exception("work %s run %s could not be handed to the works queue", work_id, run_id)
        release_unhanded(context, [started], exc, actor=actor)
        entry.outcome, entry.reason = Outcome.FAILED, "hand_off_failed"
    return entry


def dispatch_pass(clock_run_id: int | None, context: WorksContext) -> dict:
    """The body of one pass (see the module docstring); returns its WorkScheduleDispatchSummary."""
    actor = Actor.job(JOB_KIND, clock_run_id)
    expired = expire_waiting_runs(context, actor)
    zombies = recover_zombies(context, actor)
    lost_claims = recover_lost_claims(context, actor)
    batch = context.policy.work_max_batch
    with read_session(context.engine) as session:
        due = due_schedules(session, context.clock.now(), batch)
    entries = []
    for schedule_id, work_id, seen in due:
        try:
            entries.append(dispatch_schedule(schedule_id, work_id, seen, context, actor))
        except Exception as exc:  # one schedule's failure is its entry's; the others still run
            log.exception("schedule %s could not be dispatched", schedule_id)
            entries.append(Entry(schedule_id, work_id, Outcome.FAILED, f"{type(exc).__name__}: {exc}"[:300],
                                 scheduled_for=seen))
    counts = {outcome: sum(1 for entry in entries if entry.outcome == outcome)
              for outcome in (Outcome.DISPATCHED, Outcome.SKIPPED, Outcome.FAILED)}
    return {
        "dueCount": len(due),
        **counts,
        "entries": [entry.as_json() for entry in entries],
        "batchFull": len(due) == batch,
        "recovered": zombies,
        "lostClaims": lost_claims,
        "expired": expired,
    }


def run_dispatcher(context: WorksContext) -> dict:
    """One dispatcher pass now, recorded as a ``dispatch-works`` clock run; returns its summary."""
    return run_recorded(JOB_KIND, lambda run_id: dispatch_pass(run_id, context), clock=context.clock,
                        engine=context.engine)
