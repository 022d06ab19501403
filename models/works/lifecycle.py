"""The work-schedule lifecycle. Every change of a schedule's status, and every claim, happens here.

The statuses are the second seed's ``WorkScheduleStatus``, spelled as it spells them
(``canceled``, one l). ``disabled`` is never stored: it is what a work without a schedule
row answers::

    (disabled) ──create──▶ active ◀──enable── paused, canceled
                           │  ▲                  ▲
                           │  └─claim/settle─┘   │  (status kept; nextRunAt NULL while a claim runs)
                           ├──pause────────────▶ paused   (a person, auto-pause, a plan downgrade)
                           └──cancel───────────▶ canceled (DELETE, the work deleted, work_not_found)

| move      | from                   | to        | guarded by                                                  | writes |
|-----------|------------------------|-----------|-------------------------------------------------------------|--------|
| create    | (no row)               | active or paused | the unique work_id                                   | the grid, nextRunAt (its first slot, see :func:`~models.timing.cadence.first_grid`) |
| enable    | paused, canceled       | active    | status                                                      | the grid (a paused one keeps its own), nextRunAt, failureCount = 0, claim forgotten |
| pause     | active                 | paused    | status                                                      | paused_reason |
| cancel    | active, paused         | canceled  | status                                                      | nextRunAt = NULL, claim forgotten |
| regrid    | active, paused         | (same)    | status                                                      | a new cadence and grid, nextRunAt |
| claim     | active                 | active    | ``nextRunAt = :seen AND nextRunAt <= :now`` (the seed's CAS) | scheduledFor = nextRunAt, nextRunAt = NULL, claimed_at, claim_token |
| reslot    | active                 | active    | ``nextRunAt = :seen``                                       | nextRunAt = the busy retry (work still generating), or the slot in a new zone |
| settle    | any                    | (same)    | the claim's token and the failureCount seen                 | success: next slot, failureCount = 0; failure: failureCount + 1, the retry; scheduledFor kept |
| release   | any                    | (same)    | the claim's token                                           | nextRunAt = the busy retry; nothing counted (the hand-off to the queue failed) |
| recover   | active, nextRunAt NULL | active    | ``claimed_at = :seen AND claimed_at <= :cutoff``            | as a failed settle (a claim whose task was lost) |
| manual    | any                    | (same)    | the schedule                                                | lastRun*; a failure adds one to failureCount (FR-9), a success changes neither it nor nextRunAt (FR-10) |

Each is one guarded ``UPDATE work_schedules ... WHERE id = :schedule_id AND ... RETURNING``,
written out below and built once at import; a move of status also writes its
``work_events`` row (lifecycle ``schedule``) in the caller's transaction. A claim writes no
event: the run row it starts, in the same transaction, is its record. Zero rows updated is
a :class:`~models.core.moves.Refused` (someone else got there first), never an exception.
"""

import enum
from datetime import datetime

from sqlalchemy import DateTime, bindparam, insert, select, update
from sqlalchemy.orm import Session

from models.core.events import event_values
from models.core.moves import Actor, Moved, Outcome, Refusal, Refused
from models.core.types import UTCDateTime
from models.works.tables import ScheduleStatus, WorkEvent, WorkSchedule

_t = WorkSchedule.__table__
_c = _t.c
NOW = bindparam("now", type_=UTCDateTime())
SEEN_NEXT = bindparam("seen_next_run_at", type_=UTCDateTime())


class ScheduleMove(str, enum.Enum):
    """The ways a schedule's status may change (claims, settles and regrids keep it)."""

    ENABLE = "enable"
    PAUSE = "pause"
    CANCEL = "cancel"


ACTIVE, PAUSED, CANCELED = ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED, ScheduleStatus.CANCELED

ALLOWED_SCHEDULE_MOVES: dict[ScheduleMove, tuple[frozenset[ScheduleStatus], ScheduleStatus]] = {
    ScheduleMove.ENABLE: (frozenset({PAUSED, CANCELED}), ACTIVE),
    ScheduleMove.PAUSE: (frozenset({ACTIVE}), PAUSED),
    ScheduleMove.CANCEL: (frozenset({ACTIVE, PAUSED}), CANCELED),
}

