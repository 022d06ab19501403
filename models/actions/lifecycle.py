"""The scheduled-action lifecycle. Every status change of a row happens here, and only here.

::

      ┌─────────────────deliver──────────────────┐  (a local provider: claim and publish at once)
    ┌─hold─┐                                     ▼
    queued ──claim──▶ submitted ──publish──▶ published
      │  ▲               │  │
      │  └────revert─────┘  └──fail──▶ failed ◀──miss, strand── queued
      │                                  │  ▲
      │                                  │  └──doubt── queued, submitted (after a restore)
      │                                  └──retry──▶ queued
      └──cancel──▶ cancelled             ┌─ask─┐
                                         submitted (its provider is being asked what became of the send)

| move    | from                    | to         | guarded by                                           | stamps                                  |
|---------|-------------------------|------------|------------------------------------------------------|-----------------------------------------|
| claim   | queued                  | submitted  | due now, attempts left                               | attempt_count + 1, claim_token, submitted_at |
| publish | submitted (or failed as worker_lost, same token) | published | claim token        | provider_id, finished_at                |
| deliver | queued                  | published  | due now, attempts left, no published sibling         | what claim and publish stamp, in one UPDATE; both their events |
| fail    | submitted               | failed     | claim token (or the recovery cut-off)                | failure_code, last_error, finished_at   |
| revert  | submitted               | queued     | claim token; only when the provider was never reached | next_attempt_at, last_error            |
| miss    | queued                  | failed     | —                                                    | failure_code (missed_window, duplicate_of_published, attempts_exhausted, content_error), finished_at |
| strand  | queued                  | failed     | due now, its channel needs reconnecting (read in the same UPDATE) | failure_code reconnect_needed, last_error, finished_at; not an attempt, no claim |
| cancel  | queued                  | cancelled  | the workspace                                        | cancel_kind, finished_at                |
| retry   | failed                  | queued     | the workspace, attempts left                         | next_attempt_at = now; clears last_error |
| hold    | queued                  | queued     | due now                                              | next_attempt_at = when the channel has room; the lateness carried (``action_holds``); not an attempt |
| doubt   | queued (due by now), submitted | failed | a restore from a backup, before anything runs on it | failure_code outcome_unknown, last_error, finished_at |
| ask     | submitted               | submitted  | claim token                                          | last_error: what is unknown and what asking the provider found (models.clock.settling); not an attempt |

``doubt`` is the restore's move: a row still active in a backup may have gone out after the
backup was taken, by the life that is being rolled back, so it is failed as "outcome
unknown" for an operator to decide rather than sent a second time. Rows not yet due at the
restore could not have gone out, and stay queued.

Each move is one guarded ``UPDATE ... WHERE id = :action_id AND status = ... RETURNING``,
written out below where a reader can see it and built once at import (every call only
binds values), plus its event row, in the caller's transaction. Zero rows updated means
someone else got there first, and the move returns :class:`~models.core.moves.Refused`
saying why; it never raises for that and never silently does nothing. A move into an
active status that the database refuses raises
:class:`~models.actions.guard.PublishGuardViolation` (a published sibling) or
:class:`~models.actions.guard.DuplicateActiveAction` (another active row for the same key),
and the caller's transaction stays usable (a savepoint on PostgreSQL; SQLite undoes only
the statement). :class:`~models.core.moves.Moved` carries the row as the UPDATE returned
it, detached from the session; ``Refused`` carries the row as it was found.

``strand`` is the dispatch's move for a row due on a channel whose connected account needs
reconnecting (``channels.reconnect_needed_since``): failed for good with a message saying so,
never claimed, never handed to a provider, never "outcome unknown". Its UPDATE reads the
channel's state itself, so a channel reconnected a moment ago strands nothing.

``deliver`` is the dispatch's move for a row whose provider is local (``log``): its delivery is
written in the same transaction, before the UPDATE, so no request is ever in flight and the
row never needs to be seen submitted. It is a claim and a publish in one statement: the same
guards as ``claim`` (and the publish guard's own test, which the database's trigger does not
make for a row written published), the same stamps as both, and both their events, so the
row's history reads as any other published row's.

``attempt_count`` counts claims: every claim adds one; revert, retry, hold and strand do not change it.
A hold is the one move that keeps the status: a row its channel's limit holds back stays
queued, due again when the channel has room, and its lateness is measured without the wait.
The attempt budget comes from the policy (``Policy.max_attempts``); callers pass theirs.
"""

import enum
import uuid
from datetime import datetime

import json

from sqlalchemy import (JSON, BigInteger, Integer, String, Text, and_, bindparam, case, cast, column, delete, func, insert,
                        literal, null, or_, select, true, update)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from models.actions.archived_keys import ArchivedKey
