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
and never silently does nothing. A move into an active status that the database refuses
raises :class:`~models.guard.PublishGuardViolation` (a published sibling) or
:class:`~models.guard.DuplicateActiveAction` (another active row for the same key), and
the caller's transaction stays usable (a savepoint on PostgreSQL; SQLite undoes only the
statement). :class:`Moved` carries the row as the UPDATE returned it, detached from the
session; :class:`Refused` carries the row as it was found.

``attempt_count`` counts claims: every claim adds one, revert and retry do not change it.
"""

import enum
import uuid
from datetime import datetime
from functools import lru_cache

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from models.actions.guard import classify_integrity_error
from models.actions.tables import ActionEvent, CancelKind, FailureCode, ScheduledAction, Status, due_by
from models.core.moves import Actor, Moved, Outcome, Refusal, Refused

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




_table = ScheduledAction.__table__
_c = _table.c
_RETURNING = tuple(_c)
INCREMENT = object()  # a values() marker: attempt_count + 1


def _param(name: str, column):
    return bindparam(name, type_=column.type)


# The extra conditions a move may ask for, by name; their parameters come with the call.
_GUARDS = {
    "due": lambda: due_by(_param("now", _c.publish_at)),
    "attempts_left": lambda: _c.attempt_count < bindparam("max_attempts"),
    "token": lambda: _c.claim_token == _param("held_token", _c.claim_token),
    "submitted_before": lambda: _c.submitted_at <= _param("cutoff", _c.submitted_at),
    "worker_lost": lambda: _c.failure_code == FailureCode.WORKER_LOST.value,
    "workspace": lambda: _c.workspace_id == bindparam("in_workspace"),
}


@lru_cache(maxsize=None)
def _statement(sources: tuple[str, ...], target: str, set_keys: tuple[str, ...], guards: tuple[str, ...],
               rows: str = "one"):
    """The move's UPDATE, built once per shape: every call after the first only binds values.

    ``rows`` is ``one`` (``id = :action_id``, returning the row), ``list`` (``id IN
    :action_ids``, returning every row it moved) or ``each`` (``id = :action_id`` with no
    RETURNING, for an executemany over many rows).
    """
    values = {"status": target, "updated_at": _param("now", _c.updated_at)}
    for key in set_keys:
        values[key] = _c[key] + 1 if key == "attempt_count" else _param(f"set_{key}", _c[key])
    which = _c.id.in_(bindparam("action_ids", expanding=True)) if rows == "list" else _c.id == bindparam("action_id")
    statement = (
        update(_table)
        .where(which, _c.status.in_(sources) if len(sources) > 1 else _c.status == sources[0],
               *(_GUARDS[name]() for name in guards))
        .values(values)
    )
    return statement if rows == "each" else statement.returning(*_RETURNING)


def _statement_for(sources, target: Status, values: dict, guards: dict, rows: str = "one"):
    """:func:`_statement` for a move's statuses, the values it sets and the guards it names."""
    return _statement(tuple(sorted(s.value for s in sources)), target.value, tuple(sorted(values)),
                      tuple(sorted(guards)), rows)


def _bind(values: dict, guards: dict, now: datetime) -> dict:
    """The parameters of a move's statement, bar the row id(s)."""
    params = {"now": now, **{f"set_{key}": value for key, value in values.items() if value is not INCREMENT}}
    for extra in guards.values():
        params.update(extra)
    return params


_EVENT = insert(ActionEvent.__table__)


def _as_action(session: Session, row) -> ScheduledAction:
    """The updated row as a detached ScheduledAction; a stale copy in the session is expired."""
    loaded = session.identity_map.get(session.identity_key(ScheduledAction, row.id))
    if loaded is not None:
        session.expire(loaded)
    return ScheduledAction(**row._mapping)


def _move(
    session: Session,
    move: Move,
    action_id: int,
    *,
    now: datetime,
    actor: Actor,
    values: dict,
    guards: dict | None = None,
    reason: str | None = None,
    workspace_id: int | None = None,
    max_attempts: int = MAX_ATTEMPTS,
    source: Status | None = None,
) -> Outcome:
    """Apply ``move`` to one row: ``values`` to set (INCREMENT for attempt_count), ``guards``
    naming extra conditions of :data:`_GUARDS` with their parameters."""
    sources, target = ALLOWED_MOVES[move]
    if source is not None:
        assert source in sources
        sources = frozenset({source})
    # attempt_count is only ever counted up (by a claim); the cached statement encodes that.
    assert values.get("attempt_count", INCREMENT) is INCREMENT, "attempt_count moves only by INCREMENT"
    guards = dict(guards or {})
    if workspace_id is not None:
        guards["workspace"] = {"in_workspace": workspace_id}
    statement = _statement_for(sources, target, values, guards)
    params = {"action_id": action_id, **_bind(values, guards, now)}
    if target.value in (Status.QUEUED.value, Status.SUBMITTED.value):
        row = _guarded_execute(session, statement, params)
    else:
        row = session.execute(statement, params).one_or_none()
    if row is None:
        return _diagnose(session, move, action_id, workspace_id=workspace_id, now=now, max_attempts=max_attempts)
    session.execute(_EVENT, _event(row.id, sources, target, now=now, actor=actor, reason=reason))
    return Moved(_as_action(session, row))


