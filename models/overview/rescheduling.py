"""Rescheduling many queued rows at once, by the queue's filters: shift them by a duration or
move them to a date, as cancel + insert with lineage.

It combines two floors, so it lives on the top one: a row of its own is rescheduled as
itself (:func:`models.actions.scheduling.reschedule_action`); a row minted from a post moves
through its post (:func:`models.posts.operations.move_post`), and a post's rows move together,
every target, even those the filter did not match. Rows that follow something else (drip
sends, notifications; decided by origin in :func:`~models.actions.scheduling.reschedule_refusal`)
are refused and listed with their reason, as are rows whose new time would be in the past.

| the shift | a row's new local time                                                        |
|-----------|-------------------------------------------------------------------------------|
| ``Nd``    | N calendar days later (or earlier), the same local wall time, across DST       |
| ``Nh Nm`` | that much elapsed time later (or earlier), read back as a local wall time     |
| a date    | that date, the same local wall time                                            |

The plan is made once for the preview and made again, fresh, when it is carried out; each
row or post moves in its own savepoint, so a refusal spoils nothing else.
"""

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.accounts.tables import Role
from models.actions.access import check_may_reschedule
from models.actions.scheduling import check_publish_at, reschedule_action, reschedule_refusal
from models.actions.tables import Origin, ScheduledAction, Status
from models.core.errors import DomainError
from models.core.moves import Actor
from models.core.policy import Policy
from models.core.time_input import resolve_typed
from models.posts.operations import StayedTarget, check_move, move_post
from models.posts.reading import posts_by_id, post_rows
from models.posts.tables import Post, PostStatus, post_id_of
from models.timing.wall_time import to_local


@dataclass(frozen=True)
class Shift:
    """How far to move: calendar ``days`` and elapsed ``minutes``, or to ``to_date`` (same wall time)."""

    days: int = 0
    minutes: int = 0
    to_date: date | None = None


def shifted(day: date, at: time, zone: str, shift: Shift) -> tuple[date, time]:
    """The local wall date and time that ``day`` ``at`` becomes under ``shift``."""
    if shift.to_date is not None:
        return shift.to_date, at
    day = day + timedelta(days=shift.days)
    if not shift.minutes:
        return day, at
    local = to_local(resolve_typed(day, at, zone, "shift").instant + timedelta(minutes=shift.minutes), zone)
    return local.date(), local.time().replace(second=0, microsecond=0)


@dataclass
class RowMove:
    row: ScheduledAction
    wall_date: date
    wall_time: time
    instant: datetime


@dataclass
class PostMove:
    post: Post
    matched: list[ScheduledAction]  # the rows the filter matched
    targets: int  # the post's queued rows, all of which move
    wall_date: date
    wall_time: time


@dataclass(frozen=True)
class RefusedRow:
    row_id: int
    reason: str


@dataclass
class ReschedulePlan:
    """What a bulk reschedule would do: rows moved as themselves, posts moved whole, rows refused."""

    rows: list[RowMove] = field(default_factory=list)
    posts: list[PostMove] = field(default_factory=list)
    refused: list[RefusedRow] = field(default_factory=list)

    @property
    def matched(self) -> int:
        return len(self.rows) + sum(len(p.matched) for p in self.posts) + len(self.refused)

    @property
    def post_rows(self) -> int:
        return sum(p.targets for p in self.posts)


def plan_reschedule(session: Session, workspace_id: int, ids: list[int], shift: Shift, *, zone: str,
                    now: datetime, policy: Policy) -> ReschedulePlan:
    """Decide, without writing, where each queued row among ``ids`` (and each post they follow) would go."""
    plan = ReschedulePlan()
    rows = list(session.scalars(select(ScheduledAction).where(
        ScheduledAction.workspace_id == workspace_id, ScheduledAction.id.in_(ids),
        ScheduledAction.status == Status.QUEUED.value).order_by(ScheduledAction.publish_at, ScheduledAction.id)))
    of_posts: dict[int, list[ScheduledAction]] = {}
    for row in rows:
        post_id = post_id_of(row.thing_id) if row.origin == Origin.RECONCILER.value else None
        if post_id is not None:
            of_posts.setdefault(post_id, []).append(row)
            continue
        refusal = reschedule_refusal(row)
        if refusal is not None:
            plan.refused.append(RefusedRow(row.id, refusal.message))
            continue
        local = to_local(row.publish_at, zone)
        try:
            wall_date, wall_time = shifted(local.date(), local.time(), zone, shift)
            instant = resolve_typed(wall_date, wall_time, zone, "shift").instant
            check_publish_at(instant, now, policy, field="shift")
        except DomainError as error:
            plan.refused.append(RefusedRow(row.id, f"its new time: {error.message}"))
            continue
        plan.rows.append(RowMove(row, wall_date, wall_time, instant))
    posts = posts_by_id(session, workspace_id, of_posts)
    all_rows = post_rows(session, workspace_id, list(posts))
    for post_id, matched in of_posts.items():
        post = posts.get(post_id)
        reason = None
        if post is None:
            reason = f"its post #{post_id} no longer exists"
        elif post.status == PostStatus.DRAFT.value:
            reason = f"post #{post_id} is a draft; its rows are being withdrawn"
        else:
            try:
                wall_date, wall_time = shifted(post.wall_date, post.wall_time, zone, shift)
                check_move(session, post, wall_date, wall_time, now=now, policy=policy)
            except DomainError as error:
                reason = f"post #{post_id} cannot move: {error.message}"
        if reason is not None:
            plan.refused.extend(RefusedRow(row.id, reason) for row in matched)
            continue
        queued = sum(1 for row in all_rows[post_id] if row.status == Status.QUEUED.value)
        plan.posts.append(PostMove(post, matched, queued, wall_date, wall_time))
    return plan


@dataclass
class Rescheduled:
    """What a bulk reschedule did."""

    rows: int = 0
    posts: int = 0
    new_rows: list[ScheduledAction] = field(default_factory=list)
    stayed: list[tuple[int, StayedTarget]] = field(default_factory=list)  # (post id, target left in place)
    refused: list[RefusedRow] = field(default_factory=list)


def reschedule_matching(session: Session, workspace_id: int, ids: list[int], shift: Shift, *, zone: str,
                        actor: Actor, role: Role, now: datetime, policy: Policy) -> Rescheduled:
    """Plan again and carry it out: each row, and each post, in a savepoint of its own."""
    check_may_reschedule(role)
    plan = plan_reschedule(session, workspace_id, ids, shift, zone=zone, now=now, policy=policy)
    done = Rescheduled(refused=list(plan.refused))
    for move in plan.rows:
        savepoint = session.begin_nested()
        try:
            done.new_rows.append(reschedule_action(session, workspace_id, move.row.id, move.instant, now=now,
                                                   policy=policy, actor=actor, role=role))
        except DomainError as error:
            savepoint.rollback()
            done.refused.append(RefusedRow(move.row.id, error.message))
            continue
        savepoint.commit()
        done.rows += 1
    for move in plan.posts:
        savepoint = session.begin_nested()
        try:
            moved = move_post(session, workspace_id, move.post.id, wall_date=move.wall_date,
                              wall_time=move.wall_time, actor=actor, role=role, now=now, policy=policy)
        except DomainError as error:
            savepoint.rollback()
            done.refused.extend(RefusedRow(row.id, error.message) for row in move.matched)
            continue
        savepoint.commit()
        done.posts += 1
        done.new_rows.extend(moved.new_rows)
        done.stayed.extend((move.post.id, target) for target in moved.stayed)
    return done
