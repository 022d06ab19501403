"""The review step: who may submit, approve and request changes, the comment thread on a post,
and the expiry of posts still in review when their time passes.

| step            | who may                                                          | while review is |
|-----------------|------------------------------------------------------------------|-----------------|
| submit          | whoever composes (marketers, ops, admins)                        | either          |
| approve         | whoever composes or reviews                                      | off             |
| approve         | admins and reviewers, never the post's author, from ``in_review`` only | required  |
| request changes | admins and reviewers, with a comment, from ``in_review``         | either          |
| comment         | every member                                                     | either          |

Each step is one move of :mod:`models.posts.lifecycle` (its event carries the comment) and
one entry of the post's thread (``post_comments``), in the same transaction.

**An edit after approval.** What a reviewer approves is what the post sends: its text, media,
variants, thread, first comment and targets (:func:`what_goes_out`). While review is required, an
edit that changes any of them on an approved post returns it to ``in_review``
(:func:`return_to_review`, called by ``update_post`` in the edit's transaction): its queued rows
are withdrawn as an unapprove withdraws them (kind ``orphaned``, so approving again mints them
again), the thread records the step, and the answer says so. A new time alone is not such a
change: the post stays approved and its rows move (the calendar's drag, the queue's "next", a
new date typed in the composer), since when a post goes out is the scheduler's part, not what
was reviewed. Whoever edits, an admin or a reviewer included, sends it back: nobody's change
goes out unseen, and an admin or a reviewer who is not the post's author may approve the new
revision at once (the author never may).
"""

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.accounts.permissions import Permission, can, refusal
from models.accounts.tables import Role, User, Workspace
from models.core.errors import Conflict, Forbidden, InvalidInput
from models.core.moves import Actor
from models.core.policy import Policy
from models.notifications.inbox import raise_notification
from models.posts import lifecycle as post_lifecycle
from models.posts.checks import check_texts, check_wall_time
from models.posts.reading import get_post, post_targets, resolve_post_time
from models.posts.tables import Post, PostComment, PostStatus
from models.channels.tables import Channel
from models.timing.wall_time import InvalidTimezone

REVIEW_SETTINGS = ("off", "required")
MAX_COMMENT = 2000


class CommentKind:
    COMMENT = "comment"
    SUBMIT = "submit"
    APPROVE = "approve"
    REQUEST_CHANGES = "request_changes"


def review_required(session: Session, workspace_id: int) -> bool:
    """Whether the workspace's posts go through review before they are approved."""
    return session.scalar(select(Workspace.review).where(Workspace.id == workspace_id)) == "required"


def check_comment(text, *, required: bool) -> str | None:
    """A comment as kept: stripped, at most 2,000 characters; refused when required and empty."""
    if text is None or (isinstance(text, str) and not text.strip()):
        if required:
            raise InvalidInput("say what should change: a comment is required", field="comment", code="missing")
        return None
    if not isinstance(text, str) or "\x00" in text:
        raise InvalidInput("a comment is text", field="comment")
    text = text.strip()
    if len(text) > MAX_COMMENT:
        raise InvalidInput(f"a comment is at most {MAX_COMMENT} characters", field="comment", code="too_long")
    return text


def check_may_approve(session: Session, post: Post, role: Role | None, actor: Actor) -> None:
    """Forbidden (or 409) unless this person may approve ``post`` now; ``role`` None is an outside reviewer,
    whose link was checked already."""
    if role is not None and not can(role, Permission.APPROVE):
        raise Forbidden(refusal(Permission.APPROVE, "approve a post"))
    if not review_required(session, post.workspace_id):
        return
    if role is not None and not can(role, Permission.REVIEW):
        raise Forbidden("While review is required, only admins and reviewers approve; submit it for review.",
                        code="review_required")
    if actor.user_id is not None and post.created_by_id == actor.user_id:
        raise Forbidden("An author never approves their own post; another reviewer must.", code="own_post")
    if post.status == PostStatus.DRAFT.value:
        raise Conflict(f"post #{post.id} is a draft; it is submitted for review before it is approved",
                       code="not_submitted", status_now=post.status)


