"""What people do to posts: create, edit, move, approve, unapprove, archive, Post now.

The operations here (:func:`create_post`, :func:`update_post`, :func:`move_post`,
:func:`approve_post`, :func:`unapprove_post`, :func:`archive_post`, :func:`post_now`) are what
both shells call.
Each takes a session inside a write transaction (``models.core.database.write_session``), the
workspace id, the actor, ``now`` and the policy; each raises :mod:`models.core.errors` types and
changes nothing when it does. Approve and edit reconcile the post at once, through the same
code the periodic reconciler runs (:func:`models.posts.reconciler.reconcile_post`).
"""

from dataclasses import dataclass, field
from datetime import date, datetime, time

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.accounts.workspaces import workspace_zone
from models.actions import lifecycle
from models.actions.guard import DuplicateActiveAction, PublishGuardViolation
from models.actions.scheduling import NewAction, insert_action
from models.actions.tables import ACTIVE_STATUSES, CancelKind, Origin, ScheduledAction, Status
from models.channels.tables import Channel
from models.core.errors import Conflict, InvalidInput
from models.core.moves import Actor
from models.core.policy import Policy
from models.accounts.tables import Role
from models.posts import lifecycle as post_lifecycle
from models.posts.access import check_may_move_post
from models.posts.checks import check_content, check_targets, check_texts, check_wall_time
from models.posts.reconciler import reconcile_post
from models.posts.review import (CommentKind, changed_parts, check_may_approve, record_step, return_to_review,
                                 what_goes_out)
from models.posts.reading import get_post, post_payload, post_rows, post_targets
from models.posts.tables import ACTION_TYPE, TERMINAL_POST_STATUSES, Post, PostStatus, PostTarget
from models.posts.threads import check_first_comment, check_thread, follow_up_rows
from models.timing.wall_time import InvalidTimezone, ResolvedTime


@dataclass
class PostChange:
    """A post after an operation, with the rows the operation inserted and a wall-time note."""

    post: Post
    new_rows: list[ScheduledAction] = field(default_factory=list)
    note: str | None = None
    counts: dict = field(default_factory=dict)
    returned_to_review: bool = False  # an edit of what it sends took it from approved back to review


def create_post(
    session: Session,
    workspace_id: int,
    *,
    body,
    targets,
    wall_date: date,
    wall_time: time,
    media=None,
    variants=None,
    thread=None,
    first_comment=None,
    from_queue: bool = False,
    actor: Actor,
    now: datetime,
    policy: Policy,
) -> PostChange:
    """Create a draft post after checking everything: targets, time, each target's own body and media
    (its variant's where ``variants`` gives it one), and its thread and first comment against the
    targets that take them (:mod:`models.posts.threads`).

    ``from_queue`` says its wall time is a posting slot it took (:mod:`models.posts.queue`).
    """
    channels = check_targets(session, workspace_id, targets)
    body, media, variants = check_content(session, workspace_id, body, media, variants, channels)
    thread = check_thread(session, workspace_id, thread, channels)
    first_comment = check_first_comment(session, workspace_id, first_comment, channels)
    resolved = check_wall_time(wall_date, wall_time, workspace_zone(session, workspace_id), now, policy)
    post = Post(
        workspace_id=workspace_id,
        created_by_id=actor.user_id,
        body=body,
        media=media,
        variants=variants,
        thread=thread,
        first_comment=first_comment,
        wall_date=wall_date,
        wall_time=wall_time,
        from_queue=from_queue,
        status=PostStatus.DRAFT.value,
        revision=1,
        created_at=now,
        updated_at=now,
    )
    session.add(post)
    session.flush()
    post_lifecycle.record_creation(session, post, now=now, actor=actor)
    for channel in channels:
        session.add(PostTarget(post_id=post.id, channel_id=channel.id))
    session.flush()
    return PostChange(post, note=resolved.note)


_UNSET = object()