from models.actions.guard import classify_integrity_error
from models.actions.tables import ActionEvent, ActionHold, CancelKind, FailureCode, ScheduledAction, Status, due_by
from models.channels.tables import Channel
from models.core.events import event_values
from models.core.ids import ids_in
from models.core.moves import Actor, Moved, Outcome, Refusal, Refused
from models.core.policy import DEFAULT_POLICY
from models.core.types import UTCDateTime

DEFAULT_BUDGET = DEFAULT_POLICY.max_attempts

_t = ScheduledAction.__table__
_c = _t.c
NOW = bindparam("now", type_=UTCDateTime())


class Move(str, enum.Enum):
    """The twelve ways a row may move: ten change its status, ``hold`` keeps it queued for later and ``ask``
    keeps it submitted while its provider is asked whether the send landed."""

    CLAIM = "claim"
    PUBLISH = "publish"
    DELIVER = "deliver"
    FAIL = "fail"
    REVERT = "revert"
    MISS = "miss"
    CANCEL = "cancel"
    RETRY = "retry"
    HOLD = "hold"
    DOUBT = "doubt"
    ASK = "ask"
    STRAND = "strand"


# The table above, as data: each statement below takes its source and target from here.
ALLOWED_MOVES: dict[Move, tuple[frozenset[Status], Status]] = {
    Move.CLAIM: (frozenset({Status.QUEUED}), Status.SUBMITTED),
    Move.PUBLISH: (frozenset({Status.SUBMITTED, Status.FAILED}), Status.PUBLISHED),
    Move.DELIVER: (frozenset({Status.QUEUED}), Status.PUBLISHED),
    Move.FAIL: (frozenset({Status.SUBMITTED}), Status.FAILED),
    Move.REVERT: (frozenset({Status.SUBMITTED}), Status.QUEUED),
    Move.MISS: (frozenset({Status.QUEUED}), Status.FAILED),
    Move.CANCEL: (frozenset({Status.QUEUED}), Status.CANCELLED),
    Move.RETRY: (frozenset({Status.FAILED}), Status.QUEUED),
    Move.HOLD: (frozenset({Status.QUEUED}), Status.QUEUED),
    Move.DOUBT: (frozenset({Status.QUEUED, Status.SUBMITTED}), Status.FAILED),
    Move.ASK: (frozenset({Status.SUBMITTED}), Status.SUBMITTED),
    Move.STRAND: (frozenset({Status.QUEUED}), Status.FAILED),
}


def _statement(move: Move, source: Status, *guards, which=None, **values):
    """``UPDATE scheduled_actions SET status = <target>, ... WHERE id = :action_id AND status = <source> AND ...``.

    Source and target come from :data:`ALLOWED_MOVES`; a statement the table does not
    allow is refused when this module is imported.
    """
    sources, target = ALLOWED_MOVES[move]
    if source not in sources:
        raise ValueError(f"{move.value} does not start from {source.value}")
    which = _c.id == bindparam("action_id") if which is None else which
    return update(_t).where(which, _c.status == source.value, *guards).values(
        status=target.value, updated_at=NOW, **values)


_TOKEN = _c.claim_token == bindparam("held_token")
_WORKSPACE = _c.workspace_id == bindparam("in_workspace")
_ATTEMPTS_LEFT = _c.attempt_count < bindparam("max_attempts")
_CLAIMED = dict(attempt_count=_c.attempt_count + 1, claim_token=bindparam("new_token"), submitted_at=NOW)
_PUBLISHED = dict(provider_id=bindparam("given_provider_id"), finished_at=NOW, last_error=None, failure_code=None)
_FAILED = dict(failure_code=bindparam("given_failure_code"), last_error=bindparam("message"), finished_at=NOW)

# -- the statements, one per move ----------------------------------------------------------

CLAIM = _statement(Move.CLAIM, Status.QUEUED, due_by(NOW), _ATTEMPTS_LEFT, **_CLAIMED).returning(*_c)

CLAIM_MANY = _statement(Move.CLAIM, Status.QUEUED, due_by(NOW), _ATTEMPTS_LEFT,
                        which=_c.id.in_(bindparam("action_ids", expanding=True)), **_CLAIMED).returning(*_c)

PUBLISH = _statement(Move.PUBLISH, Status.SUBMITTED, _TOKEN, **_PUBLISHED).returning(*_c)

# The truth wins: recovery declared the worker lost, yet its send went through.
PUBLISH_AFTER_WORKER_LOST = _statement(Move.PUBLISH, Status.FAILED, _TOKEN,
                                       _c.failure_code == FailureCode.WORKER_LOST.value, **_PUBLISHED).returning(*_c)

