"""The scheduled-action lifecycle. Every status change of a row happens here, and only here.

::

    queued ──claim──▶ submitted ──publish──▶ published
      │  ▲               │  │
      │  └────revert─────┘  └──fail──▶ failed ◀──miss── queued
      │                                  │
      │                                  └──retry──▶ queued
      └──cancel──▶ cancelled

| move    | from                    | to         | guarded by                                           | stamps                                  |
|---------|-------------------------|------------|------------------------------------------------------|-----------------------------------------|
| claim   | queued                  | submitted  | due now, attempts left                               | attempt_count + 1, claim_token, submitted_at |
| publish | submitted (or failed as worker_lost, same token) | published | claim token        | provider_id, finished_at                |
| fail    | submitted               | failed     | claim token (or the recovery cut-off)                | failure_code, last_error, finished_at   |
| revert  | submitted               | queued     | claim token; only when the provider was never reached | next_attempt_at, last_error            |
| miss    | queued                  | failed     | —                                                    | failure_code (missed_window, duplicate_of_published, attempts_exhausted), finished_at |
| cancel  | queued                  | cancelled  | —                                                    | cancel_kind, finished_at                |
| retry   | failed                  | queued     | attempts left                                        | next_attempt_at = now; clears last_error |

Each move is one guarded ``UPDATE ... WHERE id = :id AND status IN (...) RETURNING`` plus
its event row, in the caller's transaction. Zero rows updated means someone else got
there first, and the move returns :class:`Refused` saying why; it never raises for that
and never silently does nothing. A write the publish guard refuses raises
:class:`~models.guard.PublishGuardViolation`, inside a savepoint so the caller's
transaction stays usable.

``attempt_count`` counts claims: every claim adds one, revert and retry do not change it.
"""

import enum
import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from models.actions import ActionEvent, CancelKind, FailureCode, ScheduledAction, Status
from models.guard import PublishGuardViolation, classify_integrity_error

MAX_ATTEMPTS = 5


class Move(str, enum.Enum):
    """The seven ways a row's status may change."""

    CLAIM = "claim"
    PUBLISH = "publish"
    FAIL = "fail"
    REVERT = "revert"
    MISS = "miss"
    CANCEL = "cancel"
    RETRY = "retry"


ALLOWED_MOVES: dict[Move, tuple[frozenset[Status], Status]] = {
    Move.CLAIM: (frozenset({Status.QUEUED}), Status.SUBMITTED),
    Move.PUBLISH: (frozenset({Status.SUBMITTED, Status.FAILED}), Status.PUBLISHED),
    Move.FAIL: (frozenset({Status.SUBMITTED}), Status.FAILED),
    Move.REVERT: (frozenset({Status.SUBMITTED}), Status.QUEUED),
    Move.MISS: (frozenset({Status.QUEUED}), Status.FAILED),
    Move.CANCEL: (frozenset({Status.QUEUED}), Status.CANCELLED),
    Move.RETRY: (frozenset({Status.FAILED}), Status.QUEUED),
}


class Refusal(str, enum.Enum):
    """Why a move changed nothing."""

    NOT_FOUND = "not_found"  # no such row (in this workspace)
    WRONG_STATE = "wrong_state"  # the row is not in a status the move starts from
    ATTEMPTS_EXHAUSTED = "attempts_exhausted"  # the attempt budget is spent
    NOT_DUE = "not_due"  # a claim before publish_at or next_attempt_at
    CLAIM_LOST = "claim_lost"  # the claim token no longer matches: another claim owns the row


@dataclass(frozen=True)
class Actor:
    """Who or what made a move, as recorded on its event."""

    label: str
    user_id: int | None = None
    clock_run_id: int | None = None

    @classmethod
    def person(cls, user) -> "Actor":
        return cls(label=f"user:{user.email}", user_id=user.id)

    @classmethod
    def job(cls, kind: str, clock_run_id: int | None = None) -> "Actor":
        return cls(label=f"job:{kind}", clock_run_id=clock_run_id)


@dataclass(frozen=True)
class Moved:
    """The move happened; ``action`` is the row as it is now."""

    action: ScheduledAction
    ok = True


@dataclass(frozen=True)
class Refused:
    """The move changed nothing; ``status`` is the row's current status, if it exists."""

    reason: Refusal
    status: str | None = None
    action: ScheduledAction | None = None
    ok = False