def update_post(
    session: Session,
    workspace_id: int,
    post_id: int,
    *,
    body=_UNSET,
    targets=_UNSET,
    wall_date: date | None = None,
    wall_time: time | None = None,
    media=_UNSET,
    variants=_UNSET,
    thread=_UNSET,
    first_comment=_UNSET,
    from_queue: bool = False,
    actor: Actor,
    now: datetime,
    policy: Policy,
) -> PostChange:
    """Change a draft or approved post's body, media, variants, thread, first comment, wall time or targets, then
    reconcile it.

    Fields left out keep their value; ``variants`` given replaces them all (None: none). A
    variant of a target the edit removes goes with it. An approved post stays approved: its
    rows follow the edit in the same transaction (moved, inserted or withdrawn by the
    reconciler's rules; a target whose own content changed gets a new row) — unless the workspace
    requires review and the edit changed what the post sends (not only its time): then it returns
    to review and its queued rows are withdrawn (:func:`models.posts.review.return_to_review`), and
    the change's note says so.
    A new wall time takes the post out of the queue unless ``from_queue`` says it is a slot.
    """
    post = get_post(session, workspace_id, post_id, lock=True)
    _refuse_if_terminal(post, "it can no longer be edited")
    current = post_targets(session, post.id)
    before = what_goes_out(post, current)
    channels = check_targets(session, workspace_id, targets) if targets is not _UNSET else current
    if variants is _UNSET:
        kept = {channel.name for channel in channels}
        variants = {name: own for name, own in (post.variants or {}).items() if name in kept} or None
    new_body, new_media, new_variants = check_content(
        session, workspace_id, post.body if body is _UNSET else body, post.media if media is _UNSET else media,
        variants, channels)
    # Checked again on new targets too: a target without replies or comments refuses the post's thread.
    new_thread = check_thread(session, workspace_id, post.thread if thread is _UNSET else thread, channels)
    new_comment = check_first_comment(session, workspace_id,
                                      post.first_comment if first_comment is _UNSET else first_comment, channels)
    note = None
    if wall_date is not None or wall_time is not None:
        if wall_date is None or wall_time is None:
            raise InvalidInput("give the date and the time together", field="local_time", code="missing")
        note = check_wall_time(wall_date, wall_time, workspace_zone(session, workspace_id), now, policy).note
        if from_queue or (wall_date, wall_time) != (post.wall_date, post.wall_time):
            post.from_queue = from_queue  # a time of one's own takes it out of the queue; the same one does not
        post.wall_date, post.wall_time = wall_date, wall_time
    post.body, post.media, post.variants = new_body, new_media, new_variants
    post.thread, post.first_comment = new_thread, new_comment
    if targets is not _UNSET:
        _replace_targets(session, post.id, channels)
    post.revision += 1
    post.updated_at = now
    session.flush()
    if wall_date is not None:
        redraft_if_expired(session, post, actor=actor, now=now)
    parts = changed_parts(before, what_goes_out(post, channels))
    withdrawn = None
    if return_to_review(session, post, parts, actor=actor, now=now):
        withdrawn = _withdraw_queued(session, post, actor=actor, now=now,
                                     reason=f"post #{post.id} changed after approval by {actor.label}; back to review")
    change = _reconcile(session, post, actor=actor, now=now, policy=policy)
    if withdrawn is not None:
        change.counts["withdrawn"] = withdrawn
        change.returned_to_review = True
        back = (f"Post #{post.id} changed after it was approved ({', '.join(parts)}) and this workspace requires "
                f"review: it is back in review, {withdrawn} queued row{'' if withdrawn == 1 else 's'} withdrawn, "
                "until an admin or a reviewer approves it again.")
        note = f"{note} {back}" if note else back
    change.note = note
    return change


def _withdraw_queued(session: Session, post: Post, *, actor: Actor, now: datetime, reason: str) -> int:
    """Cancel the post's queued rows (kind ``orphaned``, whatever their age: approving again mints them again); rows
    being sent finish. How many were withdrawn."""
    withdrawn = 0
    for row in post_rows(session, post.workspace_id, [post.id])[post.id]:
        if row.status == Status.QUEUED.value:
            outcome = lifecycle.cancel(session, row.id, workspace_id=post.workspace_id, kind=CancelKind.ORPHANED,
                                       now=now, actor=actor, reason=reason)
            withdrawn += outcome.ok
    return withdrawn


def redraft_if_expired(session: Session, post: Post, *, actor: Actor, now: datetime) -> None:
    """A new time returns an expired post to draft, to be submitted again (see models.posts.review)."""
    if post.status == PostStatus.EXPIRED.value:
        _moved(post_lifecycle.redraft(session, post, now=now, actor=actor), "it cannot return to draft")


@dataclass(frozen=True)
class StayedTarget:
    """A target a move left where it was: its latest row's status, and when that happened
    (sent, claimed, failed, cancelled; for a person's queued row, when it is due)."""

    channel: str
    status: str
    at: datetime | None