# For a chunk this transaction claimed itself: an executemany, so no RETURNING.
PUBLISH_EACH = _statement(Move.PUBLISH, Status.SUBMITTED, _TOKEN, **_PUBLISHED)

# A batch claim gives each row a token of its own: a fresh random base for the batch, then the
# row's id (36 characters at most), so every row's later moves are guarded by its own token.
_IDS = ids_in(_c.id, "action_ids")
_ROW_TOKEN = bindparam("token_base", type_=String()) + cast(_c.id, String)
TOKEN_BASE_LENGTH = 16
CLAIM_BATCH = _statement(Move.CLAIM, Status.QUEUED, due_by(NOW), _ATTEMPTS_LEFT, which=_IDS,
                         attempt_count=_c.attempt_count + 1, claim_token=_ROW_TOKEN, submitted_at=NOW)
# What a send needs of a claimed row; the rest of it was in the look.
CLAIMED_COLUMNS = (_c.id, _c.workspace_id, _c.channel_id, _c.action_type, _c.thing_id, _c.target_key, _c.payload,
                   _c.publish_at, _c.attempt_count, _c.claim_token, _c.origin, _c.status, _c.created_at)
CLAIM_BATCH = CLAIM_BATCH.returning(*CLAIMED_COLUMNS)


def _events_of(source: Status, target: Status, reason, *where):
    """``INSERT INTO action_events ... SELECT`` one event per row matching ``where``: a batch's events in one
    statement whose parameters do not grow with the batch (its ids aside)."""
    events = ActionEvent.__table__
    return insert(events).from_select(
        ["action_id", "from_status", "to_status", "at", "actor", "actor_user_id", "clock_run_id", "reason"],
        select(_c.id, literal(source.value, String()), literal(target.value, String()), NOW,
               bindparam("actor_label", type_=String()), cast(bindparam("actor_user_id"), Integer),
               cast(bindparam("clock_run_id"), Integer), reason).where(*where))


CLAIM_BATCH_EVENTS = _events_of(Status.QUEUED, Status.SUBMITTED, cast(null(), String), _IDS, _c.claim_token == _ROW_TOKEN,
                                _c.status == Status.SUBMITTED.value)
PUBLISH_BATCH_EVENTS = _events_of(
    Status.SUBMITTED, Status.PUBLISHED,
    case((_c.provider_id.is_(None), literal("provider accepted", String())),
         else_=literal("provider accepted as ", String()) + _c.provider_id),
    ids_in(_c.id, "published_ids"))
# On PostgreSQL a batch's publishes are one UPDATE over the rows given as one JSON document
# (id, token, provider id), rather than an executemany of one UPDATE per row.
_GIVEN = func.json_to_recordset(cast(bindparam("given", type_=Text()), JSON)).table_valued(
    column("id", BigInteger), column("token", Text), column("provider_id", Text)).render_derived(
    name="given", with_types=True)
PUBLISH_GIVEN = _statement(Move.PUBLISH, Status.SUBMITTED, _c.claim_token == _GIVEN.c.token,
                           which=_c.id == _GIVEN.c.id, provider_id=_GIVEN.c.provider_id, finished_at=NOW,
                           last_error=None, failure_code=None).returning(_c.id)
# The same on SQLite, the JSON document read by json_each.
_EACH = func.json_each(bindparam("given", type_=Text())).table_valued("value", name="each")
_GIVEN_SQLITE = select(*(func.json_extract(_EACH.c.value, f"$.{name}").label(name)
                         for name in ("id", "token", "provider_id"))).subquery("given")
PUBLISH_GIVEN_SQLITE = _statement(Move.PUBLISH, Status.SUBMITTED, _c.claim_token == _GIVEN_SQLITE.c.token,
                                  which=_c.id == _GIVEN_SQLITE.c.id, provider_id=_GIVEN_SQLITE.c.provider_id,
                                  finished_at=NOW, last_error=None, failure_code=None).returning(_c.id)

# The publish guard's test (models.actions.guard), which its trigger makes only for a row written active: a
# row delivered is written published, so its UPDATE makes the test itself.
_sibling = _t.alias("sibling")
_archived = ArchivedKey.__table__.c
_SIBLING_PUBLISHED = select(_sibling.c.id).where(
    _sibling.c.workspace_id == _c.workspace_id, _sibling.c.action_type == _c.action_type,
    _sibling.c.thing_id == _c.thing_id, _sibling.c.target_key == _c.target_key,
    _sibling.c.status == Status.PUBLISHED.value, _sibling.c.id != _c.id).exists()
