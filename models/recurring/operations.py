"""What people do to recurring rules: create, edit, pause, resume, end, Run Now; and what a zone change does.

These are what both shells call (the API, the dashboard). Each takes a session inside a write
transaction (``models.core.database.write_session``), the workspace id, the actor, ``now`` and
the policy; each raises :mod:`models.core.errors` types and changes nothing when it does.
Creating, editing and resuming a rule expand it at once, in the same transaction, through
the code the periodic expander runs (:func:`models.recurring.expander.expand_rule`).

| operation | who may       | its rows                                                                          |
|-----------|---------------|-----------------------------------------------------------------------------------|
| create    | marketer      | the window's occurrences minted                                                   |
| edit      | marketer      | unsent future rows cancelled (``rescheduled``) and each slot minted again, pointing back; submitted, published and failed rows untouched |
| pause     | marketer      | queued future rows cancelled ``paused`` (a note is kept on the rule and its event) |
| resume    | marketer      | the slots still in the future minted again                                       |
| end       | ops           | queued future rows cancelled (``person``): stopped for good                      |
| Run Now   | marketer      | one row due now, origin ``person``, ``rule:<id>:manual:<instant>``; the window untouched |

Rows a person moved (a reschedule keeps the slot's key, origin ``person``) and Run Nows are
never touched by the rule's operations or the expander. One occurrence is cancelled,
rescheduled and retried through the actions API, by the roles
:mod:`models.actions.access` names.
"""

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from models.accounts.permissions import Permission, can
from models.accounts.tables import Role
from models.accounts.workspaces import workspace_zone
from models.actions.guard import DuplicateActiveAction, PublishGuardViolation
from models.actions.scheduling import NewAction, insert_action
from models.actions.tables import CancelKind, Origin, ScheduledAction
from models.channels.tables import Channel
from models.core.errors import Conflict, Forbidden, InvalidInput
from models.core.moves import Actor
from models.core.policy import Policy
from models.recurring import lifecycle as rule_lifecycle
from models.recurring.checks import RULE_FIELDS, check_rule
from models.recurring.expander import cancel_future_rows, earlier_things, expand_rule
from models.recurring.reading import get_rule, local_wall, render_payload, occurrence_values, rule_recurrence
from models.recurring.tables import RecurringSchedule, RuleStatus, manual_thing_id
from models.timing.recurrence import RecurrenceError, RecurrenceRule
from models.timing.wall_time import InvalidTimezone, resolve_wall_time, to_local

MAX_NOTE = 500


@dataclass
class RuleChange:
    """A rule after an operation, the rows it inserted (to hand to the queue), and its counts."""

    rule: RecurringSchedule
    new_rows: list[ScheduledAction] = field(default_factory=list)
    counts: dict = field(default_factory=dict)


def may_end(role: Role) -> bool:
    """Ending a rule for good is an operator's call; marketers pause."""
    return can(role, Permission.OPERATE)


def check_may_end(role: Role) -> None:
    if not may_end(role):
        raise Forbidden("You need the ops role to end a recurring rule; pause it instead.")


def _zone(session: Session, workspace_id: int) -> str:
    return workspace_zone(session, workspace_id)


def _recurrence(rule: RecurringSchedule, zone: str, policy: Policy) -> RecurrenceRule:
    """The stored rule read in ``zone``; a broken zone or a rule that no longer passes is a 422."""
    try:
        return rule_recurrence(rule, zone, policy)
    except InvalidTimezone as exc:
        raise InvalidInput(f"the workspace's time zone is not valid: {exc}", field="timezone",
                           code="bad_zone") from None
    except RecurrenceError as exc:
        raise InvalidInput(exc.message, field=exc.part, code=exc.code) from None


def _refused(rule: RecurringSchedule, what: str) -> Conflict:
    return Conflict(f"recurring rule #{rule.id} is {rule.status}; {what}", code="wrong_state", status_now=rule.status)


def _moved(outcome, what: str) -> RecurringSchedule:
    if not outcome.ok:
        raise _refused(outcome.row, what)
    return outcome.row


def _note(note) -> str | None:
    if note is None:
        return None
    if not isinstance(note, str):
        raise InvalidInput("note must be a string", field="note", code="wrong_type")
    note = note.strip()
    if "\x00" in note:
        raise InvalidInput("note must not contain NUL characters", field="note", code="bad_character")
    if len(note) > MAX_NOTE:
        raise InvalidInput(f"note is longer than {MAX_NOTE} characters", field="note", code="too_long")
    return note or None


def _expanded(change: RuleChange, done) -> RuleChange:
    change.new_rows.extend(done.new_rows)
    change.counts.update({key: value for key, value in done.counts.items()})
    return change