_ID = _c.id == bindparam("schedule_id")
_GRID = dict(cadence=bindparam("cadence"), anchor_at=bindparam("anchor_at", type_=UTCDateTime()),
             anchor_local=bindparam("anchor_local", type_=DateTime()), next_run_at=bindparam("next_run_at", type_=UTCDateTime()))
# scheduledFor stays: it is the last slot claimed (the seed lists it among the schedule's fields).
_FORGET_CLAIM = dict(claim_token=None)


def _move_statement(move: ScheduleMove, **values):
    """``UPDATE work_schedules SET status = <target>, ... WHERE id = :schedule_id AND status = :seen_status``."""
    _, target = ALLOWED_SCHEDULE_MOVES[move]
    return update(_t).where(_ID, _c.status == bindparam("seen_status")).values(
        status=target.value, updated_at=NOW, **values).returning(*_c)


# -- the statements ---------------------------------------------------------------------------

ENABLE = _move_statement(ScheduleMove.ENABLE, failure_count=0, paused_reason=None, **_GRID, **_FORGET_CLAIM)
PAUSE = _move_statement(ScheduleMove.PAUSE, paused_reason=bindparam("why"))
CANCEL = _move_statement(ScheduleMove.CANCEL, next_run_at=None, paused_reason=None, **_FORGET_CLAIM)

REGRID = update(_t).where(_ID, _c.status == bindparam("seen_status")).values(
    updated_at=NOW, **_GRID).returning(*_c)

# The seed's claim (FR-4, FR-5): the first updater wins; nextRunAt = :seen refuses a claim
# that raced an edit which moved the slot.
CLAIM = update(_t).where(
    _ID, _c.status == ACTIVE.value, _c.next_run_at == SEEN_NEXT, _c.next_run_at <= NOW,
).values(scheduled_for=_c.next_run_at, next_run_at=None, claimed_at=NOW,
         claim_token=bindparam("token")).returning(*_c)

RESLOT = update(_t).where(_ID, _c.status == ACTIVE.value, _c.next_run_at == SEEN_NEXT).values(
    next_run_at=bindparam("retry_at", type_=UTCDateTime()), updated_at=NOW).returning(*_c)

_SETTLED = dict(next_run_at=bindparam("next_run_at", type_=UTCDateTime()),
                failure_count=bindparam("new_failure_count"), last_run_at=NOW,
                last_run_status=bindparam("run_status"), updated_at=NOW, **_FORGET_CLAIM)

SETTLE = update(_t).where(
    _ID, _c.claim_token == bindparam("token"), _c.failure_count == bindparam("seen_failure_count"),
).values(**_SETTLED).returning(*_c)

RECOVER_CLAIM = update(_t).where(
    _ID, _c.status == ACTIVE.value, _c.next_run_at.is_(None),
    _c.claimed_at == bindparam("seen_claimed_at", type_=UTCDateTime()),
    _c.claimed_at <= bindparam("cutoff", type_=UTCDateTime()),
    _c.failure_count == bindparam("seen_failure_count"),
).values(**_SETTLED).returning(*_c)

# A claim whose run never reached the works queue: released, nothing counted (the hand-off failed, not a generation).
RELEASE_CLAIM = update(_t).where(_ID, _c.claim_token == bindparam("token")).values(
    next_run_at=bindparam("next_run_at", type_=UTCDateTime()), updated_at=NOW, **_FORGET_CLAIM).returning(*_c)

MANUAL_SUCCEEDED = update(_t).where(_ID).values(
    last_run_at=NOW, last_run_status=bindparam("run_status"), updated_at=NOW).returning(*_c)
MANUAL_FAILED = update(_t).where(_ID, _c.failure_count == bindparam("seen_failure_count")).values(
    failure_count=_c.failure_count + 1, last_run_at=NOW, last_run_status=bindparam("run_status"),
    updated_at=NOW).returning(*_c)