_KEY_ARCHIVED_PUBLISHED = select(_archived.workspace_id).where(
    _archived.workspace_id == _c.workspace_id, _archived.action_type == _c.action_type,
    _archived.thing_id == _c.thing_id, _archived.target_key == _c.target_key, _archived.published).exists()
_NO_PUBLISHED_SIBLING = or_(_c.thing_id.is_(None), and_(~_SIBLING_PUBLISHED, ~_KEY_ARCHIVED_PUBLISHED))
# A local delivery: claim and publish at once, each row under a token of its own and with the provider id its
# delivery gave (the same JSON document as a batch's publishes).
_DELIVERED = dict(attempt_count=_c.attempt_count + 1, claim_token=_ROW_TOKEN, submitted_at=NOW, finished_at=NOW,
                  last_error=None, failure_code=None)
DELIVER_GIVEN = _statement(Move.DELIVER, Status.QUEUED, due_by(NOW), _ATTEMPTS_LEFT, _NO_PUBLISHED_SIBLING,
                           which=_c.id == _GIVEN.c.id, **_DELIVERED,
                           provider_id=_GIVEN.c.provider_id).returning(_c.id)
DELIVER_GIVEN_SQLITE = _statement(Move.DELIVER, Status.QUEUED, due_by(NOW), _ATTEMPTS_LEFT, _NO_PUBLISHED_SIBLING,
                                  which=_c.id == _GIVEN_SQLITE.c.id, **_DELIVERED,
                                  provider_id=_GIVEN_SQLITE.c.provider_id).returning(_c.id)
# Its two events per row, the claim's then the publish's (PUBLISH_BATCH_EVENTS), so a history reads in order.
DELIVER_CLAIM_EVENTS = _events_of(Status.QUEUED, Status.SUBMITTED, cast(null(), String), ids_in(_c.id, "published_ids"))

FAIL_BY_WORKER = _statement(Move.FAIL, Status.SUBMITTED, _TOKEN, **_FAILED).returning(*_c)

FAIL_BY_RECOVERY = _statement(Move.FAIL, Status.SUBMITTED,
                              _c.submitted_at <= bindparam("cutoff", type_=UTCDateTime()), **_FAILED).returning(*_c)

REVERT = _statement(Move.REVERT, Status.SUBMITTED, _TOKEN,
                    next_attempt_at=bindparam("retry_at", type_=UTCDateTime()),
                    last_error=bindparam("message"), claim_token=None, submitted_at=None).returning(*_c)

MISS = _statement(Move.MISS, Status.QUEUED, **_FAILED).returning(*_c)

_channels = Channel.__table__.c
STRAND = _statement(Move.STRAND, Status.QUEUED, due_by(NOW),
                    select(_channels.id).where(_channels.id == _c.channel_id,
                                               _channels.reconnect_needed_since.is_not(None)).exists(),
                    failure_code=FailureCode.RECONNECT_NEEDED.value, last_error=bindparam("message"),
                    finished_at=NOW).returning(*_c)

CANCEL = _statement(Move.CANCEL, Status.QUEUED, _WORKSPACE,
                    cancel_kind=bindparam("given_cancel_kind"), finished_at=NOW).returning(*_c)

RETRY = _statement(Move.RETRY, Status.FAILED, _WORKSPACE, _ATTEMPTS_LEFT,
                   last_error=None, failure_code=None, next_attempt_at=NOW, finished_at=None,
                   claim_token=None, submitted_at=None).returning(*_c)

# Not an attempt: the attempt count and the claim are untouched; only the next try moves.
HOLD = _statement(Move.HOLD, Status.QUEUED, due_by(NOW),
                  next_attempt_at=bindparam("held_until", type_=UTCDateTime())).returning(*_c)
# A restore: every active row that may have gone out after the backup, in one statement per source.
DOUBT_QUEUED = _statement(Move.DOUBT, Status.QUEUED, due_by(NOW), which=true(), **_FAILED).returning(_c.id)

DOUBT_SUBMITTED = _statement(Move.DOUBT, Status.SUBMITTED, which=true(), **_FAILED).returning(_c.id)
# Not an attempt either: the claim stays the worker's; only what is known of the send is written.
ASK = _statement(Move.ASK, Status.SUBMITTED, _TOKEN, last_error=bindparam("message")).returning(*_c)

_EVENT = insert(ActionEvent.__table__)
_FORGET_HOLD = delete(ActionHold.__table__).where(ActionHold.__table__.c.action_id == bindparam("action_id"))
_RECORD_HOLD = insert(ActionHold.__table__)
_LOOK = select(ScheduledAction).where(ScheduledAction.id == bindparam("action_id")).execution_options(
    populate_existing=True)


