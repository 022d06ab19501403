"""The enrollment lifecycle and its sends'. Every change of an enrollment's step or status, and of a
send's status, happens here, and only here.

An enrollment walks its campaign's steps::

    enroll ──▶ active(step s) ──mint──▶ active(step s, waits on send s) ──advance──▶ active(step s+1)
                  │                               │                     └──complete──▶ completed
                  └──────────────exit─────────────┴──────────────────────────────────▶ exited

| move     | enrollment from                              | to                      | guarded by                               | stamps |
|----------|----------------------------------------------|-------------------------|------------------------------------------|--------|
| enroll   | —                                            | active, step 0          | one active enrollment per contact and campaign (unique index) | enrolled_at, anchor_at, next_send_at |
| mint     | active at step s, waiting on nothing          | active, waits on send s | ``current_step = s AND waiting_send_id IS NULL`` | waiting_send_id |
| advance  | active at step s, waiting on send s           | active at step s+1      | ``current_step = s AND waiting_send_id = send`` (the playbook's optimistic lock: first writer wins) | anchor_at, next_send_at, waiting_send_id cleared |
| complete | active at the last step, waiting on its send  | completed               | as advance                               | completed_at |
| exit     | active                                       | exited                  | ``status = 'active'``                    | exited_at, exit_reason |

A send (one per enrollment and step, its dedupe key unique) is settled once, at its
attempt's first terminal status::

    pending ──settle──▶ sent / unknown / failed / missed / skipped / exited
       │ ▲
       │ └──remint (a new attempt, pointing back)──┐
       └──hold (its attempt was paused)──▶ held ───┘

| move   | send from      | to                 | guarded by                              |
|--------|----------------|--------------------|-----------------------------------------|
| settle | pending, held  | a settled status   | ``attempt_id`` = the attempt seen ended |
| hold   | pending        | held               | ``attempt_id`` = the attempt seen paused |
| remint | held, pending  | pending            | ``attempt_id`` = the attempt it replaces |

Each move is one guarded ``UPDATE ... WHERE id = ... AND <guard> RETURNING``, written out
below where a reader sees it and built once, plus its ``drip_enrollment_events`` row, in the
caller's transaction. Zero rows updated is :class:`~models.core.moves.Refused`, never an
exception: someone else got there first.
"""

import enum
from datetime import datetime

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.orm import Session

from models.core.events import event_values
from models.core.moves import Actor, Moved, Outcome, Refusal, Refused
from models.core.types import UTCDateTime
from models.drips.tables import Enrollment, EnrollmentEvent, EnrollmentStatus, Send, SendStatus


class EnrollmentMove(str, enum.Enum):
    """The ways an enrollment changes step or status."""

    ENROLL = "enroll"
    MINT = "mint"
    ADVANCE = "advance"
    COMPLETE = "complete"
    EXIT = "exit"


class SendMove(str, enum.Enum):
    """The ways a send's status changes."""

    SETTLE = "settle"
    HOLD = "hold"
    REMINT = "remint"


_ACTIVE = frozenset({EnrollmentStatus.ACTIVE})
ALLOWED_ENROLLMENT_MOVES: dict[EnrollmentMove, tuple[frozenset[EnrollmentStatus], EnrollmentStatus]] = {
    EnrollmentMove.MINT: (_ACTIVE, EnrollmentStatus.ACTIVE),
    EnrollmentMove.ADVANCE: (_ACTIVE, EnrollmentStatus.ACTIVE),
    EnrollmentMove.COMPLETE: (_ACTIVE, EnrollmentStatus.COMPLETED),
    EnrollmentMove.EXIT: (_ACTIVE, EnrollmentStatus.EXITED),
}
SETTLED = frozenset(s for s in SendStatus if s not in (SendStatus.PENDING, SendStatus.HELD))
ALLOWED_SEND_MOVES: dict[SendMove, tuple[frozenset[SendStatus], frozenset[SendStatus]]] = {
    SendMove.SETTLE: (frozenset({SendStatus.PENDING, SendStatus.HELD}), SETTLED),
    SendMove.HOLD: (frozenset({SendStatus.PENDING}), frozenset({SendStatus.HELD})),
    SendMove.REMINT: (frozenset({SendStatus.HELD, SendStatus.PENDING}), frozenset({SendStatus.PENDING})),
}