_STATEMENTS = {ScheduleMove.ENABLE: ENABLE, ScheduleMove.PAUSE: PAUSE, ScheduleMove.CANCEL: CANCEL}
_EVENT = insert(WorkEvent.__table__)
_LOOK = select(WorkSchedule).where(_ID).execution_options(populate_existing=True)


# -- how a move runs --------------------------------------------------------------------------


def as_schedule(session: Session, row) -> WorkSchedule:
    """The updated row as a detached WorkSchedule; a stale copy in the session is expired."""
    loaded = session.identity_map.get(session.identity_key(WorkSchedule, row.id))
    if loaded is not None:
        session.expire(loaded)
    return WorkSchedule(**row._mapping)


def schedule_event(schedule_id: int, work_id: int, source: str | None, target: str, *, now: datetime,
                   actor: Actor, reason: str | None) -> dict:
    return event_values(source, target, now=now, actor=actor, reason=reason, work_id=work_id, lifecycle="schedule",
                        subject_id=schedule_id)


def _refused(session: Session, schedule_id: int, otherwise: Refusal = Refusal.WRONG_STATE) -> Refused:
    """Why a guarded UPDATE moved nothing, read from the schedule as it is now."""
    row = session.scalars(_LOOK, {"schedule_id": schedule_id}).one_or_none()
    if row is None:
        return Refused(Refusal.NOT_FOUND)
    return Refused(otherwise, row.status, row)


def _move(session: Session, move: ScheduleMove, schedule: WorkSchedule, *, now: datetime, actor: Actor,
          reason: str, **params) -> Outcome:
    """Run ``move`` from the status ``schedule`` was seen in; its event, or why it changed nothing."""
    sources, target = ALLOWED_SCHEDULE_MOVES[move]
    seen = schedule.status
    if seen not in {status.value for status in sources}:
        return Refused(Refusal.WRONG_STATE, seen, schedule)
    row = session.execute(_STATEMENTS[move], {"schedule_id": schedule.id, "seen_status": seen, "now": now,
                                              **params}).one_or_none()
    if row is None:
        return _refused(session, schedule.id)
    session.execute(_EVENT, schedule_event(row.id, row.work_id, seen, target.value, now=now, actor=actor,
                                           reason=reason))
    return Moved(as_schedule(session, row))


def _grid_params(grid, next_run_at: datetime) -> dict:
    return {"cadence": grid.cadence.value, "anchor_at": grid.anchor_at, "anchor_local": grid.anchor_local,
            "next_run_at": next_run_at}


def _changed(session: Session, statement, params: dict, schedule_id: int,
             otherwise: Refusal = Refusal.WRONG_STATE) -> Outcome:
    row = session.execute(statement, params).one_or_none()
    if row is None:
        return _refused(session, schedule_id, otherwise)
    return Moved(as_schedule(session, row))


# -- the moves --------------------------------------------------------------------------------


def record_creation(session: Session, schedule: WorkSchedule, *, now: datetime, actor: Actor) -> None:
    """Write the first event of a freshly inserted schedule ((disabled) → active or paused)."""
    session.execute(_EVENT, schedule_event(schedule.id, schedule.work_id, ScheduleStatus.DISABLED.value,
                                           schedule.status, now=now, actor=actor, reason="created"))


def enable(session: Session, schedule: WorkSchedule, *, grid, next_run_at: datetime, now: datetime,
           actor: Actor) -> Outcome:
    """paused or canceled → active, on ``grid`` (a paused schedule's own) at ``next_run_at``; failureCount back to 0."""
    return _move(session, ScheduleMove.ENABLE, schedule, now=now, actor=actor, reason="enabled",
                 **_grid_params(grid, next_run_at))


def pause(session: Session, schedule: WorkSchedule, *, now: datetime, actor: Actor, reason: str) -> Outcome:
    """active → paused: kept, not run, until enabled again."""
    return _move(session, ScheduleMove.PAUSE, schedule, now=now, actor=actor, reason=reason, why=reason)