# -- how a move runs -------------------------------------------------------------------------


def _expire_loaded(session: Session, action_ids) -> None:
    """Expire the session's copies of rows a statement just moved behind its back, so they are read afresh."""
    for action_id in action_ids:
        loaded = session.identity_map.get(session.identity_key(ScheduledAction, action_id))
        if loaded is not None:
            session.expire(loaded)


def _as_action(session: Session, row) -> ScheduledAction:
    """The updated row as a detached ScheduledAction; a stale copy in the session is expired."""
    _expire_loaded(session, [row.id])
    return ScheduledAction(**row._mapping)


def _event(row_id: int, source: Status | None, target: Status, *, now: datetime, actor: Actor,
           reason: str | None) -> dict:
    """An event row's values; ``source`` is None for a row's first event."""
    return event_values(source.value if source else None, target.value, now=now, actor=actor, reason=reason,
                        action_id=row_id)


def _guarded_execute(session: Session, statement, params, *, many: bool = False):
    """Run a move into an active status, which the publish guard or the dedupe index may refuse.

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


def _moved_or_refused(session: Session, row, source: Status, target: Status, *, action_id: int, now: datetime,
                      actor: Actor, reason: str | None, workspace_id: int | None = None,
                      max_attempts: int | None = None, otherwise: Refusal = Refusal.WRONG_STATE) -> Outcome:
    """The move's outcome: its event written when the UPDATE moved the row, else why it did not.

    ``otherwise`` is the move's own reason when the row is in the right status and yet did
    not move: a claim before its time (``not_due``), a token that no longer matches
    (``claim_lost``).
    """
    if row is None:
        return _diagnose(session, action_id, source, workspace_id=workspace_id, max_attempts=max_attempts,
                         otherwise=otherwise)
    session.execute(_EVENT, _event(row.id, source, target, now=now, actor=actor, reason=reason))
    return Moved(_as_action(session, row))


def _diagnose(session: Session, action_id: int, source: Status, *, workspace_id: int | None,
              max_attempts: int | None, otherwise: Refusal) -> Refused:
    """Why a guarded UPDATE moved nothing, read from the row as it is now."""
    row = session.scalars(_LOOK, {"action_id": action_id}).one_or_none()
    if row is None or (workspace_id is not None and row.workspace_id != workspace_id):
        return Refused(Refusal.NOT_FOUND)
    if row.status != source.value:
        return Refused(Refusal.WRONG_STATE, row.status, row)
    if max_attempts is not None and row.attempt_count >= max_attempts:
        return Refused(Refusal.ATTEMPTS_EXHAUSTED, row.status, row)
    return Refused(otherwise, row.status, row)


def record_creation(session: Session, action: ScheduledAction, *, now: datetime, actor: Actor,
                    reason: str | None = None) -> None:
    """Write the first event of a freshly inserted row (nothing → queued)."""
    session.execute(_EVENT, _event(action.id, None, Status(action.status), now=now, actor=actor, reason=reason))


def record_creations(session: Session, actions: list[ScheduledAction], *, now: datetime, actor: Actor,
                     reason: str | None = None) -> None:
    """The first events of several freshly inserted rows, in one statement."""
    if actions:
        session.execute(_EVENT, [_event(action.id, None, Status(action.status), now=now, actor=actor, reason=reason)
                                 for action in actions])


# -- the moves -------------------------------------------------------------------------------


def claim(session: Session, action_id: int, *, now: datetime, actor: Actor,
          max_attempts: int = DEFAULT_BUDGET) -> Outcome:
    """queued → submitted: the one worker whose claim flips the row may hand it to a provider."""
    params = {"action_id": action_id, "now": now, "max_attempts": max_attempts, "new_token": uuid.uuid4().hex}
    row = _guarded_execute(session, CLAIM, params)
    return _moved_or_refused(session, row, Status.QUEUED, Status.SUBMITTED, action_id=action_id, now=now,
                             actor=actor, reason=None, max_attempts=max_attempts, otherwise=Refusal.NOT_DUE)


def claim_many(session: Session, action_ids: list[int], *, now: datetime, actor: Actor,
               max_attempts: int = DEFAULT_BUDGET) -> list:
    """queued → submitted for every due row of ``action_ids`` in one statement, under one fresh token.

    The same guards as :func:`claim`; the rows it returns are the ones that flipped (a
    token names a claim, the id tells its rows apart). A row left out changed nothing:
    :func:`claim` it alone to learn why. If the publish guard refuses any row, the whole
    statement is undone and :class:`~models.actions.guard.PublishGuardViolation` is raised.
    The rows come back as the UPDATE returned them (read-only rows with the table's columns
    as attributes), not as ORM objects: a chunk of them is built many times a second.
    """
    if not action_ids:
        return []
    params = {"action_ids": list(action_ids), "now": now, "max_attempts": max_attempts,
              "new_token": uuid.uuid4().hex}
    rows = _guarded_execute(session, CLAIM_MANY, params, many=True)
    if rows:
        session.execute(_EVENT, [_event(row.id, Status.QUEUED, Status.SUBMITTED, now=now, actor=actor, reason=None)
                                 for row in rows])
    _expire_loaded(session, [row.id for row in rows])
    return rows


def _actor_params(actor: Actor) -> dict:
    return {"actor_label": actor.label, "actor_user_id": actor.user_id, "clock_run_id": actor.clock_run_id}


def claim_batch(session: Session, action_ids: list[int], *, now: datetime, actor: Actor,
                max_attempts: int = DEFAULT_BUDGET) -> list:
    """queued → submitted for every due row of ``action_ids`` in one statement, each row under a token of its own.

    The same guards as :func:`claim`; the rows it returns (with :data:`CLAIMED_COLUMNS`) are the
    ones that flipped, and their events are written by one ``INSERT ... SELECT``. A row left
    out changed nothing: :func:`claim` it alone to learn why. If the publish guard refuses any
    row, the whole statement is undone and :class:`~models.actions.guard.PublishGuardViolation`
    is raised. The rows are read-only rows, not ORM objects.
    """
    if not action_ids:
        return []
    params = {"action_ids": list(action_ids), "now": now, "max_attempts": max_attempts,
              "token_base": uuid.uuid4().hex[:TOKEN_BASE_LENGTH] + "."}
    rows = _guarded_execute(session, CLAIM_BATCH, params, many=True)
    if rows:
        session.execute(CLAIM_BATCH_EVENTS, {**params, **_actor_params(actor)})
    _expire_loaded(session, [row.id for row in rows])
    return rows


def publish_batch(session: Session, published: list[tuple[int, str, str | None]], *, now: datetime,
                  actor: Actor) -> dict[int, Outcome | None]:
    """submitted → published for each ``(action_id, claim_token, provider_id)``: one UPDATE, one event statement.

    For rows a worker claimed and sent, whose outcomes are committed together. A row that did
    not move (recovery declared its worker lost meanwhile) goes through :func:`publish`
    alone, where a late success still lands while its token matches. Returns, per id, None for
    a row published by the batch, else the outcome :func:`publish` gave it.
    """
    if not published:
        return {}
    statement = PUBLISH_GIVEN if session.connection().dialect.name == "postgresql" else PUBLISH_GIVEN_SQLITE
    moved = set(session.scalars(statement, {"now": now, "given": json.dumps(
        [{"id": action_id, "token": token, "provider_id": provider_id} for action_id, token, provider_id in published])}))
    if moved:
        session.execute(PUBLISH_BATCH_EVENTS, {"published_ids": sorted(moved), "now": now, **_actor_params(actor)})
    outcomes: dict[int, Outcome | None] = {action_id: None for action_id in moved}
    for action_id, token, provider_id in published:
        if action_id not in moved:
            outcomes[action_id] = publish(session, action_id, claim_token=token, provider_id=provider_id, now=now,
                                          actor=actor)
    return outcomes


def deliver_batch(session: Session, delivered: list[tuple[int, str | None]], *, now: datetime, actor: Actor,
                  max_attempts: int = DEFAULT_BUDGET) -> list:
    """queued → published for each ``(action_id, provider_id)`` a local provider has just delivered in this
    transaction: one UPDATE, and the claim's and the publish's events in a statement each.

    The same guards as :func:`claim` and the publish guard's test; it returns the ids of the rows
    it moved, in order (the caller read the rows under its lock just before). A row left out
    changed nothing, and its delivery must not stand: the caller undoes the transaction (or its
    savepoint) and claims the rows one by one to learn why.
    """
    if not delivered:
        return []
    statement = DELIVER_GIVEN if session.connection().dialect.name == "postgresql" else DELIVER_GIVEN_SQLITE
    params = {"now": now, "max_attempts": max_attempts, "token_base": uuid.uuid4().hex[:TOKEN_BASE_LENGTH] + ".",
              "given": json.dumps([{"id": action_id, "token": None, "provider_id": provider_id}
                                   for action_id, provider_id in delivered])}
    moved = sorted(session.scalars(statement, params))
    if moved:
        events = {"published_ids": moved, "now": now, **_actor_params(actor)}
        session.execute(DELIVER_CLAIM_EVENTS, events)
        session.execute(PUBLISH_BATCH_EVENTS, events)
    _expire_loaded(session, moved)
    return moved


def _accepted(provider_id: str | None) -> str:
    return "provider accepted" + (f" as {provider_id}" if provider_id else "")


def publish(session: Session, action_id: int, *, claim_token: str, provider_id: str | None, now: datetime,
            actor: Actor) -> Outcome:
    """submitted → published. A lost worker's late success still lands while its token matches."""
    params = {"action_id": action_id, "held_token": claim_token, "given_provider_id": provider_id, "now": now}
    row = session.execute(PUBLISH, params).one_or_none()
    outcome = _moved_or_refused(session, row, Status.SUBMITTED, Status.PUBLISHED, action_id=action_id, now=now,
                                actor=actor, reason=_accepted(provider_id), otherwise=Refusal.CLAIM_LOST)
    if outcome.ok or outcome.status != Status.FAILED.value:
        return outcome
    row = session.execute(PUBLISH_AFTER_WORKER_LOST, params).one_or_none()
    return _moved_or_refused(session, row, Status.FAILED, Status.PUBLISHED, action_id=action_id, now=now,
                             actor=actor, reason=_accepted(provider_id) + " after the worker was declared lost",
                             otherwise=Refusal.CLAIM_LOST)