def _guarded_execute(session: Session, statement, params, *, many: bool = False):
    """Run a move into an active status, which the publish guard may refuse.

    On PostgreSQL a refused statement aborts the whole transaction, so it runs inside a
    savepoint; SQLite's ``RAISE(ABORT)`` undoes only the statement and needs none.
    Returns the moved row (or None), or with ``many`` every moved row.
    """
    def run():
        result = session.execute(statement, params)
        return result.all() if many else result.one_or_none()

    try:
        if session.connection().dialect.name == "postgresql":
            with session.begin_nested():
                return run()
        return run()
    except IntegrityError as exc:
        typed = classify_integrity_error(exc)
        if typed is None:
            raise
        raise typed from exc


def _event(row_id: int, sources, target: Status, *, now: datetime, actor: Actor, reason: str | None) -> dict:
    """An event row's values; ``from_status`` is left empty when the move could start from several."""
    return {
        "action_id": row_id,
        "from_status": next(iter(sources)).value if len(sources) == 1 else None,
        "to_status": target.value,
        "at": now,
        "actor": actor.label,
        "actor_user_id": actor.user_id,
        "clock_run_id": actor.clock_run_id,
        "reason": reason,
    }


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
    session.execute(_EVENT, _event(action.id, (), Status(action.status), now=now, actor=actor, reason=reason))


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
        **_claim_shape(now, max_attempts),
        max_attempts=max_attempts,
    )


def _claim_shape(now: datetime, max_attempts: int) -> dict:
    """What a claim sets (a fresh token) and the guards it runs under: due now, attempts left."""
    return dict(values=dict(attempt_count=INCREMENT, claim_token=uuid.uuid4().hex, submitted_at=now),
                guards={"due": {}, "attempts_left": {"max_attempts": max_attempts}})


def _publish_values(provider_id: str | None, now: datetime) -> dict:
    return dict(provider_id=provider_id, finished_at=now, last_error=None, failure_code=None)


def _accepted(provider_id: str | None) -> str:
    return "provider accepted" + (f" as {provider_id}" if provider_id else "")


def publish(
    session: Session, action_id: int, *, claim_token: str, provider_id: str | None, now: datetime, actor: Actor
) -> Outcome:
    """submitted → published. A lost worker's late success still lands while its token matches."""
    values = _publish_values(provider_id, now)
    reason = _accepted(provider_id)
    outcome = _move(
        session, Move.PUBLISH, action_id, now=now, actor=actor, values=values, reason=reason,
        guards={"token": {"held_token": claim_token}}, source=Status.SUBMITTED,
    )
    if outcome.ok or outcome.reason is Refusal.NOT_FOUND or outcome.status != Status.FAILED.value:
        return outcome
    # The truth wins: recovery declared this worker lost, yet its send went through.
    return _move(
        session, Move.PUBLISH, action_id, now=now, actor=actor, values=values,
        reason=reason + " after the worker was declared lost",
        guards={"token": {"held_token": claim_token}, "worker_lost": {}},
        source=Status.FAILED,
    )


def claim_many(
    session: Session, action_ids: list[int], *, now: datetime, actor: Actor, max_attempts: int = MAX_ATTEMPTS
) -> list[ScheduledAction]:
    """queued → submitted for every due row of ``action_ids`` in one statement, under one fresh token.

    The same guards as :func:`claim`; the rows it returns are the ones that flipped (a
    token names a claim, the id tells its rows apart). A row left out changed nothing:
    :func:`claim` it alone to learn why. If the publish guard refuses any row, the whole
    statement is undone and :class:`~models.guard.PublishGuardViolation` is raised.
    """
    if not action_ids:
        return []
    shape = _claim_shape(now, max_attempts)
    statement = _statement_for({Status.QUEUED}, Status.SUBMITTED, shape["values"], shape["guards"], rows="list")
    params = {"action_ids": list(action_ids), **_bind(shape["values"], shape["guards"], now)}
    rows = _guarded_execute(session, statement, params, many=True)
    if rows:
        session.execute(_EVENT, [_event(row.id, {Status.QUEUED}, Status.SUBMITTED, now=now, actor=actor, reason=None)
                                 for row in rows])
    return [_as_action(session, row) for row in rows]


def publish_many(
    session: Session, published: list[tuple[int, str, str | None]], *, now: datetime, actor: Actor
) -> None:
    """submitted → published for each ``(action_id, claim_token, provider_id)``, in one executemany.

    Only for rows this transaction claimed itself, which nobody else can have moved
    since: a row that does not move is a bug, so it raises and the transaction is undone.
    """
    if not published:
        return
    statement = _statement_for({Status.SUBMITTED}, Status.PUBLISHED, _publish_values(None, now), {"token": {}},
                               rows="each")
    result = session.execute(statement, [
        {"action_id": action_id, **_bind(_publish_values(provider_id, now), {"token": {"held_token": token}}, now)}
        for action_id, token, provider_id in published
    ])
    if result.rowcount != len(published):
        raise RuntimeError(f"publish_many moved {result.rowcount} of {len(published)} rows this transaction claimed")
    session.execute(_EVENT, [
        _event(action_id, {Status.SUBMITTED}, Status.PUBLISHED, now=now, actor=actor, reason=_accepted(provider_id))
        for action_id, _, provider_id in published
    ])


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
    guards = {}
    if claim_token is not None:
        guards["token"] = {"held_token": claim_token}
    if submitted_before is not None:
        guards["submitted_before"] = {"cutoff": submitted_before}
    return _move(
        session,
        Move.FAIL,
        action_id,
        now=now,
        actor=actor,
        values=dict(failure_code=code.value, last_error=message, finished_at=now),
        guards=guards,
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
        guards={"token": {"held_token": claim_token}},
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
        guards={"attempts_left": {"max_attempts": max_attempts}},
        reason="retried",
        workspace_id=workspace_id,
        max_attempts=max_attempts,
    )
