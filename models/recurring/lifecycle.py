"""The recurring-rule lifecycle. Every status change of a rule, and every edit, happens here, and only here.

::

    active ──pause──▶ paused ──resume──▶ active
    active / paused ──end──▶ ended
    active ──run out──▶ ended

| move    | from           | to     | made by                                                     | stamps                         |
|---------|----------------|--------|-------------------------------------------------------------|--------------------------------|
| pause   | active         | paused | a person, with an optional note                             | paused_at, status_note         |
| resume  | paused         | active | a person                                                    | paused_at and status_note cleared |
| end     | active, paused | ended  | a person (ops), with an optional note                       | ended_at, status_note          |
| run out | active         | ended  | the expander, once the rule has no occurrence left          | ended_at, status_note          |
| edit    | active, paused | (same) | a person; the rule's definition changes and ``revision`` + 1 | updated_at                     |

Each move is one guarded ``UPDATE recurring_schedules ... WHERE id = :rule_id AND status =
:seen_status``, and an edit one ``... WHERE id = :rule_id AND revision = :seen_revision AND
status IN ('active', 'paused')``, written out below and built once, plus its
``recurring_schedule_events`` row, in the caller's transaction. The caller passes the rule
as it read it under its lock, so the event's ``from`` is exact; a rule that moved or was
edited meanwhile is a :class:`~models.core.moves.Refused` (``wrong_state``), never a
silent overwrite. The rule object handed in is expired after a move, so it reads its new
values on next use. A Run Now changes no status; it is recorded here as an event that
names the row it minted.
"""

import enum
from datetime import datetime

from sqlalchemy import bindparam, insert, update
from sqlalchemy.orm import Session

from models.core.events import event_values
from models.core.moves import Actor, Moved, Outcome, Refusal, Refused, move_from_seen
from models.core.types import UTCDateTime
from models.recurring.tables import RecurringSchedule, RecurringScheduleEvent, RuleStatus


class RuleMove(str, enum.Enum):
    """The four ways a rule's status may change."""

    PAUSE = "pause"
    RESUME = "resume"
    END = "end"
    RUN_OUT = "run_out"


ALLOWED_RULE_MOVES: dict[RuleMove, tuple[frozenset[RuleStatus], RuleStatus]] = {
    RuleMove.PAUSE: (frozenset({RuleStatus.ACTIVE}), RuleStatus.PAUSED),
    RuleMove.RESUME: (frozenset({RuleStatus.PAUSED}), RuleStatus.ACTIVE),
    RuleMove.END: (frozenset({RuleStatus.ACTIVE, RuleStatus.PAUSED}), RuleStatus.ENDED),
    RuleMove.RUN_OUT: (frozenset({RuleStatus.ACTIVE}), RuleStatus.ENDED),
}
# An edit keeps the status; a rule that ended is no longer edited.
EDITABLE = frozenset({RuleStatus.ACTIVE, RuleStatus.PAUSED})

_t = RecurringSchedule.__table__
_c = _t.c
NOW = bindparam("now", type_=UTCDateTime())
NOTE = bindparam("note")


def _statement(move: RuleMove, **values):
    """``UPDATE recurring_schedules SET status = <target>, ... WHERE id = :rule_id AND status = :seen_status``."""
    _, target = ALLOWED_RULE_MOVES[move]
    return update(_t).where(_c.id == bindparam("rule_id"), _c.status == bindparam("seen_status")).values(
        status=target.value, updated_at=NOW, **values).returning(_c.id)


PAUSE = _statement(RuleMove.PAUSE, paused_at=NOW, status_note=NOTE)
RESUME = _statement(RuleMove.RESUME, paused_at=None, status_note=None)
END = _statement(RuleMove.END, ended_at=NOW, status_note=NOTE)
RUN_OUT = _statement(RuleMove.RUN_OUT, ended_at=NOW, status_note=NOTE)

_STATEMENTS = {RuleMove.PAUSE: PAUSE, RuleMove.RESUME: RESUME, RuleMove.END: END, RuleMove.RUN_OUT: RUN_OUT}

# The rule's whole definition, replaced at once, and the revision after the one seen.
DEFINITION = ("action_type", "channel_id", "target_key", "payload", "rrule", "starts_local", "starts_at",
              "ends_local", "ends_at", "exdates_local", "misfire")
