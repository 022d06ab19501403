"""Two lifecycles that move together: a work's generation status, and the run of each generation.

A work's generation::

    idle, generated, error ──start──▶ generating ──finish──▶ generated
                                          │  └────fail────▶ error ──late success──▶ generated
                                          └──recover (zombie)──▶ error

| move         | from                    | to         | guarded by                                   | stamps |
|--------------|-------------------------|------------|----------------------------------------------|--------|
| start        | idle, generated, error  | generating | not deleted                                  | generation_token, generation_started_at |
| finish       | generating              | generated  | the run's token                              | generation_finished_at, last_error cleared |
| fail         | generating              | error      | the run's token                              | generation_finished_at, last_error |
| recover      | generating              | error      | ``generation_started_at <= :cutoff`` (work_stuck_timeout) | last_error |
| late success | error                   | generated  | the run's token (no later generation started) | generation_finished_at, last_error cleared |

A run::

    running ──hand off──▶ waiting ──succeed / fail / expire──▶ succeeded / failed
       └──succeed / fail──▶ succeeded / failed
    running, waiting ──lose (zombie)──▶ lost ──late success──▶ succeeded

| move         | from              | to        | guarded by                           | stamps |
|--------------|-------------------|-----------|--------------------------------------|--------|
| hand off     | running           | waiting   | token                                | deadline_at |
| succeed      | running, waiting  | succeeded | token                                | finished_at |
| fail         | running, waiting  | failed    | token                                | finished_at, error |
| expire       | waiting           | failed    | token, ``deadline_at <= :now``       | finished_at, error |
| lose         | running, waiting  | lost      | token                                | finished_at, error |
| late success | lost              | succeeded | token                                | finished_at, error kept in the events |

Each move is one guarded ``UPDATE ... RETURNING``, written out below and built once, with
its ``work_events`` row (lifecycle ``generation`` or ``run``) in the caller's transaction.
A run is born ``running`` by :func:`insert_run`, beside its work's ``start``; the partial
unique index ``ux_work_runs_one_active_per_work`` holds the database to one live run per
work. "The truth wins": a run declared lost whose pipeline later reports success is
recorded ``succeeded`` and its work ``generated`` (when nothing started since), while the
schedule it came from was already settled as a failure and is not moved again.
"""

import enum
import uuid
from datetime import datetime

from sqlalchemy import and_, bindparam, insert, select, update
from sqlalchemy.orm import Session

from models.core.events import event_values
from models.core.moves import Actor, Moved, Outcome, Refusal, Refused
from models.core.types import UTCDateTime
from models.works.tables import GenerationStatus, RunKind, RunStatus, Work, WorkEvent, WorkRun

NOW = bindparam("now", type_=UTCDateTime())


class GenerationMove(str, enum.Enum):
    START = "start"
    FINISH = "finish"
    FAIL = "fail"
    RECOVER = "recover"
    LATE_SUCCESS = "late_success"


class RunMove(str, enum.Enum):
    HAND_OFF = "hand_off"
    SUCCEED = "succeed"
    FAIL = "fail"
    EXPIRE = "expire"
    LOSE = "lose"
    LATE_SUCCESS = "late_success"


G, R = GenerationStatus, RunStatus

ALLOWED_GENERATION_MOVES: dict[GenerationMove, tuple[frozenset[GenerationStatus], GenerationStatus]] = {
    GenerationMove.START: (frozenset({G.IDLE, G.GENERATED, G.ERROR}), G.GENERATING),
    GenerationMove.FINISH: (frozenset({G.GENERATING}), G.GENERATED),
    GenerationMove.FAIL: (frozenset({G.GENERATING}), G.ERROR),
    GenerationMove.RECOVER: (frozenset({G.GENERATING}), G.ERROR),
    GenerationMove.LATE_SUCCESS: (frozenset({G.ERROR}), G.GENERATED),
}

ALLOWED_RUN_MOVES: dict[RunMove, tuple[frozenset[RunStatus], RunStatus]] = {
    RunMove.HAND_OFF: (frozenset({R.RUNNING}), R.WAITING),
    RunMove.SUCCEED: (frozenset({R.RUNNING, R.WAITING}), R.SUCCEEDED),
    RunMove.FAIL: (frozenset({R.RUNNING, R.WAITING}), R.FAILED),
    RunMove.EXPIRE: (frozenset({R.WAITING}), R.FAILED),
    RunMove.LOSE: (frozenset({R.RUNNING, R.WAITING}), R.LOST),
    RunMove.LATE_SUCCESS: (frozenset({R.LOST}), R.SUCCEEDED),
}

_w, _r = Work.__table__.c, WorkRun.__table__.c