@dataclass(frozen=True)
class UndoGuard:
    """What undoing a move expects to find: the post at the revision the move left it, and
    every row the move queued still queued. Anything else means the world moved on."""

    revision: int
    row_ids: tuple[int, ...] = ()


@dataclass
class PostMoved:
    """A post after :func:`move_post`: where it was, where it is, which targets moved and which stayed."""

    post: Post
    previous: tuple[date, time]
    resolved: ResolvedTime
    new_rows: list[ScheduledAction] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    stayed: list[StayedTarget] = field(default_factory=list)
    unchanged: bool = False

    @property
    def undo(self) -> UndoGuard:
        """The guard an undo of this move carries."""
        return UndoGuard(revision=self.post.revision, row_ids=tuple(row.id for row in self.new_rows))


def move_post(
    session: Session,
    workspace_id: int,
    post_id: int,
    *,
    wall_date: date,
    wall_time: time,
    actor: Actor,
    role: Role,
    now: datetime,
    policy: Policy,
    guard: UndoGuard | None = None,
) -> PostMoved:
    """Move a draft or approved post (every target) to another wall date and time.

    The same change as editing the post's time (:func:`update_post`): queued targets move by
    the reconciler's rules (cancel + insert with lineage), sent and in-flight ones stay, and
    the result says which did what. A published or archived post, or a time in the past, is
    refused and nothing changes. With ``guard`` (an undo), the move is refused as a whole
    unless the post is still at the guarded revision and every guarded row is still queued,
    and then moves them all or nothing.
    """
    check_may_move_post(role)
    post = get_post(session, workspace_id, post_id, lock=True)
    previous = (post.wall_date, post.wall_time)
    resolved = check_move(session, post, wall_date, wall_time, now=now, policy=policy)
    if guard is not None:
        _check_undo_guard(session, post, guard)
    elif (wall_date, wall_time) == previous:
        return PostMoved(post, previous, resolved, unchanged=True)
    change = update_post(session, workspace_id, post_id, wall_date=wall_date, wall_time=wall_time, actor=actor,
                         now=now, policy=policy)
    rows = post_rows(session, workspace_id, [post_id])[post_id]
    if guard is not None:
        by_id = {row.id: row for row in rows}
        for row_id in guard.row_ids:
            if by_id[row_id].status != Status.CANCELLED.value:
                # Claimed between our look and our cancel: the whole undo is refused, and rolled back.
                raise _claimed_meanwhile(by_id[row_id])
    moved, stayed = _target_outcomes(post_targets(session, post_id), rows, resolved.instant)
    return PostMoved(change.post, previous, resolved, new_rows=change.new_rows, moved=moved, stayed=stayed)


def check_move(session: Session, post: Post, wall_date: date, wall_time: time, *, now: datetime,
               policy: Policy) -> ResolvedTime:
    """Where ``post`` would land at this wall date and time (with the DST note), or why it cannot
    move there; writes nothing. The calendar shows it while a chip is dragged."""
    _refuse_if_terminal(post, "it can no longer be moved")
    return check_wall_time(wall_date, wall_time, workspace_zone(session, post.workspace_id), now, policy)


def _check_undo_guard(session: Session, post: Post, guard: UndoGuard) -> None:
    if post.revision != guard.revision:
        raise Conflict(f"post #{post.id} was changed after that move; nothing was moved back",
                       code="changed_since")
    rows = {row.id: row for row in post_rows(session, post.workspace_id, [post.id])[post.id]}
    for row_id in guard.row_ids:
        row = rows.get(row_id)
        if row is None:
            raise InvalidInput(f"action #{row_id} is not a row of post #{post.id}", field="rows",
                               code="unknown_row")
        if row.status != Status.QUEUED.value:
            raise _claimed_meanwhile(row)


def _claimed_meanwhile(row: ScheduledAction) -> Conflict:
    words = {Status.SUBMITTED.value: "is being sent", Status.PUBLISHED.value: "was sent",
             Status.FAILED.value: "failed", Status.CANCELLED.value: "was cancelled"}.get(row.status, row.status)
    return Conflict(f"{row.target_key} {words} meanwhile; nothing was moved back", code="claimed_meanwhile",
                    status_now=row.status)