_e = Enrollment.__table__.c
_s = Send.__table__.c
NOW = bindparam("now", type_=UTCDateTime())
_ID = _e.id == bindparam("enrollment_id")
_AT_STEP = _e.current_step == bindparam("step")
_IS_ACTIVE = _e.status == EnrollmentStatus.ACTIVE.value


def _enrollment_statement(move: EnrollmentMove, *guards, **values):
    """``UPDATE drip_enrollments SET ... WHERE id = :enrollment_id AND status = 'active' AND <guards>``."""
    sources, target = ALLOWED_ENROLLMENT_MOVES[move]
    if sources != _ACTIVE:
        raise ValueError(f"{move.value} starts from active only")
    return update(Enrollment.__table__).where(_ID, _IS_ACTIVE, *guards).values(
        status=target.value, updated_at=NOW, **values).returning(_e.id)


_WAITS_ON_SEND = _e.waiting_send_id == bindparam("send_id")
_NEXT = dict(anchor_at=bindparam("given_anchor_at", type_=UTCDateTime()),
             next_send_at=bindparam("given_next_send_at", type_=UTCDateTime()),
             schedule_note=bindparam("given_note"), held_by_window=bindparam("given_held"))

# -- the enrollment's statements, one per move ------------------------------------------------

MINT = _enrollment_statement(EnrollmentMove.MINT, _AT_STEP, _e.waiting_send_id.is_(None),
                             waiting_send_id=bindparam("send_id"))
# The same move for a batch, run as an executemany (no RETURNING there): the caller reads back which moved.
MINT_EACH = (update(Enrollment.__table__)
             .where(_ID, _IS_ACTIVE, _AT_STEP, _e.waiting_send_id.is_(None))
             .values(updated_at=NOW, waiting_send_id=bindparam("send_id")))
ADVANCE = _enrollment_statement(EnrollmentMove.ADVANCE, _AT_STEP, _WAITS_ON_SEND,
                                current_step=_e.current_step + 1, waiting_send_id=None, **_NEXT)
COMPLETE = _enrollment_statement(EnrollmentMove.COMPLETE, _AT_STEP, _WAITS_ON_SEND,
                                 current_step=_e.current_step + 1, waiting_send_id=None, completed_at=NOW)
EXIT = _enrollment_statement(EnrollmentMove.EXIT, exited_at=NOW, exit_reason=bindparam("given_exit_reason"))
# Not a status change: the current step's time, recomputed (a zone, a delay or a window changed).
RESCHEDULE = (update(Enrollment.__table__)
              .where(_ID, _IS_ACTIVE, _AT_STEP, _e.waiting_send_id.is_(None))
              .values(updated_at=NOW, **{key: value for key, value in _NEXT.items() if key != "anchor_at"}))

# -- the send's statements -------------------------------------------------------------------

_SEND = _s.id == bindparam("send_id")
_OF_ATTEMPT = _s.attempt_id == bindparam("seen_attempt_id")
# A send settled at mint (no address, so no attempt) has attempt_id NULL: hence IS NOT DISTINCT FROM.
SETTLE_SEND = (update(Send.__table__)
               .where(_SEND, _s.status.in_([SendStatus.PENDING.value, SendStatus.HELD.value]),
                      _s.attempt_id.is_not_distinct_from(bindparam("seen_attempt_id")))
               .values(status=bindparam("to_status"), reason=bindparam("given_reason"),
                       finished_at=bindparam("given_finished_at", type_=UTCDateTime()), settled_at=NOW, updated_at=NOW)
               .returning(_s.id))
HOLD_SEND = (update(Send.__table__)
             .where(_SEND, _s.status == SendStatus.PENDING.value, _OF_ATTEMPT)
             .values(status=SendStatus.HELD.value, reason=bindparam("given_reason"), updated_at=NOW)
             .returning(_s.id))
REMINT_SEND = (update(Send.__table__)
               .where(_SEND, _s.status.in_([SendStatus.HELD.value, SendStatus.PENDING.value]), _OF_ATTEMPT)
               .values(status=SendStatus.PENDING.value, attempt_id=bindparam("new_attempt_id"), reason=None,
                       updated_at=NOW)
               .returning(_s.id))