def publish_many(session: Session, published: list[tuple[int, str, str | None]], *, now: datetime,
                 actor: Actor) -> None:
    """submitted → published for each ``(action_id, claim_token, provider_id)``, in one executemany.

    Only for rows this transaction claimed itself, which nobody else can have moved
    since: a row that does not move is a bug, so it raises and the transaction is undone.
    """
    if not published:
        return
    result = session.execute(PUBLISH_EACH, [
        {"action_id": action_id, "held_token": token, "given_provider_id": provider_id, "now": now}
        for action_id, token, provider_id in published
    ])
    if result.rowcount != len(published):
        raise RuntimeError(f"publish_many moved {result.rowcount} of {len(published)} rows this transaction claimed")
    session.execute(_EVENT, [
        _event(action_id, Status.SUBMITTED, Status.PUBLISHED, now=now, actor=actor, reason=_accepted(provider_id))
        for action_id, _, provider_id in published
    ])


def fail(session: Session, action_id: int, *, code: FailureCode, message: str, now: datetime, actor: Actor,
         claim_token: str | None = None, submitted_before: datetime | None = None) -> Outcome:
    """submitted → failed, by the claiming worker (its token) or by dead-worker recovery (a cut-off)."""
    if (claim_token is None) == (submitted_before is None):
        raise ValueError("fail needs the claim token (the worker) or the recovery cut-off, and not both")
    params = {"action_id": action_id, "given_failure_code": code.value, "message": message, "now": now}
    if claim_token is not None:
        row = session.execute(FAIL_BY_WORKER, {**params, "held_token": claim_token}).one_or_none()
    else:
        row = session.execute(FAIL_BY_RECOVERY, {**params, "cutoff": submitted_before}).one_or_none()
    return _moved_or_refused(session, row, Status.SUBMITTED, Status.FAILED, action_id=action_id, now=now,
                             actor=actor, reason=message, otherwise=Refusal.CLAIM_LOST)