def _target_outcomes(targets: list[Channel], rows: list[ScheduledAction],
                     instant: datetime) -> tuple[list[str], list[StayedTarget]]:
    """Each target's fate after a move, read from its latest row: at the new instant, or where it stayed."""
    latest: dict[str, ScheduledAction] = {}
    for row in rows:
        latest[row.target_key] = row  # rows come oldest first
    moved, stayed = [], []
    for channel in targets:
        row = latest.get(channel.name)
        if row is None:
            continue  # a draft keeps no rows
        if row.status == Status.QUEUED.value and row.origin == Origin.RECONCILER.value and row.publish_at == instant:
            moved.append(channel.name)
            continue
        at = {Status.SUBMITTED.value: row.submitted_at, Status.QUEUED.value: row.publish_at}.get(
            row.status, row.finished_at)
        stayed.append(StayedTarget(channel.name, row.status, at))
    return moved, stayed


def _replace_targets(session: Session, post_id: int, channels: list[Channel]) -> None:
    wanted = {channel.id for channel in channels}
    current = list(session.scalars(select(PostTarget).where(PostTarget.post_id == post_id)))
    for target in current:
        if target.channel_id not in wanted:
            session.delete(target)
    have = {target.channel_id for target in current}
    for channel in channels:
        if channel.id not in have:
            session.add(PostTarget(post_id=post_id, channel_id=channel.id))
    session.flush()


def _refuse_if_terminal(post: "Post", what: str) -> None:
    """Published and archived posts are final: refuse the change with a 409 naming the status."""
    if post.status in TERMINAL_POST_STATUSES:
        raise _refused(post.id, post.status, what)


def _refused(post_id: int, status: str, what: str) -> Conflict:
    return Conflict(f"post #{post_id} is {status}; {what}", code="wrong_state", status_now=status)


def _moved(outcome, what: str) -> Post:
    """The post a lifecycle move left, or the 409 its refusal is."""
    if not outcome.ok:
        raise _refused(outcome.row.id, outcome.status, what)
    return outcome.row


def approve_post(
    session: Session, workspace_id: int, post_id: int, *, actor: Actor, now: datetime, policy: Policy,
    role: Role | None = None, comment: str | None = None, address: str | None = None,
) -> PostChange:
    """draft (or in_review) → approved, and its rows are queued at once. Approving an approved post changes nothing.

    With ``role``, the review rules apply (:func:`models.posts.review.check_may_approve`); an outside
    reviewer's approval comes with its link already checked.
    """
    post = get_post(session, workspace_id, post_id, lock=True)
    _refuse_if_terminal(post, "it cannot be approved")
    if post.status == PostStatus.APPROVED.value:
        return PostChange(post)
    if role is not None:
        check_may_approve(session, post, role, actor)
    reviewed = post.status == PostStatus.IN_REVIEW.value
    channels = post_targets(session, post.id)
    check_texts(post.body, post.variants, channels)
    resolved = check_wall_time(post.wall_date, post.wall_time, workspace_zone(session, workspace_id), now, policy)
    _moved(post_lifecycle.approve(session, post, now=now, actor=actor, comment=comment), "it cannot be approved")
    if reviewed or comment:
        record_step(session, post, kind=CommentKind.APPROVE, actor=actor, body=comment, now=now, address=address)
    change = _reconcile(session, post, actor=actor, now=now, policy=policy)
    change.note = resolved.note
    return change


def unapprove_post(
    session: Session, workspace_id: int, post_id: int, *, actor: Actor, now: datetime, policy: Policy
) -> PostChange:
    """approved → draft, and its queued rows are cancelled in the same transaction (kind ``orphaned``).

    A person's withdrawal is not the reconciler's removal: the age gate does not apply, and the
    kind is ``orphaned``, not ``person``, so approving again mints the rows again (a ``person``
    cancel would stand under the terminal-history gate). Rows being sent finish.
    """
    post = get_post(session, workspace_id, post_id, lock=True)
    _refuse_if_terminal(post, "it cannot be unapproved")
    if post.status == PostStatus.DRAFT.value:
        return PostChange(post)
    _moved(post_lifecycle.unapprove(session, post, now=now, actor=actor), "it cannot be unapproved")
    withdrawn = _withdraw_queued(session, post, actor=actor, now=now,
                                 reason=f"post #{post.id} back to draft by {actor.label}")
    change = _reconcile(session, post, actor=actor, now=now, policy=policy)
    change.counts["withdrawn"] = withdrawn
    return change