def _generation_statement(move: GenerationMove, *guards, **values):
    """``UPDATE works SET generation_status = <target>, ... WHERE id = :work_id AND generation_status IN (<sources>) AND ...``."""
    sources, target = ALLOWED_GENERATION_MOVES[move]
    return update(Work.__table__).where(
        _w.id == bindparam("work_id"), _w.generation_status.in_(sorted(s.value for s in sources)), *guards,
    ).values(generation_status=target.value, updated_at=NOW, **values).returning(_w.id, _w.generation_status)


def _run_statement(move: RunMove, *guards, **values):
    """``UPDATE work_runs SET status = <target>, ... WHERE token = :run_token AND status IN (<sources>) AND ...``."""
    sources, target = ALLOWED_RUN_MOVES[move]
    return update(WorkRun.__table__).where(
        _r.token == bindparam("run_token"), _r.status.in_(sorted(s.value for s in sources)), *guards,
    ).values(status=target.value, **values).returning(*_r)


_HELD = _w.generation_token == bindparam("token")
_ENDED = dict(generation_finished_at=NOW)

# -- the statements ---------------------------------------------------------------------------

START = _generation_statement(GenerationMove.START, _w.deleted_at.is_(None),
                              generation_token=bindparam("token"), generation_started_at=NOW,
                              generation_finished_at=None)
FINISH = _generation_statement(GenerationMove.FINISH, _HELD, last_error=None, **_ENDED)
FAIL = _generation_statement(GenerationMove.FAIL, _HELD, last_error=bindparam("error"), **_ENDED)
RECOVER = _generation_statement(GenerationMove.RECOVER, _HELD,
                                _w.generation_started_at <= bindparam("cutoff", type_=UTCDateTime()),
                                last_error=bindparam("error"), **_ENDED)
LATE_SUCCESS = _generation_statement(GenerationMove.LATE_SUCCESS, _HELD, last_error=None, **_ENDED)

HAND_OFF = _run_statement(RunMove.HAND_OFF, deadline_at=bindparam("deadline_at", type_=UTCDateTime()))
SUCCEED = _run_statement(RunMove.SUCCEED, finished_at=NOW, error=None)
FAIL_RUN = _run_statement(RunMove.FAIL, finished_at=NOW, error=bindparam("error"))
EXPIRE = _run_statement(RunMove.EXPIRE, and_(_r.deadline_at <= NOW), finished_at=NOW, error=bindparam("error"))
LOSE = _run_statement(RunMove.LOSE, finished_at=NOW, error=bindparam("error"))
LATE_SUCCEED = _run_statement(RunMove.LATE_SUCCESS, finished_at=NOW, error=None)

_GENERATION = {GenerationMove.START: START, GenerationMove.FINISH: FINISH, GenerationMove.FAIL: FAIL,
               GenerationMove.RECOVER: RECOVER, GenerationMove.LATE_SUCCESS: LATE_SUCCESS}
_RUN = {RunMove.HAND_OFF: HAND_OFF, RunMove.SUCCEED: SUCCEED, RunMove.FAIL: FAIL_RUN, RunMove.EXPIRE: EXPIRE,
        RunMove.LOSE: LOSE, RunMove.LATE_SUCCESS: LATE_SUCCEED}
_EVENT = insert(WorkEvent.__table__)


def _event(lifecycle: str, work_id: int, subject_id: int, source: str | None, target: str, *, now: datetime,
           actor: Actor, reason: str | None) -> dict:
    return event_values(source, target, now=now, actor=actor, reason=reason, work_id=work_id, lifecycle=lifecycle,
                        subject_id=subject_id)


def new_token() -> str:
    """A run's token: it names the run in the claim, the callback URL and every move after."""
    return uuid.uuid4().hex


# -- the work's generation --------------------------------------------------------------------


def _move_work(session: Session, move: GenerationMove, work: Work, *, token: str, now: datetime, actor: Actor,
               reason: str, **params) -> Outcome:
    """Run ``move`` on ``work`` (its status as seen is the event's ``from``)."""
    seen = work.generation_status
    row = session.execute(_GENERATION[move], {"work_id": work.id, "token": token, "now": now, **params}).one_or_none()
    session.expire(work)
    if row is None:
        return Refused(Refusal.WRONG_STATE, work.generation_status, work)
    _, target = ALLOWED_GENERATION_MOVES[move]
    session.execute(_EVENT, _event("generation", work.id, work.id, seen, target.value, now=now, actor=actor,
                                   reason=reason))
    return Moved(work)


def start(session: Session, work: Work, *, token: str, now: datetime, actor: Actor, reason: str) -> Outcome:
    """idle, generated or error → generating, held by the run ``token``."""
    return _move_work(session, GenerationMove.START, work, token=token, now=now, actor=actor, reason=reason)


def finish(session: Session, work: Work, *, token: str, now: datetime, actor: Actor) -> Outcome:
    """generating → generated, by the run that started it."""
    return _move_work(session, GenerationMove.FINISH, work, token=token, now=now, actor=actor, reason="generated")