def record_step(session: Session, post: Post, *, kind: str, actor: Actor, body: str | None, now: datetime,
                address: str | None = None) -> PostComment:
    """One entry of the post's thread: a comment, or the words that came with a review step."""
    entry = PostComment(post_id=post.id, author_user_id=actor.user_id, author=actor.label[:255], kind=kind,
                        body=body or "", post_revision=post.revision, address=address, created_at=now)
    session.add(entry)
    session.flush()
    return entry


def _refused(post: Post, what: str) -> Conflict:
    return Conflict(f"post #{post.id} is {post.status}; {what}", code="wrong_state", status_now=post.status)


def submit_post(session: Session, workspace_id: int, post_id: int, *, actor: Actor, role: Role, now: datetime,
                policy: Policy, comment=None) -> Post:
    """draft → in_review, after the checks approval would make (each target's own text fits, its time is ahead)."""
    if not can(role, Permission.COMPOSE):
        raise Forbidden(refusal(Permission.COMPOSE, "submit a post for review"))
    comment = check_comment(comment, required=False)
    post = get_post(session, workspace_id, post_id, lock=True)
    if post.status == PostStatus.IN_REVIEW.value:
        return post
    if post.status != PostStatus.DRAFT.value:
        raise _refused(post, "only a draft is submitted for review")
    check_texts(post.body, post.variants, post_targets(session, post.id))  # each target's own text, as approve
    check_wall_time(post.wall_date, post.wall_time, _zone(session, workspace_id), now, policy)
    outcome = post_lifecycle.submit(session, post, now=now, actor=actor, comment=comment)
    if not outcome.ok:
        raise _refused(post, "only a draft is submitted for review")
    post.updated_at = now
    record_step(session, post, kind=CommentKind.SUBMIT, actor=actor, body=comment, now=now)
    return post


def request_changes(session: Session, workspace_id: int, post_id: int, *, actor: Actor, role: Role | None,
                    now: datetime, comment, address: str | None = None) -> Post:
    """in_review → draft with a comment saying what should change; ``role`` None is an outside reviewer."""
    if role is not None and not can(role, Permission.REVIEW):
        raise Forbidden(refusal(Permission.REVIEW, "request changes"))
    comment = check_comment(comment, required=True)
    post = get_post(session, workspace_id, post_id, lock=True)
    outcome = post_lifecycle.request_changes(session, post, now=now, actor=actor, comment=comment)
    if not outcome.ok:
        raise _refused(post, "changes are requested of a post in review")
    record_step(session, post, kind=CommentKind.REQUEST_CHANGES, actor=actor, body=comment, now=now, address=address)
    return post


def add_comment(session: Session, workspace_id: int, post_id: int, *, actor: Actor, role: Role | None, body,
                now: datetime, address: str | None = None) -> PostComment:
    """A comment on the post's thread; ``role`` None is an outside reviewer."""
    if role is not None and not can(role, Permission.COMMENT):
        raise Forbidden(refusal(Permission.COMMENT, "comment"))
    text = check_comment(body, required=True)
    post = get_post(session, workspace_id, post_id)
    return record_step(session, post, kind=CommentKind.COMMENT, actor=actor, body=text, now=now, address=address)


def list_comments(session: Session, workspace_id: int, post_id: int) -> list[PostComment]:
    """The post's thread, oldest first."""
    get_post(session, workspace_id, post_id)
    return list(session.scalars(select(PostComment).where(PostComment.post_id == post_id).order_by(PostComment.id)))


# -- an edit after approval ------------------------------------------------------------------

GOES_OUT = ("text", "media", "variants", "thread", "first comment", "targets")


