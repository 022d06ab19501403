"""Creating, cancelling, rescheduling, retrying and listing scheduled actions.

These are the operations both shells call (the JSON API, the dashboard, the CLI). Status
changes go through :mod:`models.lifecycle`; this module decides which move to ask for and
turns refusals into :mod:`models.errors`. A wing that mints rows may refuse a person's
reschedule or retry of them through a change rule (:mod:`models.core.hooks`), which the
shells pass in as ``hooks``.
"""

import json
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from models.accounts.tables import Role
from models.actions import access, lifecycle
from models.actions.reading import get_action
from models.actions.tables import ACTIVE_STATUSES, CancelKind, Origin, ScheduledAction, Status
from models.channels.tables import Channel
from models.core.errors import Conflict, InvalidInput, NotFound, TooLarge
from models.core.hooks import Hooks
from models.actions.guard import (
    DuplicateActiveAction,
    PublishGuardViolation,
    classify_integrity_error,
)
from models.core.moves import Actor, Refusal, Refused
from models.core.policy import Policy


@dataclass(frozen=True)
class NewAction:
    """A validated request for one scheduled action."""

    action_type: str
    channel: Channel
    target_key: str
    payload: dict
    publish_at: datetime
    thing_id: str | None = None


def payload_size(payload) -> int:
    return len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode())


def check_payload(payload, policy: Policy) -> None:
    if not isinstance(payload, dict):
        raise InvalidInput("payload must be a JSON object", field="payload")
    if payload_size(payload) > policy.max_payload_bytes:
        raise TooLarge(f"payload is larger than {policy.max_payload_bytes // 1024} KiB", field="payload")