def revert(session: Session, action_id: int, *, claim_token: str, next_attempt_at: datetime, message: str,
           now: datetime, actor: Actor) -> Outcome:
    """submitted → queued, only when the provider was never reached; the attempt stays counted."""
    params = {"action_id": action_id, "held_token": claim_token, "retry_at": next_attempt_at,
              "message": message, "now": now}
    row = _guarded_execute(session, REVERT, params)
    return _moved_or_refused(session, row, Status.SUBMITTED, Status.QUEUED, action_id=action_id, now=now,
                             actor=actor, reason=f"{message}; next attempt at {next_attempt_at.isoformat()}",
                             otherwise=Refusal.CLAIM_LOST)


def ask(session: Session, action_id: int, *, claim_token: str, message: str, now: datetime, actor: Actor) -> Outcome:
    """submitted → submitted: the send's outcome is unknown and its provider is asked (what it found, or that it
    is asked again later, is the event's reason and ``last_error``); the claim and the attempt count stay."""
    params = {"action_id": action_id, "held_token": claim_token, "message": message, "now": now}
    row = session.execute(ASK, params).one_or_none()
    return _moved_or_refused(session, row, Status.SUBMITTED, Status.SUBMITTED, action_id=action_id, now=now,
                             actor=actor, reason=message, otherwise=Refusal.CLAIM_LOST)


MISSABLE = (FailureCode.MISSED_WINDOW, FailureCode.DUPLICATE_OF_PUBLISHED, FailureCode.ATTEMPTS_EXHAUSTED,
            FailureCode.CONTENT_ERROR)