def create_rule(session: Session, workspace_id: int, fields: dict, *, actor: Actor, now: datetime,
                policy: Policy) -> RuleChange:
    """Check every field, store the rule active, and materialize its window at once."""
    definition = check_rule(session, workspace_id, fields, zone=_zone(session, workspace_id), now=now,
                            policy=policy)
    rule = RecurringSchedule(workspace_id=workspace_id, created_by_id=actor.user_id, status=RuleStatus.ACTIVE.value,
                             revision=1, created_at=now, updated_at=now, **definition.columns())
    session.add(rule)
    session.flush()
    rule_lifecycle.record_creation(session, rule, now=now, actor=actor)
    done = expand_rule(session, rule, now=now, policy=policy, actor=actor, since=now,
                       recurrence=definition.recurrence)
    return _expanded(RuleChange(rule), done)


def current_fields(session: Session, rule: RecurringSchedule) -> dict:
    """The rule's definition as the API writes it, so an edit can change some fields and keep the rest."""
    channel = session.get(Channel, rule.channel_id)
    return {"action_type": rule.action_type, "channel": channel.name if channel else None,
            "target_key": rule.target_key, "payload": rule.payload, "rrule": rule.rrule,
            "starts_local": local_wall(rule.starts_local), "ends_local": local_wall(rule.ends_local),
            "exdates_local": list(rule.exdates_local or []), "misfire": rule.misfire}


def update_rule(session: Session, workspace_id: int, rule_id: int, changes: dict, *, actor: Actor, now: datetime,
                policy: Policy, expected_revision: int | None = None) -> RuleChange:
    """Change some of the rule's fields (the others keep their value); an active rule's rows follow at once.

    The unsent future rows are cancelled (``rescheduled``) and each slot is minted again pointing
    back to the row it replaces (a slot that moved to another time on the same date counts as
    the same); a row with nothing to replace it is cancelled ``orphaned``. Rows being sent,
    sent or failed are history and stay. ``expected_revision`` refuses an edit made on a
    stale screen (409).
    """
    rule = get_rule(session, workspace_id, rule_id, lock=True)
    if rule.status not in {status.value for status in rule_lifecycle.EDITABLE}:
        raise _refused(rule, "it can no longer be edited")
    if expected_revision is not None and expected_revision != rule.revision:
        raise Conflict(f"recurring rule #{rule.id} was changed meanwhile (revision {rule.revision}); reload it",
                       code="stale_revision", field="revision", revision_now=rule.revision)
    unknown = sorted(set(changes) - set(RULE_FIELDS))
    if unknown:
        raise InvalidInput(f"unknown field {unknown[0][:40]!r}", field=unknown[0][:40], code="unknown_field")
    zone = _zone(session, workspace_id)
    before = current_fields(session, rule)
    merged = {**before, **changes}
    definition = check_rule(session, workspace_id, merged, zone=zone, now=now, policy=policy)
    new_columns = definition.columns()
    changed = [name for name in rule_lifecycle.DEFINITION
               if name not in ("starts_at", "ends_at") and getattr(rule, name) != new_columns[name]]
    if not changed:
        return RuleChange(rule)
    old_recurrence = _recurrence(rule, zone, policy)
    earlier = earlier_things(rule, old_recurrence, now) if rule.status == RuleStatus.ACTIVE.value else set()
    old_type = rule.action_type
    _moved(rule_lifecycle.edit(session, rule, new_columns, now=now, actor=actor, changed=changed),
           "it can no longer be edited")
    change = RuleChange(rule, counts={"changed": changed})
    if rule.status == RuleStatus.ACTIVE.value:
        done = expand_rule(session, rule, now=now, policy=policy, actor=actor, since=now, earlier=earlier,
                           earlier_types={old_type}, recurrence=definition.recurrence)
        _expanded(change, done)
    return change


def pause_rule(session: Session, workspace_id: int, rule_id: int, *, note=None, actor: Actor, now: datetime,
               policy: Policy) -> RuleChange:
    """active → paused, with an optional note; its queued future rows are cancelled ``paused``. Pausing a
    paused rule changes nothing."""
    note = _note(note)
    rule = get_rule(session, workspace_id, rule_id, lock=True)
    if rule.status == RuleStatus.PAUSED.value:
        return RuleChange(rule)
    if rule.status != RuleStatus.ACTIVE.value:
        raise _refused(rule, "it cannot be paused")
    recurrence = _recurrence(rule, _zone(session, workspace_id), policy)
    why = f"rule #{rule.id} paused by {actor.label}" + (f": {note}" if note else "")
    cancelled = cancel_future_rows(session, rule, recurrence, now=now, actor=actor, kind=CancelKind.PAUSED, reason=why)
    _moved(rule_lifecycle.pause(session, rule, now=now, actor=actor, note=note), "it cannot be paused")
    return RuleChange(rule, counts={"cancelled": cancelled})


