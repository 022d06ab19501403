"""What every lifecycle's moves share: who made a move, and what came of it.

A move is one guarded ``UPDATE``; it either happened (:class:`Moved`, with the row as the
statement returned it) or changed nothing (:class:`Refused`, saying why). Zero rows updated
means someone else got there first: a typed answer, never an exception swallowed.
"""

import enum
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any


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
    """The move happened; ``row`` is the row as the guarded UPDATE left it."""

    row: Any
    ok = True


@dataclass(frozen=True)
class Refused:
    """The move changed nothing; ``status`` is the row's current status and ``row`` the row, if it exists."""

    reason: Refusal
    status: str | None = None
    row: Any = None
    ok = False


Outcome = Moved | Refused


def move_from_seen(session, thing, statement, params: dict, *, sources: Collection[enum.Enum], events,
                   event: Callable[[str], dict]) -> Outcome:
    """Run one guarded ``UPDATE ... WHERE id = ... AND status = :seen_status`` on ``thing`` from the status
    it was seen in, and write its event (``events``, an INSERT; ``event(seen)``, its values) when it moved.

    ``thing`` is expired after the statement, so it reads its new values on next use. A status
    not among ``sources``, or one that changed meanwhile, is refused (``wrong_state``).
    """
    seen = thing.status
    if seen not in {status.value for status in sources}:
        return Refused(Refusal.WRONG_STATE, seen, thing)
    moved = session.execute(statement, {**params, "seen_status": seen}).one_or_none()
    session.expire(thing)
    if moved is None:
        return Refused(Refusal.WRONG_STATE, thing.status, thing)  # it changed under us: read again
    session.execute(events, event(seen))
    return Moved(thing)