def archive_post(
    session: Session, workspace_id: int, post_id: int, *, actor: Actor, now: datetime, policy: Policy
) -> PostChange:
    """Archive the post and cancel its queued rows at once (kind ``person``); rows being sent finish."""
    post = get_post(session, workspace_id, post_id, lock=True)
    if post.status == PostStatus.ARCHIVED.value:
        return PostChange(post)
    cancelled = 0
    # Its thread's queued items and first comment too: a thread stops where it is.
    for row in post_rows(session, workspace_id, [post.id])[post.id] + follow_up_rows(session, workspace_id, post.id):
        if row.status == Status.QUEUED.value:
            outcome = lifecycle.cancel(
                session, row.id, workspace_id=workspace_id, kind=CancelKind.PERSON, now=now, actor=actor,
                reason=f"post #{post.id} archived by {actor.label}",
            )
            cancelled += outcome.ok
    _moved(post_lifecycle.archive(session, post, now=now, actor=actor, reason=f"archived by {actor.label}"),
           "it cannot be archived")
    return PostChange(post, counts={"cancelled": cancelled})


def post_now(
    session: Session,
    workspace_id: int,
    post_id: int,
    *,
    channel: str | None = None,
    actor: Actor,
    now: datetime,
    policy: Policy,
) -> PostChange:
    """Send the approved post (or its target ``channel``) now.

    A post that is not approved is refused (409 ``not_approved``): a draft sent behind its own
    back would look like a draft that still waits. Each target's queued row is cancelled (kind
    ``rescheduled``) and a row due now is inserted in its place, origin ``person``, pointing
    back to it. Targets already published or being sent are left as they are; if that leaves
    nothing to send, 409.
    """
    post = get_post(session, workspace_id, post_id, lock=True)
    if post.status != PostStatus.APPROVED.value:
        raise Conflict(f"post #{post.id} is {post.status}; approve it before sending it now", code="not_approved",
                       status_now=post.status)
    channels = post_targets(session, post.id)
    if channel is not None:
        channels = [c for c in channels if c.name == channel]
        if not channels:
            raise InvalidInput(f"{channel!r} is not a target of post #{post_id}", field="channel",
                               code="unknown_target")
    check_texts(post.body, post.variants, channels)
    rows = post_rows(session, workspace_id, [post.id])[post.id]
    active = {row.target_key: row for row in rows if row.status in ACTIVE_STATUSES}
    new_rows, refusals = [], []
    for target in channels:
        old = active.get(target.name)
        if old is not None and old.status == Status.SUBMITTED.value:
            refusals.append(f"{target.name} is being sent")
            continue
        if old is not None:
            outcome = lifecycle.cancel(session, old.id, kind=CancelKind.RESCHEDULED, now=now, actor=actor,
                                       workspace_id=workspace_id,
                                       reason="replaced by Post now")
            if not outcome.ok:
                refusals.append(f"{target.name} is {outcome.status}")
                continue
        new = NewAction(action_type=ACTION_TYPE, channel=target, target_key=target.name,
                        payload=post_payload(post, target.name), publish_at=now, thing_id=post.thing_id)
        try:
            row = insert_action(session, workspace_id, new, now=now, actor=actor, origin=Origin.PERSON,
                                rescheduled_from_id=old.id if old is not None else None, reason="Post now")
        except PublishGuardViolation:
            if old is not None:
                # A legacy duplicate: the queued row sat beside a published sibling.
                raise Conflict(f"{target.name} was already published", code="already_published") from None
            refusals.append(f"{target.name} was already published")
            continue
        except DuplicateActiveAction:
            refusals.append(f"{target.name} already has an active row")
            continue
        new_rows.append(row)
    if not new_rows:
        raise Conflict(f"nothing to send now: {'; '.join(refusals)}", code="nothing_to_send",
                       field="channel" if channel else None)
    post.updated_at = now
    session.flush()
    return PostChange(post, new_rows=new_rows, counts={"skipped": refusals})


def _reconcile(session, post, *, actor, now, policy) -> PostChange:
    try:
        result = reconcile_post(session, post.workspace_id, post.id, now=now, policy=policy, actor=actor)
    except InvalidTimezone as exc:
        raise InvalidInput(
            f"the workspace's time zone is not valid: {exc}", field="timezone", code="bad_zone"
        ) from None
    return PostChange(result.post, new_rows=result.new_rows, counts=dict(result.counts))