_EVENT = insert(EnrollmentEvent.__table__)


def event(enrollment_id: int, move: str, source: str | None, target: str, *, now: datetime, actor: Actor,
          reason: str | None, step: int | None = None, send_id: int | None = None) -> dict:
    """An enrollment event's values (a send move's statuses are the send's)."""
    return event_values(source, target, now=now, actor=actor, reason=reason, enrollment_id=enrollment_id, move=move,
                        step=step, send_id=send_id)


def record_events(session: Session, events: list[dict]) -> None:
    """Write several events in one statement (a batch of mints)."""
    if events:
        session.execute(_EVENT, events)


def _status_of(session: Session, enrollment_id: int) -> str | None:
    return session.scalar(select(Enrollment.status).where(Enrollment.id == enrollment_id))


def _refused(session: Session, enrollment_id: int) -> Refused:
    status = _status_of(session, enrollment_id)
    return Refused(Refusal.NOT_FOUND if status is None else Refusal.WRONG_STATE, status)


# -- the enrollment's moves -----------------------------------------------------------------------


def record_enrollment(session: Session, enrollment: Enrollment, *, now: datetime, actor: Actor, reason: str) -> None:
    """Write the first event of a freshly inserted enrollment (nothing → active at step 0)."""
    session.execute(_EVENT, event(enrollment.id, EnrollmentMove.ENROLL.value, None, enrollment.status, now=now,
                                  actor=actor, reason=reason, step=enrollment.current_step))


def mint(session: Session, enrollment_id: int, *, step: int, send_id: int, now: datetime, actor: Actor,
         reason: str, record: bool = True) -> Outcome:
    """The enrollment waits on its new send for ``step`` (only if nobody minted that step first).

    ``record=False`` leaves the event to the caller, who writes a batch of them at once.
    """
    moved = session.execute(MINT, {"enrollment_id": enrollment_id, "step": step, "send_id": send_id,
                                   "now": now}).one_or_none()
    if moved is None:
        return _refused(session, enrollment_id)
    if record:
        session.execute(_EVENT, event(enrollment_id, EnrollmentMove.MINT.value, "active", "active", now=now,
                                      actor=actor, reason=reason, step=step, send_id=send_id))
    return Moved(enrollment_id)


def advance(session: Session, enrollment_id: int, *, step: int, send_id: int, anchor_at: datetime,
            next_send_at: datetime, schedule_note: str | None, held_by_window: bool, now: datetime, actor: Actor,
            reason: str) -> Outcome:
    """Step ``step`` is done (its send settled): on to the next step, due at ``next_send_at``.

    ``UPDATE ... SET current_step = step + 1 WHERE id = ? AND current_step = step``: of two
    racing advances from the same step, the first wins and the other changes nothing.
    """
    moved = session.execute(ADVANCE, {"enrollment_id": enrollment_id, "step": step, "send_id": send_id,
                                      "given_anchor_at": anchor_at, "given_next_send_at": next_send_at,
                                      "given_note": schedule_note, "given_held": held_by_window,
                                      "now": now}).one_or_none()
    if moved is None:
        return _refused(session, enrollment_id)
    session.execute(_EVENT, event(enrollment_id, EnrollmentMove.ADVANCE.value, "active", "active", now=now,
                                  actor=actor, reason=reason, step=step + 1, send_id=send_id))
    return Moved(enrollment_id)


def complete(session: Session, enrollment_id: int, *, step: int, send_id: int, now: datetime, actor: Actor,
             reason: str) -> Outcome:
    """The last step is done: the enrollment is completed (guarded as :func:`advance`)."""
    moved = session.execute(COMPLETE, {"enrollment_id": enrollment_id, "step": step, "send_id": send_id,
                                       "now": now}).one_or_none()
    if moved is None:
        return _refused(session, enrollment_id)
    session.execute(_EVENT, event(enrollment_id, EnrollmentMove.COMPLETE.value, "active", "completed", now=now,
                                  actor=actor, reason=reason, step=step, send_id=send_id))
    return Moved(enrollment_id)