EDIT = (
    update(_t)
    .where(_c.id == bindparam("rule_id"), _c.revision == bindparam("seen_revision"),
           _c.status.in_([status.value for status in EDITABLE]))
    .values(revision=_c.revision + 1, updated_at=NOW,
            **{name: bindparam(f"new_{name}", type_=_c[name].type) for name in DEFINITION})
    .returning(_c.revision)
)

_EVENT = insert(RecurringScheduleEvent.__table__)


def _event(rule_id: int, source: str | None, target: str, revision: int, *, now: datetime, actor: Actor,
           reason: str | None, action_id: int | None = None) -> dict:
    return event_values(source, target, now=now, actor=actor, reason=reason, schedule_id=rule_id, revision=revision,
                        action_id=action_id)


def _move(session: Session, move: RuleMove, rule: RecurringSchedule, *, now: datetime, actor: Actor,
          reason: str | None, note: str | None = None) -> Outcome:
    """Run ``move`` on ``rule`` from the status it was seen in; the event, or why it changed nothing."""
    sources, target = ALLOWED_RULE_MOVES[move]
    rule_id, revision = rule.id, rule.revision
    return move_from_seen(session, rule, _STATEMENTS[move], {"rule_id": rule_id, "now": now, "note": note},
                          sources=sources, events=_EVENT,
                          event=lambda seen: _event(rule_id, seen, target.value, revision, now=now, actor=actor,
                                                    reason=reason))


def record_creation(session: Session, rule: RecurringSchedule, *, now: datetime, actor: Actor) -> None:
    """Write the first event of a freshly inserted rule (nothing → active)."""
    session.execute(_EVENT, _event(rule.id, None, rule.status, rule.revision, now=now, actor=actor,
                                   reason="created"))


def pause(session: Session, rule: RecurringSchedule, *, now: datetime, actor: Actor,
          note: str | None = None) -> Outcome:
    """active → paused: the expander stops; the caller cancels the queued future rows (``paused``)."""
    return _move(session, RuleMove.PAUSE, rule, now=now, actor=actor, note=note,
                 reason=f"paused: {note}" if note else "paused")


def resume(session: Session, rule: RecurringSchedule, *, now: datetime, actor: Actor) -> Outcome:
    """paused → active: the slots still in the future are minted again."""
    return _move(session, RuleMove.RESUME, rule, now=now, actor=actor, reason="resumed")


def end(session: Session, rule: RecurringSchedule, *, now: datetime, actor: Actor, note: str | None = None) -> Outcome:
    """active or paused → ended, by a person: stopped for good; the caller cancels its queued rows."""
    return _move(session, RuleMove.END, rule, now=now, actor=actor, note=note,
                 reason=f"ended: {note}" if note else "ended")


def run_out(session: Session, rule: RecurringSchedule, *, now: datetime, actor: Actor) -> Outcome:
    """active → ended, by the expander: the rule has no occurrence after now."""
    words = "no more occurrences"
    return _move(session, RuleMove.RUN_OUT, rule, now=now, actor=actor, note=words, reason=words)


def edit(session: Session, rule: RecurringSchedule, definition: dict, *, now: datetime, actor: Actor,
         changed: list[str]) -> Outcome:
    """Replace the rule's definition (every field of :data:`DEFINITION`) and bump its revision.

    Refused (``wrong_state``) when the rule ended, or was edited since the caller read it.
    """
    seen_status, seen_revision = rule.status, rule.revision
    if seen_status not in {status.value for status in EDITABLE}:
        return Refused(Refusal.WRONG_STATE, seen_status, rule)
    params = {"rule_id": rule.id, "seen_revision": seen_revision, "now": now,
              **{f"new_{name}": definition[name] for name in DEFINITION}}
    revision = session.execute(EDIT, params).scalar_one_or_none()
    session.expire(rule)
    if revision is None:
        return Refused(Refusal.WRONG_STATE, rule.status, rule)
    session.execute(_EVENT, _event(rule.id, seen_status, seen_status, revision, now=now, actor=actor,
                                   reason="edited: " + ", ".join(changed) if changed else "edited"))
    return Moved(rule)


def record_run_now(session: Session, rule: RecurringSchedule, action_id: int, *, now: datetime,
                   actor: Actor) -> None:
    """A Run Now: no status changes; the event names the row it minted."""
    session.execute(_EVENT, _event(rule.id, rule.status, rule.status, rule.revision, now=now, actor=actor,
                                   reason="Run Now", action_id=action_id))