Outcome = Moved | Refused


def _move(
    session: Session,
    move: Move,
    action_id: int,
    *,
    now: datetime,
    actor: Actor,
    values: dict,
    where: tuple = (),
    reason: str | None = None,
    workspace_id: int | None = None,
    max_attempts: int = MAX_ATTEMPTS,
    source: Status | None = None,
) -> Outcome:
    sources, target = ALLOWED_MOVES[move]
    if source is not None:
        assert source in sources
        sources = frozenset({source})
    conditions = [
        ScheduledAction.id == action_id,
        ScheduledAction.status.in_([s.value for s in sources]),
        *where,
    ]
    if workspace_id is not None:
        conditions.append(ScheduledAction.workspace_id == workspace_id)
    statement = (
        update(ScheduledAction)
        .where(*conditions)
        .values(status=target.value, updated_at=now, **values)
        .returning(ScheduledAction)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    if target.value in (Status.QUEUED.value, Status.SUBMITTED.value):
        # Only a move into an active status can trip the publish guard.
        try:
            with session.begin_nested():
                row = session.scalars(statement).one_or_none()
        except IntegrityError as exc:
            typed = classify_integrity_error(exc)
            if isinstance(typed, PublishGuardViolation):
                raise typed from exc
            raise
    else:
        row = session.scalars(statement).one_or_none()
    if row is None:
        return _diagnose(session, move, action_id, workspace_id=workspace_id, now=now, max_attempts=max_attempts)
    session.execute(
        insert(ActionEvent).values(
            action_id=row.id,
            from_status=next(iter(sources)).value if len(sources) == 1 else None,
            to_status=target.value,
            at=now,
            actor=actor.label,
            actor_user_id=actor.user_id,
            clock_run_id=actor.clock_run_id,
            reason=reason,
        )
    )
    return Moved(row)


def _diagnose(session, move, action_id, *, workspace_id, now, max_attempts) -> Refused:
    query = select(ScheduledAction).where(ScheduledAction.id == action_id)
    if workspace_id is not None:
        query = query.where(ScheduledAction.workspace_id == workspace_id)
    row = session.scalars(query.execution_options(populate_existing=True)).one_or_none()
    if row is None:
        return Refused(Refusal.NOT_FOUND)
    sources, _ = ALLOWED_MOVES[move]
    if row.status not in {s.value for s in sources}:
        return Refused(Refusal.WRONG_STATE, row.status, row)
    if move in (Move.CLAIM, Move.RETRY) and row.attempt_count >= max_attempts:
        return Refused(Refusal.ATTEMPTS_EXHAUSTED, row.status, row)
    if move is Move.CLAIM:
        return Refused(Refusal.NOT_DUE, row.status, row)
    if move in (Move.PUBLISH, Move.FAIL, Move.REVERT):
        return Refused(Refusal.CLAIM_LOST, row.status, row)
    return Refused(Refusal.WRONG_STATE, row.status, row)


def record_creation(session: Session, action: ScheduledAction, *, now: datetime, actor: Actor, reason: str | None = None):
    """Write the first event of a freshly inserted row (nothing → queued)."""
    session.execute(
        insert(ActionEvent).values(
            action_id=action.id,
            from_status=None,
            to_status=action.status,
            at=now,
            actor=actor.label,
            actor_user_id=actor.user_id,
            clock_run_id=actor.clock_run_id,
            reason=reason,
        )
    )


# -- the moves ---------------------------------------------------------------------------


def claim(
    session: Session, action_id: int, *, now: datetime, actor: Actor, max_attempts: int = MAX_ATTEMPTS
) -> Outcome:
    """queued → submitted: the one worker whose claim flips the row may hand it to a provider."""
    return _move(
        session,
        Move.CLAIM,
        action_id,
        now=now,
        actor=actor,
        values=dict(
            attempt_count=ScheduledAction.attempt_count + 1,
            claim_token=uuid.uuid4().hex,
            submitted_at=now,
        ),
        where=(
            ScheduledAction.publish_at <= now,
            or_(ScheduledAction.next_attempt_at.is_(None), ScheduledAction.next_attempt_at <= now),
            ScheduledAction.attempt_count < max_attempts,
        ),
        max_attempts=max_attempts,
    )


def publish(
    session: Session, action_id: int, *, claim_token: str, provider_id: str | None, now: datetime, actor: Actor
) -> Outcome:
    """submitted → published. A lost worker's late success still lands while its token matches."""
    values = dict(provider_id=provider_id, finished_at=now, last_error=None, failure_code=None)
    reason = "provider accepted" + (f" as {provider_id}" if provider_id else "")
    outcome = _move(
        session, Move.PUBLISH, action_id, now=now, actor=actor, values=values, reason=reason,
        where=(ScheduledAction.claim_token == claim_token,), source=Status.SUBMITTED,
    )
    if outcome.ok or outcome.reason is Refusal.NOT_FOUND or outcome.status != Status.FAILED.value:
        return outcome
    # The truth wins: recovery declared this worker lost, yet its send went through.
    return _move(
        session, Move.PUBLISH, action_id, now=now, actor=actor, values=values,
        reason=reason + " after the worker was declared lost",
        where=(
            ScheduledAction.claim_token == claim_token,
            ScheduledAction.failure_code == FailureCode.WORKER_LOST.value,
        ),
        source=Status.FAILED,
    )


def fail(
    session: Session,
    action_id: int,
    *,
    code: FailureCode,
    message: str,
    now: datetime,
    actor: Actor,
    claim_token: str | None = None,
    submitted_before: datetime | None = None,
) -> Outcome:
    """submitted → failed, by the claiming worker (its token) or by dead-worker recovery (a cut-off)."""
    if claim_token is None and submitted_before is None:
        raise ValueError("fail needs the claim token, or the recovery cut-off")
    where = []
    if claim_token is not None:
        where.append(ScheduledAction.claim_token == claim_token)
    if submitted_before is not None:
        where.append(ScheduledAction.submitted_at <= submitted_before)
    return _move(
        session,
        Move.FAIL,
        action_id,
        now=now,
        actor=actor,
        values=dict(failure_code=code.value, last_error=message, finished_at=now),
        where=tuple(where),
        reason=message,
    )


def revert(
    session: Session, action_id: int, *, claim_token: str, next_attempt_at: datetime, message: str, now: datetime, actor: Actor
) -> Outcome:
    """submitted → queued, only when the provider was never reached; the attempt stays counted."""
    return _move(
        session,
        Move.REVERT,
        action_id,
        now=now,
        actor=actor,
        values=dict(next_attempt_at=next_attempt_at, last_error=message, claim_token=None, submitted_at=None),
        where=(ScheduledAction.claim_token == claim_token,),
        reason=f"{message}; next attempt at {next_attempt_at.isoformat()}",
    )


def miss(session: Session, action_id: int, *, code: FailureCode, message: str, now: datetime, actor: Actor) -> Outcome:
    """queued → failed without a send: missed its window, a legacy duplicate, or attempts exhausted."""
    if code not in (FailureCode.MISSED_WINDOW, FailureCode.DUPLICATE_OF_PUBLISHED, FailureCode.ATTEMPTS_EXHAUSTED):
        raise ValueError(f"miss does not record {code.value}")
    return _move(
        session,
        Move.MISS,
        action_id,
        now=now,
        actor=actor,
        values=dict(failure_code=code.value, last_error=message, finished_at=now),
        reason=message,
    )


def cancel(
    session: Session,
    action_id: int,
    *,
    kind: CancelKind,
    now: datetime,
    actor: Actor,
    reason: str | None = None,
    workspace_id: int | None = None,
) -> Outcome:
    """queued → cancelled, recording who cancelled it and why."""
    return _move(
        session,
        Move.CANCEL,
        action_id,
        now=now,
        actor=actor,
        values=dict(cancel_kind=kind.value, finished_at=now),
        reason=reason or f"cancelled ({kind.value})",
        workspace_id=workspace_id,
    )


def retry(
    session: Session,
    action_id: int,
    *,
    now: datetime,
    actor: Actor,
    workspace_id: int | None = None,
    max_attempts: int = MAX_ATTEMPTS,
) -> Outcome:
    """failed → queued, due now, while attempts are left. The old error stays in the events."""
    return _move(
        session,
        Move.RETRY,
        action_id,
        now=now,
        actor=actor,
        values=dict(
            last_error=None, failure_code=None, next_attempt_at=now, finished_at=None, claim_token=None, submitted_at=None
        ),
        where=(ScheduledAction.attempt_count < max_attempts,),
        reason="retried",
        workspace_id=workspace_id,
        max_attempts=max_attempts,
    )