def resume_rule(session: Session, workspace_id: int, rule_id: int, *, actor: Actor, now: datetime,
                policy: Policy) -> RuleChange:
    """paused → active: the slots still in the future are minted again. Resuming an active rule changes nothing."""
    rule = get_rule(session, workspace_id, rule_id, lock=True)
    if rule.status == RuleStatus.ACTIVE.value:
        return RuleChange(rule)
    if rule.status != RuleStatus.PAUSED.value:
        raise _refused(rule, "it cannot be resumed")
    recurrence = _recurrence(rule, _zone(session, workspace_id), policy)
    _moved(rule_lifecycle.resume(session, rule, now=now, actor=actor), "it cannot be resumed")
    done = expand_rule(session, rule, now=now, policy=policy, actor=actor, since=now, recurrence=recurrence)
    return _expanded(RuleChange(rule), done)


def end_rule(session: Session, workspace_id: int, rule_id: int, *, note=None, actor: Actor, role: Role,
             now: datetime, policy: Policy) -> RuleChange:
    """active or paused → ended, for good (ops); its queued future rows are cancelled. Ending an ended
    rule changes nothing."""
    check_may_end(role)
    note = _note(note)
    rule = get_rule(session, workspace_id, rule_id, lock=True)
    if rule.status == RuleStatus.ENDED.value:
        return RuleChange(rule)
    cancelled = 0
    if rule.status == RuleStatus.ACTIVE.value:
        recurrence = _recurrence(rule, _zone(session, workspace_id), policy)
        why = f"rule #{rule.id} ended by {actor.label}" + (f": {note}" if note else "")
        cancelled = cancel_future_rows(session, rule, recurrence, now=now, actor=actor, kind=CancelKind.PERSON,
                                       reason=why)
    _moved(rule_lifecycle.end(session, rule, now=now, actor=actor, note=note), "it cannot be ended")
    return RuleChange(rule, counts={"cancelled": cancelled})


def run_rule_now(session: Session, workspace_id: int, rule_id: int, *, actor: Actor, now: datetime,
                 policy: Policy) -> RuleChange:
    """One row due now, origin ``person``, ``thing_id = rule:<id>:manual:<now>``; the window is left as it is."""
    rule = get_rule(session, workspace_id, rule_id, lock=True)
    if rule.status == RuleStatus.ENDED.value:
        raise _refused(rule, "it cannot run")
    zone = _zone(session, workspace_id)
    try:
        local = to_local(now, zone)
    except InvalidTimezone as exc:
        raise InvalidInput(f"the workspace's time zone is not valid: {exc}", field="timezone",
                           code="bad_zone") from None
    new = NewAction(action_type=rule.action_type, channel=session.get(Channel, rule.channel_id),
                    target_key=rule.target_key, payload=render_payload(rule.payload, occurrence_values(local)),
                    publish_at=now, thing_id=manual_thing_id(rule.id, now))
    try:
        row = insert_action(session, workspace_id, new, now=now, actor=actor, origin=Origin.PERSON,
                            recurring_schedule_id=rule.id, reason=f"Run Now of rule #{rule.id}")
    except (DuplicateActiveAction, PublishGuardViolation):
        raise Conflict(f"rule #{rule.id} was already run at {now:%H:%M:%S}; wait a moment and try again",
                       code="already_running") from None
    rule_lifecycle.record_run_now(session, rule, row.id, now=now, actor=actor)
    return RuleChange(rule, new_rows=[row])


def re_expand_after_zone_change(session: Session, workspace_id: int, now: datetime, actor: Actor,
                                policy: Policy) -> dict[str, int]:
    """The zone-change participant: every rule's instants re-derived, active rules' queued rows moved.

    Wall-time slots keep their key and move to their instant in the new zone (cancel +
    insert with lineage); sent slots are never minted again. Runs inside the transaction
    that wrote the new zone; a broken rule is a 422 and nothing moves.
    """
    zone = _zone(session, workspace_id)
    counts: Counter = Counter()
    rules = list(session.scalars(
        select(RecurringSchedule).where(RecurringSchedule.workspace_id == workspace_id,
                                        text("recurring_schedules.status IN ('active', 'paused')"))
        .order_by(RecurringSchedule.id).with_for_update().execution_options(populate_existing=True)))
    for rule in rules:
        recurrence = _recurrence(rule, zone, policy)
        earlier = earlier_things(rule, recurrence, now, zone_changed=True)
        rule.starts_at = resolve_wall_time(rule.starts_local.date(), rule.starts_local.time(), zone).instant
        rule.ends_at = recurrence.end_instant
        rule.updated_at = now
        session.flush()
        counts["rules"] += 1
        if rule.status == RuleStatus.ACTIVE.value:
            done = expand_rule(session, rule, now=now, policy=policy, actor=actor, since=now, earlier=earlier,
                               recurrence=recurrence)
            counts.update(done.counts)
    return {"rules": counts["rules"], "moved": counts["moved"], "minted": counts["minted"],
            "withdrawn": counts["withdrawn"]}