def check_publish_at(publish_at: datetime, now: datetime, policy: Policy, field: str = "publish_at") -> None:
    if publish_at < now - policy.past_tolerance:
        minutes = int(policy.past_tolerance.total_seconds() // 60)
        raise InvalidInput(f"{field} is more than {minutes} minutes in the past", field=field, code="in_the_past")


def find_active_sibling(session: Session, workspace_id: int, action_type: str, thing_id, target_key) -> ScheduledAction | None:
    if thing_id is None:
        return None
    return session.scalar(
        select(ScheduledAction).where(
            ScheduledAction.workspace_id == workspace_id,
            ScheduledAction.action_type == action_type,
            ScheduledAction.thing_id == thing_id,
            ScheduledAction.target_key == target_key,
            ScheduledAction.status.in_(ACTIVE_STATUSES),
        )
    )


def insert_action(
    session: Session,
    workspace_id: int,
    new: NewAction,
    *,
    now: datetime,
    actor: Actor,
    origin: Origin,
    rescheduled_from_id: int | None = None,
    recurring_schedule_id: int | None = None,
    reason: str | None = None,
    created_by_id: int | None = None,
) -> ScheduledAction:
    """Insert one queued row and its first event, in a savepoint so a refusal spoils nothing else.

    The row is created by ``actor``'s user, or by ``created_by_id`` when given (a recurring
    rule's rows are its creator's, whoever or whatever minted them).

    Raises :class:`DuplicateActiveAction` or :class:`PublishGuardViolation` when the database
    refuses the row.
    """
    row = ScheduledAction(
        workspace_id=workspace_id,
        created_by_id=created_by_id if created_by_id is not None else actor.user_id,
        action_type=new.action_type,
        thing_id=new.thing_id,
        target_key=new.target_key,
        channel_id=new.channel.id,
        payload=new.payload,
        publish_at=new.publish_at,
        status=Status.QUEUED.value,
        attempt_count=0,
        origin=origin.value,
        rescheduled_from_id=rescheduled_from_id,
        recurring_schedule_id=recurring_schedule_id,
        created_at=now,
        updated_at=now,
    )
    try:
        with session.begin_nested():
            session.add(row)
            session.flush()
    except IntegrityError as exc:
        typed = classify_integrity_error(exc)
        if typed is None:
            raise
        raise typed from exc
    lifecycle.record_creation(session, row, now=now, actor=actor, reason=reason)
    return row


def insert_actions(
    session: Session,
    workspace_id: int,
    news: list[NewAction],
    *,
    now: datetime,
    actor: Actor,
    origin: Origin,
    reason: str | None = None,
) -> list[ScheduledAction]:
    """Insert many queued rows and their first events in two statements, all or none (a wing minting a batch).

    The rows come back in the order of ``news``, detached, with their ids. If the database
    refuses any of them, nothing is inserted and the typed refusal is raised, as
    :func:`insert_action` would for that row; a caller then inserts them one by one to learn
    which.
    """
    if not news:
        return []
    values = [dict(workspace_id=workspace_id, created_by_id=actor.user_id, action_type=new.action_type,
                   thing_id=new.thing_id, target_key=new.target_key, channel_id=new.channel.id, payload=new.payload,
                   publish_at=new.publish_at, status=Status.QUEUED.value, attempt_count=0, origin=origin.value,
                   created_at=now, updated_at=now) for new in news]
    try:
        with session.begin_nested():
            ids = session.execute(insert(ScheduledAction.__table__).returning(
                ScheduledAction.__table__.c.id, sort_by_parameter_order=True), values).scalars().all()
    except IntegrityError as exc:
        typed = classify_integrity_error(exc)
        if typed is None:
            raise
        raise typed from exc
    rows = [ScheduledAction(id=ident, **value) for ident, value in zip(ids, values, strict=True)]
    lifecycle.record_creations(session, rows, now=now, actor=actor, reason=reason)
    return rows


def create_action(
    session: Session,
    workspace_id: int,
    new: NewAction,
    *,
    now: datetime,
    policy: Policy,
    actor: Actor,
    origin: Origin = Origin.PERSON,
    time_field: str = "publish_at",
) -> ScheduledAction:
    """Schedule ``new`` after checking its payload and time; a second active row for its key is a 409.
    ``time_field`` is the field the time was given in (``local_time``), which a refusal names."""
    check_payload(new.payload, policy)
    check_publish_at(new.publish_at, now, policy, field=time_field)
    try:
        row = insert_action(session, workspace_id, new, now=now, actor=actor, origin=origin, reason="created")
    except DuplicateActiveAction:
        existing = find_active_sibling(session, workspace_id, new.action_type, new.thing_id, new.target_key)
        raise Conflict(
            f"action #{existing.id if existing else '?'} is already active for this thing and target",
            code="duplicate_active",
            field="thing_id",
            existing_id=existing.id if existing else None,
        ) from None
    except PublishGuardViolation:
        raise Conflict(
            "this thing was already published to this target", code="already_published", field="thing_id"
        ) from None
    return row


def _refusal_error(outcome: Refused, action_id: int, verb: str) -> Exception:
    if outcome.reason is Refusal.NOT_FOUND:
        return NotFound(f"no action #{action_id} in this workspace")
    if outcome.reason is Refusal.ATTEMPTS_EXHAUSTED:
        return Conflict(f"cannot {verb} action #{action_id}: attempts exhausted", code="attempts_exhausted")
    return Conflict(
        f"cannot {verb} action #{action_id}: it is {outcome.status}", code="wrong_state", status_now=outcome.status
    )


def cancel_action(session: Session, workspace_id: int, action_id: int, *, now: datetime, actor: Actor,
                  role: Role) -> ScheduledAction:
    """A person's cancel. Cancelling a cancelled row changes nothing and is not an error."""
    access.check_may_cancel(role, actor.user_id, get_action(session, workspace_id, action_id))
    outcome = lifecycle.cancel(
        session, action_id, kind=CancelKind.PERSON, now=now, actor=actor, workspace_id=workspace_id,
        reason=f"cancelled by {actor.label}",
    )
    if outcome.ok:
        return outcome.row
    if outcome.reason is Refusal.WRONG_STATE and outcome.status == Status.CANCELLED.value:
        return outcome.row
    raise _refusal_error(outcome, action_id, "cancel")


def _refuse_by_rule(hooks: Hooks | None, session: Session, row: ScheduledAction, change: str) -> None:
    """Raise the refusal of the change rule the row's origin registered, if it has one and it says no."""
    refused = hooks.refusal(session, row, change) if hooks is not None else None
    if refused is not None:
        raise refused


# Rows a person may not move in time by themselves, by origin (the brief's "People acting on
# minted rows"): each follows something else, which is what moves them. Rows of other origins
# (a person's, a recurring rule's) are rescheduled as themselves.
NOT_RESCHEDULED_BY_ORIGIN = {
    Origin.RECONCILER.value: ("follows_post", "action #{id} follows post #{post}; move the post instead"),
    Origin.DRIP.value: ("follows_enrollment", "action #{id} is a drip send; it follows its enrollment"),
    Origin.SYSTEM.value: ("follows_notification",
                          "action #{id} sends notification {thing}; it is cancelled or retried, never moved"),
}


def reschedule_refusal(row: ScheduledAction) -> Conflict | None:
    """Why ``row`` may not be rescheduled as itself, decided by its origin; None when it may."""
    if row.origin not in NOT_RESCHEDULED_BY_ORIGIN:
        return None
    code, words = NOT_RESCHEDULED_BY_ORIGIN[row.origin]
    # A post's rows carry ``post:<id>`` (``post:<id>#<n>`` for a thread item): people read the id.
    post = (row.thing_id or "").split(":", 1)[-1].split("#", 1)[0]
    detail = {"post_id": int(post) if post.isdecimal() else row.thing_id} if code == "follows_post" else {}
    return Conflict(words.format(id=row.id, thing=row.thing_id, post=post), code=code, **detail)


def reschedule_action(
    session: Session, workspace_id: int, action_id: int, publish_at: datetime, *, now: datetime, policy: Policy,
    actor: Actor, role: Role, hooks: Hooks | None = None, time_field: str = "publish_at",
) -> ScheduledAction:
    """Cancel ``action_id`` (kind ``rescheduled``) and insert its replacement, in one transaction.

    Only the request whose own cancel flipped the row goes on to insert: a double click
    mints one new row, the second click gets a 409.
    """
    access.check_may_reschedule(role)
    old = get_action(session, workspace_id, action_id)
    refusal = reschedule_refusal(old)
    if refusal is not None:
        raise refusal
    _refuse_by_rule(hooks, session, old, "reschedule")
    check_publish_at(publish_at, now, policy, field=time_field)
    outcome = lifecycle.cancel(
        session, action_id, kind=CancelKind.RESCHEDULED, now=now, actor=actor, workspace_id=workspace_id,
        reason=f"rescheduled to {publish_at.isoformat()}",
    )
    if not outcome.ok:
        raise _refusal_error(outcome, action_id, "reschedule")
    old = outcome.row
    replacement = NewAction(
        action_type=old.action_type,
        channel=session.get(Channel, old.channel_id),
        target_key=old.target_key,
        payload=old.payload,
        publish_at=publish_at,
        thing_id=old.thing_id,
    )
    try:
        return insert_action(
            session, workspace_id, replacement, now=now, actor=actor, origin=Origin.PERSON,
            rescheduled_from_id=old.id, recurring_schedule_id=old.recurring_schedule_id,
            reason=f"rescheduled from #{old.id}",
        )
    except PublishGuardViolation:
        raise Conflict("this thing was already published to this target", code="already_published") from None


def retry_action(
    session: Session, workspace_id: int, action_id: int, *, now: datetime, policy: Policy, actor: Actor, role: Role,
    hooks: Hooks | None = None,
) -> ScheduledAction:
    """An admin's retry of a failed row: the same row, queued and due now."""
    access.check_may_retry(role)
    if hooks is not None and hooks.change_rules:
        _refuse_by_rule(hooks, session, get_action(session, workspace_id, action_id), "retry")
    try:
        outcome = lifecycle.retry(
            session, action_id, now=now, actor=actor, workspace_id=workspace_id, max_attempts=policy.max_attempts
        )
    except PublishGuardViolation:
        raise Conflict(
            f"cannot retry action #{action_id}: this thing was already published to this target",
            code="already_published",
        ) from None
    except DuplicateActiveAction:
        raise Conflict(
            f"cannot retry action #{action_id}: another action for this thing and target is already active",
            code="duplicate_active",
        ) from None
    if not outcome.ok:
        raise _refusal_error(outcome, action_id, "retry")
    return outcome.row