def what_goes_out(post: Post, channels: list[Channel]) -> tuple:
    """What a reviewer approved of ``post`` (sent to ``channels``): everything it sends, not when it sends it.

    Line breaks are compared as one kind: a browser sends a textarea's as CRLF, so a post written
    through the API and saved unchanged in the composer has not changed."""
    return (_lines(post.body), list(post.media or []), _lines(post.variants or None), _lines(post.thread or None),
            _lines(post.first_comment or None), frozenset(channel.id for channel in channels))


def _lines(value):
    if isinstance(value, str):
        return value.replace("\r\n", "\n")
    if isinstance(value, dict):
        return {key: _lines(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_lines(item) for item in value]
    return value


def changed_parts(before: tuple, after: tuple) -> list[str]:
    """The parts of :func:`what_goes_out` an edit changed, named as the answer names them."""
    return [name for name, old, new in zip(GOES_OUT, before, after) if old != new]


def return_to_review(session: Session, post: Post, parts: list[str], *, actor: Actor, now: datetime) -> bool:
    """approved → in_review when an edit changed ``parts`` of what it sends and the workspace requires review; the
    step goes into the post's thread. False (nothing moved) when review is off or nothing that goes out changed.

    The caller withdraws the post's queued rows in the same transaction (``update_post``)."""
    if not parts or post.status != PostStatus.APPROVED.value or not review_required(session, post.workspace_id):
        return False
    words = f"changed after it was approved ({', '.join(parts)}): back to review"
    outcome = post_lifecycle.return_to_review(session, post, now=now, actor=actor, reason=words)
    if not outcome.ok:
        raise _refused(post, "it cannot return to review")
    record_step(session, post, kind=CommentKind.SUBMIT, actor=actor, body=words[0].upper() + words[1:] + ".",
                now=now)
    return True


# -- expiry -----------------------------------------------------------------------------------


@dataclass
class ExpiryPass:
    expired: list[int]
    skipped: int = 0

    def summary(self) -> dict:
        return {"expired": len(self.expired), "posts": self.expired, "skipped": self.skipped}


def expire_overdue_posts(session: Session, *, now: datetime, actor: Actor) -> ExpiryPass:
    """Every post still in review whose time has passed becomes ``expired``, and its author is told.

    Idempotent: a post expires once (the move is guarded), and its notification is raised once
    per expiry (keyed by the post and its revision). A workspace whose zone is garbage is skipped,
    never a crash.
    """
    result = ExpiryPass(expired=[])
    rows = session.execute(
        select(Post, Workspace.timezone).join(Workspace, Workspace.id == Post.workspace_id)
        .where(Post.status == PostStatus.IN_REVIEW.value).order_by(Post.id)).all()
    for post, zone in rows:
        try:
            instant = resolve_post_time(post, zone).instant
        except InvalidTimezone:
            result.skipped += 1
            continue
        if instant > now:
            continue
        locked = get_post(session, post.workspace_id, post.id, lock=True)
        if locked.status != PostStatus.IN_REVIEW.value:
            continue
        if not post_lifecycle.expire(session, locked, now=now, actor=actor).ok:
            continue
        _notify_author(session, locked, now=now)
        result.expired.append(locked.id)
    return result


def _notify_author(session: Session, post: Post, *, now: datetime) -> None:
    author = session.get(User, post.created_by_id) if post.created_by_id else None
    who = author.email if author is not None else "its author"
    raise_notification(
        session, post.workspace_id, kind="post_expired", subject=f"post:{post.id}",
        title=f"Post #{post.id} expired in review ({who})",
        body=(f"For {who}: post #{post.id} was still waiting for review when its time "
              f"({post.wall_date.isoformat()} {post.wall_time.strftime('%H:%M')}) passed, so it was not sent. "
              "Give it a new time to return it to draft, then submit it again."),
        dedupe_key=f"post_expired:{post.id}:{post.revision}", now=now)


def _zone(session: Session, workspace_id: int) -> str | None:
    return session.scalar(select(Workspace.timezone).where(Workspace.id == workspace_id))