def miss(session: Session, action_id: int, *, code: FailureCode, message: str, now: datetime,
         actor: Actor) -> Outcome:
    """queued → failed without a send: missed its window, a legacy duplicate, attempts exhausted, or content
    that could not be built (a drip template that does not render for its contact)."""
    if code not in MISSABLE:
        raise ValueError(f"miss does not record {code.value}")
    row = session.execute(MISS, {"action_id": action_id, "given_failure_code": code.value, "message": message,
                                 "now": now}).one_or_none()
    return _moved_or_refused(session, row, Status.QUEUED, Status.FAILED, action_id=action_id, now=now, actor=actor,
                             reason=message)


def strand(session: Session, action_id: int, *, message: str, now: datetime, actor: Actor) -> Outcome:
    """queued → failed as reconnect_needed: due on a channel whose account needs reconnecting. Not an attempt."""
    row = session.execute(STRAND, {"action_id": action_id, "message": message, "now": now}).one_or_none()
    return _moved_or_refused(session, row, Status.QUEUED, Status.FAILED, action_id=action_id, now=now, actor=actor,
                             reason=message, otherwise=Refusal.NOT_DUE)


def cancel(session: Session, action_id: int, *, kind: CancelKind, now: datetime, actor: Actor, workspace_id: int,
           reason: str | None = None) -> Outcome:
    """queued → cancelled, recording who cancelled it and why."""
    row = session.execute(CANCEL, {"action_id": action_id, "in_workspace": workspace_id, "given_cancel_kind": kind.value,
                                   "now": now}).one_or_none()
    return _moved_or_refused(session, row, Status.QUEUED, Status.CANCELLED, action_id=action_id, now=now,
                             actor=actor, reason=reason or f"cancelled ({kind.value})", workspace_id=workspace_id)


def retry(session: Session, action_id: int, *, now: datetime, actor: Actor, workspace_id: int,
          max_attempts: int = DEFAULT_BUDGET) -> Outcome:
    """failed → queued, due now, while attempts are left. The old error stays in the events."""
    params = {"action_id": action_id, "in_workspace": workspace_id, "max_attempts": max_attempts, "now": now}
    row = _guarded_execute(session, RETRY, params)
    return _moved_or_refused(session, row, Status.FAILED, Status.QUEUED, action_id=action_id, now=now, actor=actor,
                             reason="retried", workspace_id=workspace_id, max_attempts=max_attempts)


HOLD_CAUSES = ("rate", "concurrency", "paused")


def hold(session: Session, action_id: int, *, channel_id: int, until: datetime, late_from: datetime, cause: str,
         message: str, now: datetime, actor: Actor) -> Outcome:
    """queued → queued, due again at ``until``: its channel has no room now. Not an attempt.

    ``late_from`` is the instant the row's lateness is measured from while the hold is
    current (``until`` less the lateness it had when held), kept in ``action_holds``.
    """
    if cause not in HOLD_CAUSES:
        raise ValueError(f"a hold is caused by one of {', '.join(HOLD_CAUSES)}, not {cause!r}")
    if not late_from <= until:
        raise ValueError("a held row's lateness is measured from no later than the end of its hold")
    # Any update of a queued row passes the publish guard: a legacy duplicate raises here too.
    row = _guarded_execute(session, HOLD, {"action_id": action_id, "held_until": until, "now": now})
    outcome = _moved_or_refused(session, row, Status.QUEUED, Status.QUEUED, action_id=action_id, now=now,
                                actor=actor, reason=message, otherwise=Refusal.NOT_DUE)
    if outcome.ok:
        session.execute(_FORGET_HOLD, {"action_id": action_id})
        session.execute(_RECORD_HOLD, {"action_id": action_id, "channel_id": channel_id, "held_until": until,
                                       "late_from": late_from, "cause": cause, "held_at": now})
    return outcome
def doubt_after_restore(session: Session, *, message: str, now: datetime, actor: Actor) -> list[int]:
    """queued (due by now) and submitted → failed as outcome unknown, on a database just restored.

    Returns the ids it moved. Each gets its event; nothing is sent.
    """
    moved: list[int] = []
    for source, statement in ((Status.SUBMITTED, DOUBT_SUBMITTED), (Status.QUEUED, DOUBT_QUEUED)):
        ids = list(session.execute(statement, {"given_failure_code": FailureCode.OUTCOME_UNKNOWN.value,
                                               "message": message, "now": now}).scalars())
        if ids:
            session.execute(_EVENT, [_event(ident, source, Status.FAILED, now=now, actor=actor, reason=message)
                                     for ident in ids])
        moved += ids
    return sorted(moved)