def fail(session: Session, work: Work, *, token: str, error: str, now: datetime, actor: Actor) -> Outcome:
    """generating → error, by the run that started it."""
    return _move_work(session, GenerationMove.FAIL, work, token=token, now=now, actor=actor, reason=error,
                      error=error)


def recover(session: Session, work: Work, *, token: str, cutoff: datetime, error: str, now: datetime,
            actor: Actor) -> Outcome:
    """generating since before ``cutoff`` → error: a zombie whose run crashed without finishing."""
    return _move_work(session, GenerationMove.RECOVER, work, token=token, now=now, actor=actor, reason=error,
                      error=error, cutoff=cutoff)


def late_success(session: Session, work: Work, *, token: str, now: datetime, actor: Actor) -> Outcome:
    """error → generated: the run recovered as lost did succeed, and nothing started since."""
    return _move_work(session, GenerationMove.LATE_SUCCESS, work, token=token, now=now, actor=actor,
                      reason="a run declared lost reported success")


# -- runs -------------------------------------------------------------------------------------


def insert_run(session: Session, work: Work, *, token: str, kind: RunKind, schedule_id: int | None,
               slot: datetime | None, pipeline: str, providers: dict, billing_mode: str, now: datetime,
               actor: Actor) -> WorkRun:
    """A new ``running`` run and its first event (the database refuses a second live run of one work)."""
    run = WorkRun(work_id=work.id, workspace_id=work.workspace_id, schedule_id=schedule_id, kind=kind.value,
                  slot=slot, token=token, status=RunStatus.RUNNING.value, pipeline=pipeline, providers=providers,
                  billing_mode=billing_mode, started_at=now, created_by_id=actor.user_id,
                  clock_run_id=actor.clock_run_id)
    session.add(run)
    session.flush()
    session.execute(_EVENT, _event("run", work.id, run.id, None, RunStatus.RUNNING.value, now=now, actor=actor,
                                   reason=f"{kind.value} run" + (f" of the {slot:%Y-%m-%d %H:%M}Z slot" if slot else "")))
    return run


def _move_run(session: Session, move: RunMove, run: WorkRun, *, now: datetime, actor: Actor, reason: str | None,
              **params) -> Outcome:
    seen = run.status
    row = session.execute(_RUN[move], {"run_token": run.token, "now": now, **params}).one_or_none()
    if row is None:
        status = session.scalar(select(WorkRun.status).where(WorkRun.token == run.token))
        return Refused(Refusal.WRONG_STATE, status, run)
    _, target = ALLOWED_RUN_MOVES[move]
    session.execute(_EVENT, _event("run", row.work_id, row.id, seen, target.value, now=now, actor=actor,
                                   reason=reason))
    loaded = session.identity_map.get(session.identity_key(WorkRun, row.id))
    if loaded is not None:
        session.expire(loaded)
    return Moved(WorkRun(**row._mapping))


def hand_off(session: Session, run: WorkRun, *, deadline_at: datetime, now: datetime, actor: Actor) -> Outcome:
    """running → waiting: the pipeline handed the work to an outside system, which calls back by ``deadline_at``."""
    return _move_run(session, RunMove.HAND_OFF, run, now=now, actor=actor,
                     reason=f"waiting for the callback until {deadline_at:%Y-%m-%d %H:%M:%S}Z", deadline_at=deadline_at)


def succeed(session: Session, run: WorkRun, *, now: datetime, actor: Actor) -> Outcome:
    """running or waiting → succeeded."""
    return _move_run(session, RunMove.SUCCEED, run, now=now, actor=actor, reason="generated")


def fail_run(session: Session, run: WorkRun, *, error: str, now: datetime, actor: Actor) -> Outcome:
    """running or waiting → failed, with the error in words an operator understands."""
    return _move_run(session, RunMove.FAIL, run, now=now, actor=actor, reason=error, error=error)


def expire(session: Session, run: WorkRun, *, error: str, now: datetime, actor: Actor) -> Outcome:
    """waiting past its deadline → failed: no callback within the pipeline's timeout."""
    return _move_run(session, RunMove.EXPIRE, run, now=now, actor=actor, reason=error, error=error)


def lose(session: Session, run: WorkRun, *, error: str, now: datetime, actor: Actor) -> Outcome:
    """running or waiting → lost: recovered as a zombie; a late success may still come."""
    return _move_run(session, RunMove.LOSE, run, now=now, actor=actor, reason=error, error=error)


def late_succeed(session: Session, run: WorkRun, *, now: datetime, actor: Actor) -> Outcome:
    """lost → succeeded: the truth wins."""
    return _move_run(session, RunMove.LATE_SUCCESS, run, now=now, actor=actor,
                     reason="the pipeline reported success after the run was declared lost")