def cancel(session: Session, schedule: WorkSchedule, *, now: datetime, actor: Actor, reason: str) -> Outcome:
    """active or paused → canceled: kept with its runs; a later enable re-activates it."""
    return _move(session, ScheduleMove.CANCEL, schedule, now=now, actor=actor, reason=reason)


def regrid(session: Session, schedule: WorkSchedule, *, grid, next_run_at: datetime | None,
           now: datetime) -> Outcome:
    """A new cadence on an active or paused schedule: a new grid, and nextRunAt read off it."""
    return _changed(session, REGRID, {"schedule_id": schedule.id, "seen_status": schedule.status, "now": now,
                                      **_grid_params(grid, next_run_at)}, schedule.id)


def claim(session: Session, schedule_id: int, *, seen_next_run_at: datetime, token: str, now: datetime) -> Outcome:
    """The seed's CAS: active, nextRunAt still the one seen and due → scheduledFor = nextRunAt, nextRunAt = NULL.

    A claim that updates nothing is ``Refused``: another dispatcher won, or an edit moved
    the slot, paused or canceled the schedule meanwhile.
    """
    params = {"schedule_id": schedule_id, "seen_next_run_at": seen_next_run_at, "token": token, "now": now}
    return _changed(session, CLAIM, params, schedule_id, otherwise=Refusal.CLAIM_LOST)


def reslot(session: Session, schedule_id: int, *, seen_next_run_at: datetime, retry_at: datetime,
           now: datetime) -> Outcome:
    """Move nextRunAt without claiming (a busy work's retry, a zone change), unless a claim or an edit came first."""
    params = {"schedule_id": schedule_id, "seen_next_run_at": seen_next_run_at, "retry_at": retry_at, "now": now}
    return _changed(session, RESLOT, params, schedule_id, otherwise=Refusal.CLAIM_LOST)


def settle(session: Session, schedule: WorkSchedule, *, token: str, failure_count: int, next_run_at: datetime,
           run_status: str, now: datetime) -> Outcome:
    """After the claimed run ended: the next nextRunAt and failureCount, if the claim is still this run's."""
    params = {"schedule_id": schedule.id, "token": token, "seen_failure_count": schedule.failure_count,
              "new_failure_count": failure_count, "next_run_at": next_run_at, "run_status": run_status, "now": now}
    return _changed(session, SETTLE, params, schedule.id, otherwise=Refusal.CLAIM_LOST)


def release_claim(session: Session, schedule: WorkSchedule, *, token: str, next_run_at: datetime,
                  now: datetime) -> Outcome:
    """The claim's run could not be handed to the works queue: nextRunAt again, failureCount untouched."""
    params = {"schedule_id": schedule.id, "token": token, "next_run_at": next_run_at, "now": now}
    return _changed(session, RELEASE_CLAIM, params, schedule.id, otherwise=Refusal.CLAIM_LOST)


def recover_claim(session: Session, schedule: WorkSchedule, *, cutoff: datetime, failure_count: int,
                  next_run_at: datetime, now: datetime) -> Outcome:
    """A claim older than the stuck timeout with no generation behind it: settled as a failure."""
    params = {"schedule_id": schedule.id, "seen_claimed_at": schedule.claimed_at, "cutoff": cutoff,
              "seen_failure_count": schedule.failure_count, "new_failure_count": failure_count,
              "next_run_at": next_run_at, "run_status": "error", "now": now}
    return _changed(session, RECOVER_CLAIM, params, schedule.id, otherwise=Refusal.CLAIM_LOST)


def record_manual_run(session: Session, schedule: WorkSchedule, *, succeeded: bool, now: datetime) -> Outcome:
    """A manual run ended: lastRun* follow it; a failure counts toward failureCount (FR-9), a success
    neither resets it nor moves nextRunAt (FR-10: only a successful scheduled run resets it)."""
    statement = MANUAL_SUCCEEDED if succeeded else MANUAL_FAILED
    return _changed(session, statement, {"schedule_id": schedule.id, "now": now,
                                         "seen_failure_count": schedule.failure_count,
                                         "run_status": "generated" if succeeded else "error"}, schedule.id)