def exit_enrollment(session: Session, enrollment_id: int, *, exit_reason: str, now: datetime, actor: Actor,
                    reason: str | None = None, step: int | None = None) -> Outcome:
    """active → exited with ``exit_reason`` (``unsubscribed``, ``removed``, ``send_failed``, ...)."""
    moved = session.execute(EXIT, {"enrollment_id": enrollment_id, "given_exit_reason": exit_reason,
                                   "now": now}).one_or_none()
    if moved is None:
        return _refused(session, enrollment_id)
    session.execute(_EVENT, event(enrollment_id, EnrollmentMove.EXIT.value, "active", "exited", now=now, actor=actor,
                                  reason=reason or exit_reason, step=step))
    return Moved(enrollment_id)


def reschedule(session: Session, enrollment_id: int, *, step: int, next_send_at: datetime,
               schedule_note: str | None, held_by_window: bool, now: datetime) -> bool:
    """Retime the current step of an enrollment that has not minted it yet; False when it has (or moved on)."""
    done = session.execute(RESCHEDULE, {"enrollment_id": enrollment_id, "step": step,
                                        "given_next_send_at": next_send_at, "given_note": schedule_note,
                                        "given_held": held_by_window, "now": now})
    return done.rowcount == 1


# -- the send's moves -------------------------------------------------------------------------


def record_send(send: Send, *, now: datetime, actor: Actor, reason: str) -> dict:
    """The event of a mint: the enrollment now waits on this new send (nothing → pending), returned for a batched write."""
    return event(send.enrollment_id, EnrollmentMove.MINT.value, None, send.status, now=now, actor=actor, reason=reason,
                 step=send.step_index, send_id=send.id)


def settle_send(session: Session, send: Send, *, attempt_id: int | None, to_status: SendStatus, reason: str,
                finished_at: datetime | None, now: datetime, actor: Actor) -> Outcome:
    """pending (or held) → ``to_status``, once: only while the send still points at the attempt seen ending."""
    if to_status not in SETTLED:
        raise ValueError(f"a send does not settle as {to_status.value}")
    seen = send.status
    moved = session.execute(SETTLE_SEND, {"send_id": send.id, "seen_attempt_id": attempt_id,
                                          "to_status": to_status.value, "given_reason": reason,
                                          "given_finished_at": finished_at, "now": now}).one_or_none()
    if moved is None:
        return Refused(Refusal.WRONG_STATE, session.scalar(select(Send.status).where(Send.id == send.id)))
    session.execute(_EVENT, event(send.enrollment_id, SendMove.SETTLE.value, seen, to_status.value, now=now,
                                  actor=actor, reason=reason, step=send.step_index, send_id=send.id))
    return Moved(send.id)


def hold_send(session: Session, send: Send, *, attempt_id: int, reason: str, now: datetime, actor: Actor) -> Outcome:
    """pending → held: its attempt was cancelled by a pause."""
    moved = session.execute(HOLD_SEND, {"send_id": send.id, "seen_attempt_id": attempt_id, "given_reason": reason,
                                        "now": now}).one_or_none()
    if moved is None:
        return Refused(Refusal.WRONG_STATE, session.scalar(select(Send.status).where(Send.id == send.id)))
    session.execute(_EVENT, event(send.enrollment_id, SendMove.HOLD.value, SendStatus.PENDING.value,
                                  SendStatus.HELD.value, now=now, actor=actor, reason=reason, step=send.step_index,
                                  send_id=send.id))
    return Moved(send.id)


def remint_send(session: Session, send: Send, *, old_attempt_id: int, new_attempt_id: int, reason: str,
                now: datetime, actor: Actor) -> Outcome:
    """held (or pending with a paused attempt) → pending with a new attempt that points back to the old one."""
    seen = send.status
    moved = session.execute(REMINT_SEND, {"send_id": send.id, "seen_attempt_id": old_attempt_id,
                                          "new_attempt_id": new_attempt_id, "now": now}).one_or_none()
    if moved is None:
        return Refused(Refusal.WRONG_STATE, session.scalar(select(Send.status).where(Send.id == send.id)))
    session.execute(_EVENT, event(send.enrollment_id, SendMove.REMINT.value, seen, SendStatus.PENDING.value, now=now,
                                  actor=actor, reason=reason, step=send.step_index, send_id=send.id))
    return Moved(send.id)
